"""The host cost of a forward call that autograd records: tritonwise against torch, with floors.

    python -m benchmarks.autograd_recording [--profile N] [--layers]

Each row times back-to-back calls on a 1024-element fp32 tensor that requires grad (the GPU work
is about 2 µs, so the host dominates), the median of 9 interleaved rounds:
- torch's own `F.silu(x)`: the anchor;
- a tritonwise function of the silu payload: the whole call (after the first, which autograd.call
  records through Python and which caches a RecordingPlan for the signature, the C hit path
  launches the cached kernel and records one C++ node, runtime/recording.h), and the same through
  `tritonwise.ops.silu` (which checks its argument in Python first);
- the Python recording alone: `autograd.call` (routing's target) with the C recording bypassed;
- two floors of any library that records through a Python `torch.autograd.Function`: its
  `apply` around tritonwise's cached call on the detached tensor, and around torch's own silu.
Every row is checked against torch first, and the whole call's node must be the C++ one. The
ATen helpers are built before the first launch (`TRITONWISE_ATEN=wait`): without them C records
nothing. `--profile N` prints cProfile's heaviest functions
over N tritonwise calls. `--layers` times the recorded call one layer at a time, from an
`autograd.Function` whose forward only runs the cached call up to the whole call, each row
adding one step of tritonwise's path (features/autograd.py, features/routing.py, function.py).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

os.environ.setdefault("TRITONWISE_ATEN", "wait")  # read when the first plan launches
from benchmarks.harness import WrongAnswer, check_against, median_us, report  # noqa: E402
from tritonwise import ops, pointwise_dynamic  # noqa: E402
from tritonwise.features import autograd, routing  # noqa: E402


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def silu(x):
    return x / (1.0 + tl.exp(-x))


class _AroundTritonwise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return silu(x.detach())

    @staticmethod
    def backward(ctx, grad):
        return grad


class _AroundTorch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return F.silu(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


def rows(x) -> list:
    return [
        ("torch F.silu(x)", lambda: F.silu(x)),
        ("tritonwise silu(x)", lambda: silu(x)),
        ("tritonwise.ops.silu(x)", lambda: ops.silu(x)),
        ("tritonwise silu(x) recorded through Python (autograd.call)", lambda: autograd.call(silu, (x,), (), False)),
        ("floor: autograd.Function around tritonwise's cached call", lambda: _AroundTritonwise.apply(x)),
        ("floor: autograd.Function around torch's silu", lambda: _AroundTorch.apply(x)),
        ("tritonwise silu(x), no grad (the cached call)", lambda: silu(x.detach())),
    ]


def _function_of(forward):
    """An autograd.Function of tritonwise's signature (fn, whether any argument is a scalar, plain
    arguments, *arguments) whose forward is `forward`."""

    class Layer(torch.autograd.Function):
        @staticmethod
        def forward(ctx, fn, scalars, plain, *args):
            return forward(ctx, fn, plain)

        @staticmethod
        def backward(ctx, *grads):
            return (None, None, None, *grads)

    return Layer


def _saving(ctx, fn, plain):
    result = fn(*plain)
    ctx.save_for_backward(*plain)
    return result


def layers(x) -> list:
    """(step, call) from the bare autograd.Function to the whole recorded call."""
    plain = (x.detach(),)
    scalars = silu.backward_functions().check_call((x,), ())
    bare, saving = _function_of(lambda ctx, fn, p: fn(*p)), _function_of(_saving)
    return [
        ("torch F.silu(x)", lambda: F.silu(x)),
        ("the cached call, no grad", lambda: silu(plain[0])),
        ("autograd.Function whose forward is the cached call", lambda: bare.apply(silu, scalars, plain, x)),
        ("  + save_for_backward", lambda: saving.apply(silu, scalars, plain, x)),
        ("tritonwise's autograd.Function (autograd._Record)", lambda: autograd._Record.apply(silu, scalars, plain, x)),
        ("  + autograd.call: detach, grad mode, the recording's lookup", lambda: autograd.call(silu, (x,), (), False)),
        ("  + routing.route", lambda: routing.route(silu, (x,), ())),
        ("  + the Python path of a missed call (function._call_missed)", lambda: silu._call_missed((x,), {}, None)),
        ("silu(x): the whole call (launched and recorded in C)", lambda: silu(x)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--out")
    parser.add_argument("--layers", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("autograd_recording needs a CUDA GPU", file=sys.stderr)
        return 2
    x = torch.randn(1024, device="cuda", requires_grad=True)
    chosen = rows(x)
    for name, call in chosen:
        got = call()
        check_against(F.silu(x).detach(), got.detach(), name)
        if name.startswith(("tritonwise silu(x)", "tritonwise.ops.silu(x)")) and "no grad" not in name:
            x.grad = None
            got.sum().backward()  # the backward is built once, outside the timing
            check_against(torch.autograd.grad(F.silu(x).sum(), x)[0], x.grad, "tritonwise silu's gradient")
    if silu(x).grad_fn.name() != "TritonwiseBackward":
        raise WrongAnswer("tritonwise silu(x) was not recorded in C (are the ATen helpers built?)")
    times = median_us([call for _, call in chosen])
    anchor = times[0]
    lines = ["| forward call, 1024 fp32, requires grad | µs/call | / torch |", "|---|---|---|"]
    lines += [f"| {name} | {t:.1f} | {t / anchor:.2f}x |" for (name, _), t in zip(chosen, times)]
    if args.layers:
        steps = layers(x)
        lines += ["", "| layer | µs/call |", "|---|---|"]
        lines += [f"| {name} | {t:.2f} |" for (name, _), t in zip(steps, median_us([call for _, call in steps]))]
    report("\n".join(lines) + "\n", args.out)
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.profile):
            silu(x)
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
        print(text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
