"""Column sums whose tile the element size decides (GPU): column_looped's tile as tritonwise picks
it against the other wide tile (128 kept elements where the rule took 64, 64 where it took 128),
torch eager and torch.compile beside; GB/s read under the timers of axis_reductions.py.

    python -m benchmarks.column_tiles [--rounds 3]
    python -m benchmarks.column_tiles --device cpu   # both tiles checked on small inputs, nothing timed

The widest tile (128 kept elements) makes fewer programs; where it makes 128 to 191 of them, a
tile of 2-byte elements halves to 64 wide (TWO_BYTE_MIN_PROGRAMS), 4-byte ones keep it. The cases
are column sums of row-major matrices of 16384 to 32768 columns, whole, and of 512 and 1024
columns, split into parts (each part's tiles count as programs too).
docs/decisions/column-looped-tile.md reads the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import torch

from benchmarks.harness import (
    block_forced,
    header,
    inputs_or_exit,
    positive_int,
    report,
    smoke_arguments,
    torch_compiled,
)
from benchmarks.split_reductions import planned_sum
from tritonwise.schemes import get_scheme
from tritonwise.schemes.column_looped import COLUMN_BLOCK_M

WIDEST, HALF = COLUMN_BLOCK_M[0], COLUMN_BLOCK_M[1]
SHAPES = ((1024, 16384), (4096, 16384), (1024, 20480), (2048, 24576), (1024, 32768), (16384, 1024), (32768, 512))
CASES = {
    False: [(shape, dtype) for shape in SHAPES for dtype in (torch.bfloat16, torch.float32)],
    True: [((65, 16384), torch.bfloat16), ((65, 16384), torch.float32)],
}


def forms(x) -> dict:
    """{label: (fresh function, its explanation)}: the rule's tile and the other wide one, each
    checked against torch."""
    rule, plan = planned_sum(x, 0, contextlib.nullcontext(), "the rule")
    other = HALF if plan.block[0] == WIDEST else WIDEST
    block = (other, plan.block[0] * plan.block[1] // other)
    forced = planned_sum(x, 0, block_forced(get_scheme("column_looped"), block, plan.num_warps), f"{other} wide")
    return {"the rule": (rule, plan), "the other tile": forced}


def _label(plan) -> str:
    return f"{plan.split_parts}:{plan.block[0]}x{plan.block[1]} on {plan.grid[0]} programs"


def case_rows(x, rounds: int) -> list:
    from benchmarks.axis_reductions import median_rates

    built = forms(x)
    compiled = torch_compiled(lambda t: t.sum(0), dynamic=False)
    calls = [fn for fn, _ in built.values()] + [lambda t: t.sum(0), compiled]
    name = f"{tuple(x.shape)} {'bf16' if x.dtype == torch.bfloat16 else 'fp32'}"
    rows = [f"| {name} | tiles | " + " | ".join(_label(plan) for _, plan in built.values()) + " | | |"]
    for timer, rates in median_rates(x, calls, rounds):
        rows.append(f"| {name} | {timer} | {' | '.join(f'{r:.0f}' for r in rates)} |")
        print(rows[-1], flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_arguments(parser)
    parser.add_argument("--rounds", type=positive_int, default=3)
    args = parser.parse_args(argv)
    inputs = inputs_or_exit(args, "column_tiles", CASES, forms)
    if isinstance(inputs, int):
        return inputs
    lines = ["| case | timer | the rule | the other tile | torch eager | torch.compile |", "|---|---|---|---|---|---|"]
    for x in inputs:
        lines += case_rows(x, args.rounds)
    report(header() + f"\nGB/s read, medians of {args.rounds} rounds\n\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
