"""`python -m tritonwise demo`: a few payloads, checked against torch, with their generated files."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import StridedBuffer, pointwise_dynamic


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add_alpha(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(promotion_methods=[((0, 1), "DEFAULT"), ((0, 1), "DEFAULT")])
@triton.jit
def polar(abs, angle):
    return abs * tl.cos(angle), abs * tl.sin(angle)


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def copy(x):
    return x


def _flipped(a: torch.Tensor) -> StridedBuffer:
    """A view of `a` with dim 0 reversed: negative stride, offset at the last row."""
    stride0 = a.stride(0)
    return StridedBuffer(a, strides=(-stride0, *a.stride()[1:]), offset=(a.shape[0] - 1) * stride0)


def run_demo() -> int:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    where = torch.cuda.get_device_name() if device == "cuda" else "CPU (Triton interpreter)"
    print(f"tritonwise demo on {where}\n")
    x = torch.randn(64, 32, device=device)
    y = torch.randn(32, device=device)
    r = torch.rand(1000, device=device)
    theta = torch.randn(1000, device=device)
    flip = copy.instantiate(x.ndim)
    # (label, function, arguments, given outputs, torch's result)
    cases = [
        ("add_alpha(x, y, 0.5)  (row broadcast)", add_alpha, (x, y, 0.5), {}, lambda: x + y * 0.5),
        ("polar(r, theta)       (two outputs)", polar, (r, theta), {}, lambda: (r * theta.cos(), r * theta.sin())),
        (
            "flip(x, 0)            (StridedBuffer)",
            flip,
            (_flipped(x),),
            {"out0": torch.empty_like(x)},
            lambda: x.flip(0),
        ),
        # a contiguous output given for x.t(): the kernel reads columns and writes rows
        ("copy(x.t(), out0=...) (transpose)", copy, (x.t(),), {"out0": x.new_empty(32, 64)}, x.t().contiguous),
    ]
    failures = sum(not _run_case(*case) for case in cases)
    print("\nall match torch" if not failures else f"\n{failures} case(s) differ from torch")
    return 1 if failures else 0


def _run_case(label: str, fn, args: tuple, outs: dict, reference) -> bool:
    """Run one case, compare it with torch and print the outcome, the scheme and the generated file."""
    got, want = fn(*args, **outs), reference()
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    ok = all(torch.allclose(g, w, rtol=1e-5, atol=1e-6) and g.dtype == w.dtype for g, w in zip(got, want))
    ok = ok and all(o is g for o, g in zip(outs.values(), got))
    explanation = fn.explain(*args, **outs)
    print(f"{'ok  ' if ok else 'FAIL'} {label}  scheme {explanation.scheme}\n     generated: {explanation.path}")
    return ok
