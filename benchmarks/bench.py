"""Bandwidth benchmark: tritonwise vs torch eager vs torch.compile, one GPU, one run.

    python -m benchmarks.bench [--out FILE] [--no-compile] [--only NAME]
    python -m benchmarks.bench --device cpu      # every case checked on small inputs, nothing timed

Every case is checked against torch before anything is timed; a wrong answer stops the run
with a non-zero exit. GB/s counts the bytes that must move (each input read once, each output
written once) over the median time of `triton.testing.do_bench`. The copy ceiling is `clone`
of 1 GiB.
"""

from __future__ import annotations

import argparse
import math
import sys

import torch

from benchmarks.harness import (
    Case,
    bandwidth_table,
    copy_ceiling,
    gbps,
    header,
    nbytes,
    report,
    smoke_arguments,
    smoke_run,
    torch_compiled,
)
from benchmarks import payloads
from tritonwise import StridedBuffer

# (elements, square side, transposes (rows, cols), rank-5 shape) at full size and for a smoke run
SIZES = {
    False: (2**26, 8192, ((8192, 8192), (8191, 8193), (4096, 16384)), (32, 64, 16, 64, 16)),
    True: (2**10 + 3, 32, ((32, 32), (31, 33), (16, 64)), (2, 4, 3, 4, 2)),
}


def flip0_view(x):
    """x flipped along dim 0, as a StridedBuffer (a negative stride)."""
    s0 = x.stride(0)
    return StridedBuffer(x, strides=(-s0, *x.stride()[1:]), offset=(x.shape[0] - 1) * s0)


def cases(device: str = "cuda", small: bool = False, fns=payloads) -> list:
    """The cases, on full-size or `small` inputs, of the functions in `fns` (payloads.py's
    module-level ones, or a fresh `payloads.functions()`)."""
    add, copy, polar, squared_error_sum = fns.add, fns.copy, fns.polar, fns.squared_error_sum
    n, side, transposes, rank5 = SIZES[small]
    size = f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)
    a, b = torch.randn(n, device=device), torch.randn(n, device=device)
    h = torch.randn(n, device=device, dtype=torch.float16)
    bf1, bf2 = (torch.randn(n, device=device, dtype=torch.bfloat16) for _ in range(2))
    odd1, odd2 = (torch.randn(n | 1, device=device, dtype=torch.bfloat16) for _ in range(2))
    flipped_h, out_h = flip0_view(h), torch.empty_like(h)
    m1, m2 = torch.randn(side, side, device=device), torch.randn(side, side, device=device)
    row = torch.randn(side, device=device)
    out_sq = torch.empty(side, side, device=device)
    flip = copy.instantiate(2)
    flipped = flip0_view(m1)
    result = [
        Case(f"add fp32 contiguous {size}", nbytes(a, b, a), lambda: add(a, b), lambda: a + b),
        Case(f"add fp32 + row broadcast {side}^2", nbytes(m1, row, m1), lambda: add(m1, row), lambda: m1 + row),
        Case(f"add fp32, one transposed {side}^2", nbytes(m1, m2, m1), lambda: add(m1, m2.t()), lambda: m1 + m2.t()),
    ]
    for rows, cols in transposes:
        x = torch.randn(cols, rows, device=device)
        out = torch.empty(rows, cols, device=device)
        result.append(
            Case(
                f"transpose copy {rows}x{cols}",
                2 * nbytes(x),
                lambda x=x, out=out: copy(x.t(), out0=out),
                lambda x=x: x.t().contiguous(),
                writes=(out,),
            )
        )
    p5 = torch.randn(*rank5, device=device)
    perm = (0, 2, 4, 1, 3)
    out5 = torch.empty(p5.permute(perm).shape, device=device)
    result += [
        Case(f"add fp16 + fp32 {size}", nbytes(h, a, a), lambda: add(h, a), lambda: h + a),
        Case(f"add bf16 {size}", nbytes(bf1, bf2, bf1), lambda: add(bf1, bf2), lambda: bf1 + bf2),
        Case(f"add bf16, odd length {n | 1}", nbytes(odd1, odd2, odd1), lambda: add(odd1, odd2), lambda: odd1 + odd2),
        Case(
            f"flip fp16 1-D (StridedBuffer) {size}",
            2 * nbytes(h),
            lambda: copy(flipped_h, out0=out_h),
            lambda: torch.flip(h, [0]),
            writes=(out_h,),
        ),
        Case(
            f"flip dim 0 (StridedBuffer) {side}^2",
            2 * nbytes(m1),
            lambda: flip(flipped, out0=out_sq),
            lambda: torch.flip(m1, [0]),
            writes=(out_sq,),
        ),
        Case(
            f"polar, two outputs {size}",
            2 * nbytes(a, b),
            lambda: polar(a, b),
            lambda: torch.polar(a, b),
            lambda: torch.view_as_real(torch.polar(a, b)).unbind(-1),
        ),
        Case(
            f"sum((x-y)**2) fused, {size} (bytes read)",
            nbytes(a, b),
            lambda: squared_error_sum(a, b),
            lambda: ((a - b) ** 2).sum(),
        ),
        Case(
            "permuted copy rank 5 (0,2,4,1,3)",
            2 * nbytes(p5),
            lambda: copy(p5.permute(perm), out0=out5),
            lambda: p5.permute(perm).contiguous(),
            writes=(out5,),
        ),
    ]
    return result


def compiled_gbps(case: Case) -> float:
    """torch.compile's GB/s of the case's eager expression (NaN, reported, should it fail)."""
    try:
        fn = torch_compiled(case.eager)
        fn()
        return gbps(case.nbytes, fn)
    except Exception as e:  # report, keep benchmarking
        print(f"torch.compile failed on {case.name}: {type(e).__name__}: {e}", file=sys.stderr)
        return math.nan


def run(chosen: list, use_compile: bool) -> tuple:
    ceiling = copy_ceiling()
    rows = []
    for case in chosen:
        ours = gbps(case.nbytes, case.ours)
        eager = gbps(case.nbytes, case.eager)
        compiled = compiled_gbps(case) if use_compile else math.nan
        rows.append((case.name, ours, eager, compiled, ours / ceiling))
        print(f"{case.name:<36} ours {ours:7.0f}  eager {eager:7.0f}  compile {compiled:7.0f}", flush=True)
    return ceiling, rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the table (markdown) here")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--no-compile", action="store_true")
    smoke_arguments(parser)
    args = parser.parse_args(argv)
    smoke = smoke_run(args, "bench")
    if smoke is None:
        return 2
    chosen = [case for case in cases(args.device, smoke) if args.only in case.name]
    for case in chosen:
        case.check()
    print(f"{len(chosen)} cases give torch's answer", flush=True)
    if smoke:
        return 0
    ceiling, rows = run(chosen, not args.no_compile)
    report(f"{header()}\n\n{bandwidth_table(ceiling, rows)}\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
