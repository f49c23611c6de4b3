"""Column sums of narrow matrices (GPU): tritonwise as it plans them, with the tiles it took before
narrow ones (BLOCK_M of at least 16), with the split rule counting kept elements as its rows (not
tiles of 16 of them), unsplit, split however small, pipelining the loop in the unaligned class, with
the split rule counting narrow tiles as tiles of 16, with wide tiles split into any number of
parts, and torch; µs per call.

    python -m benchmarks.narrow_columns [--rounds 3]
    python -m benchmarks.narrow_columns --device cpu   # every form checked on small inputs, nothing timed

A column sum of a row-major (rows, k) matrix keeps k elements along unit stride: column_looped,
and with few tiles of 16 kept elements a split of the rows into parts. Each case sums over dim -2:
a (batch, rows, k) case is a batch of such matrices, whose kept elements make several runs. Each form is a fresh
function planned under its tile rule, checked against torch on a poisoned output, then timed in
alternated rounds: back to back in a CUDA graph on one input (no host time) and under do_bench
(where host time counts once it exceeds the GPU's). docs/decisions/column-looped-tile.md and
split-rule.md read the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import sys
from unittest import mock

import torch
import triton

from benchmarks.harness import (
    check_against,
    do_bench_us,
    gpu_us_per_kernel,
    header,
    inputs_or_exit,
    own_cache_dir,
    positive_int,
    report,
    smoke_arguments,
)
from benchmarks.split_reductions import never_split
from tritonwise import pointwise_dynamic
from tritonwise.analysis import plan, tiling
from tritonwise.schemes import column_looped


@triton.jit
def ident(x):
    return x


CASES = {
    False: [
        ((2048, 8), torch.float32),
        ((4096, 8), torch.float32),
        ((16384, 8), torch.float32),
        ((262144, 8), torch.float32),
        ((16384, 8), torch.bfloat16),
        ((65536, 4), torch.float32),
        ((4096, 2), torch.float32),
        ((16384, 2), torch.float32),
        ((2048, 12), torch.float32),  # a run of 9 to 15 takes the wide tile of 16
        ((16384, 12), torch.float32),
        ((16384, 16), torch.float32),
        ((32768, 32), torch.float32),
        ((32768, 64), torch.float32),
        ((131072, 64), torch.float32),
        ((16384, 128), torch.float32),
        ((65536, 256), torch.float32),
        # short extents, which a run of 16 or more no longer splits (fewer than MIN_COLUMN_PARTS parts)
        ((2048, 16), torch.float32),
        ((2048, 64), torch.float32),
        ((2048, 256), torch.float32),
        ((8192, 128), torch.float32),  # 8 parts: MIN_COLUMN_PARTS
        # batches of narrow matrices, their sum over the middle dim: several runs of kept elements
        ((64, 65536, 8), torch.float32),
        ((64, 65536, 8), torch.bfloat16),
        ((64, 16384, 8), torch.float32),
        ((48, 65536, 8), torch.float32),
        ((64, 65536, 3), torch.float32),
        ((64, 131072, 4), torch.float32),
        ((128, 16384, 4), torch.float32),
        ((8, 262144, 8), torch.float32),
    ],
    True: [((2048, 8), torch.float32), ((300, 3), torch.bfloat16), ((64, 12), torch.float32), ((4, 96, 8), torch.float32)],
}


def _wide_block_choices(self, rank, itemsize, aligned, config):
    """column_looped's blocks without the narrow ones."""
    blocks = _BLOCK_CHOICES(self, rank, itemsize, aligned, config)
    return tuple(b for b in blocks if b[0] >= column_looped.WIDE_BLOCK_M)


def _split_parts_by_element(rows, cols, kept_unit_stride, itemsize):
    """The split rule counting a column layout's rows one per kept element."""
    elements = (math.prod(rows) * column_looped.WIDE_BLOCK_M,) if kept_unit_stride else rows
    return _SPLIT_PARTS(elements, cols, kept_unit_stride, itemsize)


_BLOCK_CHOICES, _SPLIT_PARTS = column_looped.ColumnLooped.block_choices, plan.split_parts


@contextlib.contextmanager
def wide_tiles():
    """column_looped as it tiled before narrow tiles: BLOCK_M of 16 or more, whatever the run."""
    tiling._block_choices.cache_clear()
    try:
        with mock.patch.object(column_looped.ColumnLooped, "block_choices", _wide_block_choices):
            yield
    finally:
        tiling._block_choices.cache_clear()


def rows_by_element():
    """The split rule as it was before 81fc284: a column layout's rows counted one per kept
    element, no least number of parts, a split whatever a tile's program reads, and from 32 such
    rows up to 64 only from SPLIT_MIN_COLS reduced elements (as rows then split)."""
    return mock.patch.multiple(
        plan, split_parts=_split_parts_by_element, MIN_COLUMN_PARTS=1, COLUMN_UNSPLIT_ELEMENTS=0,
        SPLIT_MAX_TILES=plan.SPLIT_MAX_ROWS, COLUMN_SPLIT_EXTENT=plan.SPLIT_MIN_COLS, SLIM_ROW_BYTES=0,
    )


def narrow_tiles_counted_as_wide():
    """The split rule leaving narrow tiles no bound of their own: 32 to 64 tiles of 16 kept
    elements count as many, however many narrow programs they make (before 995a4c7)."""
    return mock.patch.object(plan, "SPLIT_FEW_NARROW", 0)


def wide_tiles_in_any_parts():
    """Wide tiles split into any number of parts (before MIN_COLUMN_PARTS)."""
    return mock.patch.object(plan, "MIN_COLUMN_PARTS", 1)


def split_however_small():
    """Columns split whatever a tile's program reads (before COLUMN_UNSPLIT_ELEMENTS)."""
    return mock.patch.object(plan, "COLUMN_UNSPLIT_ELEMENTS", 0)


def unsplit():
    """No split at all (split_reductions.never_split)."""
    return never_split()


@contextlib.contextmanager
def pipelined_when_unaligned():
    """column_looped pipelining its loop in files of the unaligned class too (before 2026-11-27;
    narrow tiles are always there). A patched attribute is no part of a file's key, so the form
    writes its files to a directory of its own."""
    with own_cache_dir("narrow-pipelined-"):
        with mock.patch.object(column_looped.ColumnLooped, "pipelines_unaligned", True):
            yield


FORMS = {  # "as generated" first: it builds the combine's function in the cache the others share
    "as generated": contextlib.nullcontext,
    "wide tiles": wide_tiles,
    "rows by element": rows_by_element,
    "unsplit": unsplit,
    "split however small": split_however_small,
    "pipelined when unaligned": pipelined_when_unaligned,
    "narrow tiles counted as wide": narrow_tiles_counted_as_wide,
    "wide tiles in any parts": wide_tiles_in_any_parts,
}


def column_sum(x, form: str):
    """A fresh column-sum function planned for `x` under `form` (the timed call `fn(x)` too, whose
    signature differs from the checked one's), checked against torch on a poisoned output: (the
    function, its explanation)."""
    with FORMS[form]():
        fn = pointwise_dynamic(ident, promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -2)])
        out = torch.full(x.shape[:-2] + x.shape[-1:], float("nan"), dtype=x.dtype, device=x.device)
        tol = 2e-2 if x.dtype == torch.bfloat16 else 1e-4
        name = f"sum(x, 0) {tuple(x.shape)} {str(x.dtype)[6:]}, {form}"
        check_against(x.float().sum(-2), fn(x, out0=out).float(), name, rtol=tol, atol=100 * tol)
        fn(x)
        return fn, fn.explain(x)  # its rung: "plan cache", where the timed calls find this plan


def case_row(x, rounds: int) -> str:
    forms = {form: column_sum(x, form) for form in FORMS}
    calls = {form: (lambda fn=fn: fn(x)) for form, (fn, _) in forms.items()}
    calls["torch"] = lambda: x.sum(-2)
    timers = {"graph": lambda call: gpu_us_per_kernel(call, 100), "do_bench": do_bench_us}
    times = {(t, c): [] for t in timers for c in calls}
    for _ in range(rounds):
        for t, timer in timers.items():
            for c, call in calls.items():
                times[t, c].append(timer(call))
    tiles = "; ".join(f"{e.block} on {e.grid[0]} programs, {e.split_parts} parts" for _, e in forms.values())
    cells = " | ".join(" / ".join(f"{statistics.median(times[t, c]):.2f}" for c in calls) for t in timers)
    return f"| {tuple(x.shape)} {str(x.dtype)[6:]} | {tiles} | {cells} |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_arguments(parser)
    parser.add_argument("--rounds", type=positive_int, default=3)
    args = parser.parse_args(argv)
    inputs = inputs_or_exit(args, "narrow_columns", CASES, lambda x: [column_sum(x, form) for form in FORMS])
    if isinstance(inputs, int):
        return inputs
    lines = [
        "| case | tiles: " + "; ".join(FORMS) + " | graph µs: " + " / ".join(FORMS) + " / torch | do_bench µs: the same |",
        "|---|---|---|---|",
    ]
    lines += [case_row(x, args.rounds) for x in inputs]
    report(header() + f"\nMedians of {args.rounds} alternated rounds\n\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
