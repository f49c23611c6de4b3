"""Fusion under torch.compile: tritonwise traced as torch ops, against torch and the opaque op (issue 30).

    python -m benchmarks.fusion                       # CUDA: checks, then timings (a few minutes)
    python -m benchmarks.fusion --device cpu --smoke  # CPU: checks and kernel counts, small sizes

Part 1, `g(x) = op(x) * 2 + 1` with op = SiLU, compiled with `torch.compile(fullgraph=True)`:
- torch: `F.silu(x) * 2 + 1`;
- traced: the tritonwise function, which dynamo traces as its payload's torch expression;
- torch op: the same function registered with `as_torch_op`, which Inductor decomposes into
  the same torch expression;
- opaque: that op compiled with TRITONWISE_OPAQUE_UNDER_COMPILE=1 (our kernel as an extern
  call, Inductor's kernel around it);
- eager rows: torch's and tritonwise's eager calls, for reference.
Columns: kernels = the kernels Inductor generated plus calls left to our op (from the code
Inductor wrote, torch._inductor.utils.run_and_get_code); GB/s = x read once and the result
written once over the median time of triton.testing.do_bench (CPU: the best of 5 wall-clock runs).

Part 2, an MLP block step (forward and backward): Linear, tanh-GELU, Linear, SiLU, then a loss
that is a fused sum of squared errors (a tritonwise "sum" reduction), divided by the count. The
same four ways (torch functions; tritonwise traced; its torch ops, decomposed; the same ops
kept opaque). Columns: kernels
Inductor generated for forward and backward (plus opaque calls), step time in ms.

Every compiled result (values and gradients) is checked against torch before anything is timed;
a failed check prints the error and leaves the row untimed. Exit status 0 when every check passed.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tritonwise import pointwise_dynamic

OPAQUE = "TRITONWISE_OPAQUE_UNDER_COMPILE"


@triton.jit
def _silu(x):
    return x / (1.0 + tl.exp(-x))


@triton.jit
def _gelu_tanh(x):
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    e = tl.exp(-2.0 * tl.abs(inner))
    t = (1.0 - e) / (1.0 + e)
    return 0.5 * x * (1.0 + tl.where(inner < 0, -t, t))


@triton.jit
def _squared_error(y, target):
    d = y - target
    return d * d


def _functions() -> dict:
    """Per variant: silu, gelu and the fused loss; the torch op and opaque ones as custom ops."""
    made = {
        name: {
            "silu": pointwise_dynamic(_silu, promotion_methods=[(0, "DEFAULT")]),
            "gelu": pointwise_dynamic(_gelu_tanh, promotion_methods=[(0, "DEFAULT")]),
            "loss": pointwise_dynamic(_squared_error, promotion_methods=[(0, 1, "DEFAULT")], reductions=["sum"]),
        }
        for name in ("traced", "torch op", "opaque")
    }
    for variant, namespace in (("torch op", "tw_fusion_op"), ("opaque", "tw_fusion")):  # an op decomposed once stays so
        made[variant] = {k: f.as_torch_op(f"{namespace}::{k}") for k, f in made[variant].items()}
    made["torch"] = {
        "silu": F.silu,
        "gelu": lambda x: F.gelu(x, approximate="tanh"),
        "loss": lambda y, t: ((y - t) * (y - t)).sum(),
    }
    return made


def compiled_run(variant: str, fn, *args):
    """fn compiled and run once; (result, kernel count, opaque calls). Opaque variants compile
    with our kernels kept (the environment variable is read while tracing)."""
    import torch._functorch.config
    import torch._inductor.config
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    previous = os.environ.get(OPAQUE)
    os.environ[OPAQUE] = "1" if variant == "opaque" else "0"
    caches_off = (  # their keys see an op, not whether it was decomposed: no stale code across variants
        torch._inductor.config.patch(fx_graph_cache=False),
        torch._functorch.config.patch(enable_autograd_cache=False),
    )
    try:
        with caches_off[0], caches_off[1]:
            result, codes = run_and_get_code(fn, *args)
    finally:
        os.environ.pop(OPAQUE) if previous is None else os.environ.__setitem__(OPAQUE, previous)
    code = "\n".join(codes)
    kernels = len(re.findall(r"^(\w+) = async_compile\.\w+\(", code, flags=re.MULTILINE))
    return result, kernels, len(re.findall(r"= torch\.ops\.tw_fusion(_op)?\.\w+\.default\(", code))


def timed(fn, *args, device: str) -> float:
    """Median ms of fn(*args) (CPU: the best of 5, a smoke figure on a shared machine)."""
    if device == "cuda":
        return triton.testing.do_bench(lambda: fn(*args))
    times = []
    for _ in range(5):
        start = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - start) * 1e3)
    return min(times)


def part1(made: dict, n: int, device: str) -> bool:
    x = torch.randn(n, device=device)
    expected = F.silu(x) * 2 + 1
    gbs = lambda ms: 2 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9  # noqa: E731
    print(f"Part 1: op(x) * 2 + 1, {n} float32 elements ({device})")
    print(f"{'variant':<18} {'kernels':>8} {'opaque':>7} {'GB/s':>9}")
    ok = True
    for variant in ("torch", "traced", "torch op", "opaque"):
        op = made[variant]["silu"]
        g = torch.compile(lambda x, op=op: op(x) * 2 + 1, fullgraph=True)
        try:
            result, kernels, opaque = compiled_run(variant, g, x)
            torch.testing.assert_close(result, expected, rtol=1e-5, atol=1e-5)
        except Exception as e:  # the row says why; no timing
            print(f"{variant:<18} check failed: {type(e).__name__}: {str(e).splitlines()[0]}")
            ok = False
            continue
        print(f"{variant:<18} {kernels:>8} {opaque:>7} {gbs(timed(g, x, device=device)):>9.1f}")
    eager_rows = (("torch eager", F.silu), ("tritonwise eager", made["traced"]["silu"]))
    for name, op in eager_rows:
        eager = lambda x, op=op: op(x) * 2 + 1  # noqa: E731
        torch.testing.assert_close(eager(x), expected, rtol=1e-5, atol=1e-5)
        print(f"{name:<18} {'-':>8} {'-':>7} {gbs(timed(eager, x, device=device)):>9.1f}")
    return ok


class Block(torch.nn.Module):
    def __init__(self, width: int, functions: dict):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(width, 4 * width), torch.nn.Linear(4 * width, width)
        self.f = functions

    def forward(self, x, target):
        y = self.f["silu"](self.fc2(self.f["gelu"](self.fc1(x))))
        return self.f["loss"](y, target) / y.numel()


def part2(made: dict, rows: int, width: int, device: str) -> bool:
    torch.manual_seed(0)
    x, target = torch.randn(rows, width, device=device), torch.randn(rows, width, device=device)
    blocks = {v: Block(width, made[v]).to(device) for v in ("torch", "traced", "torch op", "opaque")}
    for b in blocks.values():
        b.load_state_dict(blocks["torch"].state_dict())
    reference = blocks["torch"](x, target)
    reference.backward()
    expected = [p.grad.clone() for p in blocks["torch"].parameters()]
    print(f"\nPart 2: MLP block step, x {rows}x{width} float32 ({device})")
    print(f"{'variant':<18} {'kernels':>8} {'opaque':>7} {'step ms':>9}")
    ok = True
    for variant, block in blocks.items():
        forward = torch.compile(block, fullgraph=True)

        def step(forward=forward, block=block):
            block.zero_grad(set_to_none=True)
            loss = forward(x, target)
            loss.backward()
            return loss

        try:
            loss, kernels, opaque = compiled_run(variant, step)
            torch.testing.assert_close(loss, reference, rtol=1e-4, atol=1e-5)
            for got, want in zip([p.grad for p in block.parameters()], expected, strict=True):
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        except Exception as e:
            print(f"{variant:<18} check failed: {type(e).__name__}: {str(e).splitlines()[0]}")
            print("\n".join("    " + line for line in str(e).splitlines()[1:16]))
            ok = False
            continue
        print(f"{variant:<18} {kernels:>8} {opaque:>7} {timed(step, device=device):>9.3f}")
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--smoke", action="store_true", help="small sizes (always on CPU)")
    options = parser.parse_args(argv)
    if options.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: run with --device cpu --smoke")
        return 2
    smoke = options.smoke or options.device == "cpu"
    made = _functions()
    ok = part1(made, 4096 if smoke else 2**26, options.device)
    ok = part2(made, *((64, 32) if smoke else (8192, 1024)), options.device) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
