"""row_looped's blocks on few long rows and on a reduced extent of two dims, under three timers.

    python -m benchmarks.row_looped_blocks

The evidence of schemes/row_looped.py's rules (docs/decisions/row-looped-blocks.md and
row-looped-pipelining.md): each case's `sum` is timed with the block the rules pick and with each
block of VARIANTS forced, as a share of a plain read of the same bytes (harness.read_ceiling)
under the timers of axis_reductions.py. Each forced variant is checked against torch first.
"""

from __future__ import annotations

import sys

import torch

from benchmarks.axis_reductions import TIMERS, sum_0_2, sum_last
from benchmarks.harness import check_against, header, nbytes, read_ceiling, report
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
CASES = [((rows, cols), dtype, -1) for rows, cols, dtype in LONG_ROWS] + [((64, 4096, 64), torch.float32, (0, 2))]
VARIANTS = {  # (block, warps) forced; blocks of 8192 columns pipeline their loop
    -1: (((1, 2048), 16), ((1, 2048), 8), ((1, 4096), 8), ((1, 4096), 16), ((1, 8192), 8)),
    (0, 2): (((2, 1024), 8), ((4, 512), 4), ((8, 256), 8), ((1, 2048), 16)),
}


def forced(fn, x, expected, block, warps):
    """A fresh copy of fn whose plans take `block` on `warps`, checked against `expected`."""
    scheme = get_scheme("row_looped")
    scheme.pick_block = lambda task_shape, m_dim, choices: block
    scheme.warps = lambda chosen: warps
    try:
        fresh = fn.remake()
        check_against(expected, fresh(x).float(), f"{block} on {warps} warps", 2e-2, 2e-1)
    finally:
        del scheme.pick_block, scheme.warps
    return fresh


def case_rows(shape, dtype, dims) -> list:
    x = torch.randn(shape, device="cuda", dtype=dtype)
    fn = sum_last if dims == -1 else sum_0_2
    expected = x.float().sum(dims)
    plan = fn.explain(x)
    calls = [(f"rules: {plan.block} on {plan.num_warps}", fn)]
    calls += [(f"{block} on {warps}", forced(fn, x, expected, block, warps)) for block, warps in VARIANTS[dims]]
    name = f"{'x'.join(map(str, shape))} {str(dtype)[6:]} sum{dims if dims != -1 else ''}"
    rows = []
    for timer, rate in TIMERS.items():
        plain = read_ceiling(x, rate)
        shares = " | ".join(f"{rate(nbytes(x), call, x) / plain:.2f}" for _, call in calls)
        rows.append(f"| {name} | {timer.split(',')[0]} | {plain:.0f} | {shares} |")
        print(rows[-1], flush=True)
    heading = ["| case | timer | plain read GB/s | " + " | ".join(label for label, _ in calls) + " |"]
    return heading + ["|---" * (3 + len(calls)) + "|"] + rows


def main() -> int:
    if not torch.cuda.is_available():
        print("row_looped_blocks needs a CUDA GPU", file=sys.stderr)
        return 2
    lines = []
    for case in CASES:
        lines += case_rows(*case) + [""]
    report(header() + "\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
