"""Training with derived backwards (GPU): an MLP step, and the backward kernels' bandwidth.

Part 1: a 3-layer MLP whose activations (SiLU, tanh-GELU) and loss (a fused sum of squared
errors) are tritonwise payloads trains for 20 SGD steps beside the same MLP written with torch
functions, from the same initial weights and data; the two loss curves must agree.

Part 2: the backward of each expression on one large tensor, in GB/s of its minimal traffic
(every input read once, every gradient written once): tritonwise's derived backward kernel
alone, tritonwise's whole backward through autograd, torch eager's autograd backward of the
same expression written with torch ops, and torch.compile's backward of it.

Both parts check against torch before anything is timed (the loss curves; each backward's
gradient); a wrong answer stops the run with a non-zero exit.

    python -m benchmarks.train_mlp            # about 30-50 s on an H100, torch.compile included
    python -m benchmarks.train_mlp --no-compile
"""

from __future__ import annotations

import argparse
import math
import sys

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.testing import do_bench

from benchmarks.harness import check_against, host_only_us
from tritonwise import pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def gelu_tanh(x):
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + libdevice.tanh(inner))


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")], reductions=["sum"])
@triton.jit
def squared_error_sum(x, target):
    d = x - target
    return d * d


DEVICE, DIMS, BATCH = "cuda", (512, 2048, 2048, 256), 1024

TORCH = {
    "silu": lambda x: x * torch.sigmoid(x),
    "gelu_tanh": lambda x: 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))),
    "squared_error_sum": lambda x, t: ((x - t) * (x - t)).sum(),
}
TRITONWISE = {"silu": silu, "gelu_tanh": gelu_tanh, "squared_error_sum": squared_error_sum}


def mlp_losses(act1, act2, loss_fn, steps: int, seed: int = 0) -> list:
    torch.manual_seed(seed)
    weights = [(torch.randn(o, i, device=DEVICE) / math.sqrt(i)).requires_grad_() for i, o in zip(DIMS, DIMS[1:])]
    biases = [torch.zeros(o, device=DEVICE, requires_grad=True) for o in DIMS[1:]]
    data = torch.randn(BATCH, DIMS[0], device=DEVICE)
    target = torch.randn(BATCH, DIMS[-1], device=DEVICE)
    losses = []
    for _ in range(steps):
        h = act1(torch.nn.functional.linear(data, weights[0], biases[0]))
        h = act2(torch.nn.functional.linear(h, weights[1], biases[1]))
        out = torch.nn.functional.linear(h, weights[2], biases[2])
        loss = loss_fn(out, target) / out.numel()
        for p in weights + biases:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in weights + biases:
                p -= 0.05 * p.grad
        losses.append(loss.item())
    return losses


def check_training(steps: int = 20) -> None:
    ours = mlp_losses(silu, gelu_tanh, squared_error_sum, steps)
    ref = mlp_losses(TORCH["silu"], TORCH["gelu_tanh"], TORCH["squared_error_sum"], steps)
    worst = max(abs(a - b) / abs(b) for a, b in zip(ours, ref))
    print(f"MLP, {steps} SGD steps: loss {ref[0]:.5f} -> {ref[-1]:.5f} (torch), {ours[0]:.5f} -> {ours[-1]:.5f} "
          f"(tritonwise); largest relative difference {worst:.2e}")
    for k in (0, steps // 2, steps - 1):
        print(f"  step {k:2d}: torch {ref[k]:.6f}  tritonwise {ours[k]:.6f}")
    check_against(torch.tensor(ref), torch.tensor(ours), f"MLP loss curve, {steps} SGD steps", rtol=1e-4, atol=0)


def backward_timer(forward, inputs: list, grad):
    """A function running only the backward of `forward(*inputs)` (the graph is kept)."""
    out = forward(*inputs)
    return lambda: torch.autograd.grad(out, inputs[:1], grad, retain_graph=True)


def bandwidth_rows(numel: int, dtype: torch.dtype, compile_too: bool) -> list:
    rows = []
    for name in ("silu", "gelu_tanh", "squared_error_sum"):
        x = torch.randn(numel, device="cuda", dtype=dtype, requires_grad=True)
        inputs = [x] if name != "squared_error_sum" else [x, torch.randn(numel, device="cuda", dtype=dtype)]
        reduced = name == "squared_error_sum"
        grad = torch.ones((), device="cuda", dtype=dtype) if reduced else torch.randn_like(x)
        # bytes: each input read once, x's gradient written once, the output gradient read unless 0-d
        traffic = (len(inputs) + 1 + (0 if reduced else 1)) * numel * x.element_size()
        fn = TRITONWISE[name]
        kernel = fn.backward_functions().for_inputs((0,)).function
        plain = [t.detach() for t in inputs]
        candidates = {
            "tritonwise kernel": lambda: kernel(*plain, grad),
            "tritonwise autograd": backward_timer(fn, inputs, grad),
            "eager autograd": backward_timer(TORCH[name], inputs, grad),
        }
        if compile_too:
            candidates["torch.compile"] = backward_timer(torch.compile(TORCH[name]), inputs, grad)
        check_gradients(name, inputs, grad, candidates)
        for label, run in candidates.items():
            ms = do_bench(run, warmup=10, rep=50)
            rows.append((name, label, ms * 1e3, traffic / ms / 1e6))
    return rows


def check_gradients(name: str, inputs: list, grad, candidates: dict) -> None:
    """tritonwise's gradients of x against torch's autograd of the expression in fp32 (rounded
    to x's dtype: a 16-bit result may differ from it by a rounding or two of every step)."""
    wide = [t.detach().float().requires_grad_(t.requires_grad) for t in inputs]
    (expected,) = torch.autograd.grad(TORCH[name](*wide), wide[:1], grad.float())
    tol = 1e-4 if inputs[0].dtype == torch.float32 else 5e-2
    for label, run in candidates.items():
        if label.startswith("tritonwise"):
            got = run()
            got = got[0] if isinstance(got, tuple) else got
            check_against(expected.to(got.dtype), got, f"{name} backward, {label}", rtol=tol, atol=tol)


def recording_overhead_rows() -> list:
    """Host µs per forward call of a small tensor: plain, and recording for autograd."""
    x = torch.randn(1024, device="cuda")
    w = x.clone().requires_grad_()
    calls = {
        "tritonwise silu, no grad": lambda: silu(x),
        "tritonwise silu, recording": lambda: silu(w),
        "torch silu, no grad": lambda: torch.nn.functional.silu(x),
        "torch silu, recording": lambda: torch.nn.functional.silu(w),
    }
    return [(label, host_only_us(call)) for label, call in calls.items()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numel", type=int, default=1 << 26)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("train_mlp needs a CUDA GPU", file=sys.stderr)
        return 2
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__)
    check_training()
    dtype = getattr(torch, args.dtype)
    print(f"\nbackward of one expression, {args.numel} elements of {args.dtype}:")
    print("| expression | backward | µs | GB/s |\n|---|---|---|---|")
    for name, label, us, gbs in bandwidth_rows(args.numel, dtype, not args.no_compile):
        print(f"| {name} | {label} | {us:.1f} | {gbs:.0f} |")
    print("\nhost µs per forward call, 1024 elements:")
    for label, us in recording_overhead_rows():
        print(f"  {label:<28} {us:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
