"""The row schemes' blocks, each case's block as the rules pick it and forced, under three timers.

    python -m benchmarks.row_blocks [--scheme row_looped | row_persistent] [--group "many rows"]

The evidence of the rules in schemes/row_looped.py (few long rows, a reduced extent of two dims,
many rows of one block and a rest: docs/decisions/row-looped-blocks.md and row-looped-pipelining.md) and schemes/row_persistent.py
(rows one block covers: docs/decisions/row-persistent-widths.md). Each case's `sum` is timed with
the block the rules pick and with each block of VARIANTS forced, as a share of a plain read of the
same bytes (harness.read_ceiling) under the timers of axis_reductions.py. Each forced variant is
checked against torch first.
"""

from __future__ import annotations

import argparse
import sys

import torch

from benchmarks.axis_reductions import TIMERS, sum_0_2, sum_last
from benchmarks.harness import block_forced, check_against, header, nbytes, read_ceiling, report
from tritonwise.schemes import get_scheme

# (rows, columns, dtype) of few long rows summed over the last dim, then the (0, 2) sum
LONG_ROWS = [
    (64, 16384, torch.float32),
    (128, 16384, torch.float32),
    (256, 16384, torch.float32),
    (512, 16384, torch.float32),
    (128, 16384, torch.bfloat16),
    (256, 16384, torch.bfloat16),
    (1024, 16384, torch.bfloat16),
    (128, 32768, torch.bfloat16),
    (100, 40000, torch.bfloat16),
    (64, 65536, torch.bfloat16),
    (128, 65536, torch.bfloat16),
    (64, 65536, torch.float32),
]
# rows one row_persistent block covers, summed over the last dim
PERSISTENT_ROWS = [
    (16384, 128, torch.bfloat16),
    (16384, 128, torch.float32),
    (65536, 64, torch.bfloat16),
    (8192, 256, torch.float32),
    (4096, 1024, torch.float32),
    (32768, 512, torch.bfloat16),
    (262144, 16, torch.float32),
]
# sums over dims (0, 2), whose reduced extent is two dims: rows of 64 runs of 64, and others
MULTI_DIM_ROWS = [(64, 4096, 64), (128, 2048, 16), (16, 2048, 256), (8, 4096, 512), (32, 4096, 128), (4, 4096, 1024)]
# many rows of one to two blocks of 1024 and a rest, summed over the last dim (SPARSE_ROWS_BLOCK)
MANY_ROWS = [
    (8192, 1324, torch.float32),
    (16384, 1280, torch.bfloat16),
    (16384, 1400, torch.bfloat16),
    (16384, 1536, torch.bfloat16),
    (8192, 1200, torch.float32),
    (8192, 1536, torch.float32),
    (16384, 1025, torch.float32),
    (8192, 1800, torch.float32),
    (8192, 2300, torch.float32),
]
CASES = {  # scheme -> (shape, dtype, dims, the VARIANTS forced) of each case
    "row_looped": [((rows, cols), dtype, -1, "long rows") for rows, cols, dtype in LONG_ROWS]
    + [(shape, torch.float32, (0, 2), "two reduced dims") for shape in MULTI_DIM_ROWS]
    + [((rows, cols), dtype, -1, "many rows") for rows, cols, dtype in MANY_ROWS],
    "row_persistent": [((rows, cols), dtype, -1, "rows one block covers") for rows, cols, dtype in PERSISTENT_ROWS],
}
VARIANTS = {  # -> (block, warps) forced; row_looped's blocks of 8192 columns pipeline their loop
    "long rows": (((1, 2048), 16), ((1, 2048), 8), ((1, 4096), 8), ((1, 4096), 16), ((1, 8192), 8)),
    "two reduced dims": (
        ((2, 1024), 8), ((4, 512), 4), ((4, 512), 1), ((8, 256), 8), ((8, 256), 4), ((16, 128), 8), ((1, 2048), 16),
    ),
    "many rows": (((2, 1024), 8), ((4, 512), 8), ((4, 512), 4)),
    # blocks of 2048 and 4096 elements on 8 warps, and of 1024 on 2 (the rules' is 1024 on 4); the
    # rows a block holds follow from the case's width
    "rows one block covers": ((2048, 8), (4096, 8), (1024, 2)),
}


def forced(fn, x, expected, scheme_name, block, warps):
    """A fresh copy of fn whose plans take `block` on `warps` in scheme `scheme_name`, checked against `expected`."""
    with block_forced(get_scheme(scheme_name), block, warps):
        fresh = fn.remake()
        check_against(expected, fresh(x).float(), f"{block} on {warps} warps", 2e-2, 2e-1)
    return fresh


def case_rows(scheme: str, shape, dtype, dims, group) -> list:
    x = torch.randn(shape, device="cuda", dtype=dtype)
    fn = sum_last if dims == -1 else sum_0_2
    expected = x.float().sum(dims)
    plan = fn.explain(x)
    assert plan.scheme == scheme, (shape, plan.scheme)
    variants = [(_block(v, shape), warps) for v, warps in VARIANTS[group]]
    calls = [(f"rules: {plan.block} on {plan.num_warps}", fn)]
    calls += [(f"{block} on {warps}", forced(fn, x, expected, scheme, block, warps)) for block, warps in variants]
    name = f"{'x'.join(map(str, shape))} {str(dtype)[6:]} sum{dims if dims != -1 else ''}"
    rows = []
    for timer, rate in TIMERS.items():
        plain = read_ceiling(x, rate)
        shares = " | ".join(f"{rate(nbytes(x), call, x) / plain:.2f}" for _, call in calls)
        rows.append(f"| {name} | {timer.split(',')[0]} | {plain:.0f} | {shares} |")
        print(rows[-1], flush=True)
    heading = ["| case | timer | plain read GB/s | " + " | ".join(label for label, _ in calls) + " |"]
    return heading + ["|---" * (3 + len(calls)) + "|"] + rows


def _block(variant, shape) -> tuple:
    """A forced block: as given, or for an area (row_persistent), the rows of that many elements
    at the case's width."""
    return variant if isinstance(variant, tuple) else (max(1, variant // shape[-1]), shape[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheme", default="row_looped", choices=sorted(CASES))
    parser.add_argument("--group", choices=sorted(VARIANTS), help="only the scheme's cases of this group")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("row_blocks needs a CUDA GPU", file=sys.stderr)
        return 2
    lines = []
    for case in CASES[args.scheme]:
        if args.group in (None, case[-1]):
            lines += case_rows(args.scheme, *case) + [""]
    report(header() + "\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
