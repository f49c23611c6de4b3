"""The floor of the two 4 MiB bf16 row sums: the fastest plain-Triton row sums we can write.

The cases are axis_reductions.py's `sum(x, -1)` of bf16 16384x128 and 128x16384. Three families
of plain-Triton kernels, each over a sweep of tiles and warps, bound what a row sum of these
bytes can reach:
- one pass: a program reduces whole rows (a tile of BR rows, looping over BC columns at a
  time) into fp32 and stores bf16 sums, as tritonwise's row schemes do;
- split with atomics: a program reduces one tile and adds it into an fp32 row sum with
  `tl.atomic_add`; programs over the columns too, so short row counts fill the GPU, at the
  price of an fp32 result that must be zeroed first and rounded after (neither is timed here,
  and the order of additions varies from run to run, which torch's sum does not allow);
- for few rows, split where the last program combines: programs over the columns too, each
  storing fp32 partials; the last of a row tile's programs to take a ticket (an atomic counter
  it then resets) adds them in order and stores the sums. One kernel, deterministic.
Each variant is checked against torch before it is timed. Every variant is timed once under
do_bench; the three best of each family are then timed under each timer of axis_reductions.py
(do_bench, after a clean L2 flush, back to back in a CUDA graph) in alternated rounds beside
tritonwise's own `sum(x, -1)` and one plain read of the same bytes (harness.best_plain_read),
each figure the median of its rounds: at 4 MiB single timings scatter by a tenth, and the best of
several single timings would sit above what any one kernel reads.

    python -m benchmarks.row_sum_floor [--rounds 5]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys

import torch
import triton
import triton.language as tl

from benchmarks.axis_reductions import TIMERS, sum_last
from benchmarks.harness import (
    best_plain_read,
    check_against,
    header,
    in_rounds,
    mismatch,
    nbytes,
    positive_int,
    report,
)

SHAPES = ((16384, 128), (128, 16384))
ROWS_PER_TILE = (1, 2, 4, 8, 16, 32, 64)
COLS_PER_TILE = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
WARPS = (4, 8, 16)
MAX_TILE = 16384  # elements a program holds at once
RETIMED = 3  # variants of each family timed in rounds under every timer
FAMILIES = ("one pass", "split, atomics", "the last program combines")
# Rows fewer than this also try the split whose last program combines: (parts, rows a tile,
# columns a step, warps) of each variant
FEW_ROWS = 1024
LAST_COMBINES = ((2, 4, 8), (1, 2, 4), (1024, 2048, 4096), (4, 8, 16))


@triton.jit
def _one_pass(x_ptr, out_ptr, rows, cols, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    acc = tl.zeros((BR, BC), tl.float32)
    for start in range(0, cols, BC):
        c = start + tl.arange(0, BC)
        mask = (r[:, None] < rows) & (c[None, :] < cols)
        acc += tl.load(x_ptr + r[:, None] * cols + c[None, :], mask=mask, other=0).to(tl.float32)
    tl.store(out_ptr + r, tl.sum(acc, 1).to(out_ptr.dtype.element_ty), mask=r < rows)


@triton.jit
def _split_atomic(x_ptr, acc_ptr, rows, cols, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    tile = tl.load(x_ptr + r[:, None] * cols + c[None, :], mask=mask, other=0).to(tl.float32)
    tl.atomic_add(acc_ptr + r, tl.sum(tile, 1), mask=r < rows)


@triton.jit
def _split_last_combines(x_ptr, partial_ptr, ticket_ptr, out_ptr, rows, cols, steps, PARTS: tl.constexpr,
                         BR: tl.constexpr, BC: tl.constexpr):
    """Programs (row tile, part): each sums `steps` blocks of BC columns of BR rows (its part:
    the columns are PARTS * steps whole blocks) into fp32 partials; the last of a row tile's
    parts to take a ticket adds the tile's partials in part order (deterministic) and stores the
    sums, then resets the ticket for the next call: one kernel, no zeroing."""
    tile, part = tl.program_id(0), tl.program_id(1)
    r = tile * BR + tl.arange(0, BR)
    acc = tl.zeros((BR, BC), tl.float32)
    for step in range(steps):
        c = (part * steps + step) * BC + tl.arange(0, BC)
        acc += tl.load(x_ptr + r[:, None] * cols + c[None, :], mask=(r < rows)[:, None], other=0).to(tl.float32)
    tl.store(partial_ptr + r * PARTS + part, tl.sum(acc, 1), mask=r < rows)
    tl.debug_barrier()  # every thread's partials stored before the ticket releases them
    if tl.atomic_add(ticket_ptr + tile, 1, sem="acq_rel") == PARTS - 1:
        p = tl.arange(0, PARTS)
        partials = tl.load(partial_ptr + r[:, None] * PARTS + p[None, :], mask=(r < rows)[:, None], other=0,
                           cache_modifier=".cg")
        tl.store(out_ptr + r, tl.sum(partials, 1).to(out_ptr.dtype.element_ty), mask=r < rows)
        tl.store(ticket_ptr + tile, 0)


def variants(x: torch.Tensor) -> list:
    """(family, tile, warps, call(t), result of a checked run) of each kernel configuration for x."""
    rows, cols = x.shape
    out = torch.empty(rows, device=x.device, dtype=x.dtype)
    acc = torch.empty(rows, device=x.device, dtype=torch.float32)
    found = []
    for br, bc, warps in itertools.product(ROWS_PER_TILE, COLS_PER_TILE, WARPS):
        if br * bc > MAX_TILE or bc > cols or br > rows:
            continue

        def one_pass(t, br=br, bc=bc, warps=warps):
            _one_pass[(triton.cdiv(rows, br),)](t, out, rows, cols, BR=br, BC=bc, num_warps=warps)

        def split(t, br=br, bc=bc, warps=warps):
            _split_atomic[(triton.cdiv(rows, br), triton.cdiv(cols, bc))](t, acc, rows, cols, BR=br, BC=bc,
                                                                           num_warps=warps)

        found.append(("one pass", (br, bc), warps, one_pass, out))
        if bc < cols:  # a split needs more than one tile along the row
            found.append(("split, atomics", (br, bc), warps, split, acc))
    if rows < FEW_ROWS:
        found += _last_combines(x, out)
    return found


def _last_combines(x: torch.Tensor, out: torch.Tensor) -> list:
    """The split whose last program combines, over LAST_COMBINES' parts, tiles and warps."""
    rows, cols = x.shape
    found = []
    for parts, br, bc, warps in itertools.product(*LAST_COMBINES):
        if cols % (bc * parts):
            continue
        tiles = triton.cdiv(rows, br)
        partial = torch.empty(tiles * br * parts, device=x.device)
        ticket = torch.zeros(tiles, device=x.device, dtype=torch.int32)

        def split(t, parts=parts, br=br, bc=bc, warps=warps, partial=partial, ticket=ticket, tiles=tiles):
            steps = cols // (bc * parts)
            _split_last_combines[(tiles, parts)](t, partial, ticket, out, rows, cols, steps, PARTS=parts, BR=br,
                                                 BC=bc, num_warps=warps)

        found.append((f"split in {parts}, the last program combines", (br, bc), warps, split, out))
    return found


def checked(x: torch.Tensor, variant: tuple) -> bool:
    _, tile, warps, call, result = variant
    if result.dtype == torch.float32:
        result.zero_()  # the atomics' accumulator
    else:
        result.fill_(float("nan"))  # poisoned: a row the kernel misses shows
    call(x)
    expected = x.float().sum(-1)
    return mismatch(expected, result.float(), f"{variant[0]} {tile} {warps} warps", 2e-2, 2e-1) is None


def floor_rows(x: torch.Tensor, rounds: int) -> list:
    """Table rows for x: per timer, the best of each family, the plain read and tritonwise, each
    the median of `rounds` alternated rounds."""
    moved = nbytes(x)
    check_against(x.sum(-1).float(), sum_last(x).float(), "tritonwise sum(x, -1)", 2e-2, 2e-1)
    ranked = []
    for variant in variants(x):
        if checked(x, variant):
            ranked.append((TIMERS["do_bench"](moved, variant[3], x), variant))
        else:
            print(f"wrong answer, not timed: {variant[0]} tile {variant[1]}, {variant[2]} warps", flush=True)
    candidates = []
    for family in FAMILIES:  # a split needs more than one tile along the row: none for rows this short
        best = sorted((r for r in ranked if r[1][0].endswith(family)), key=lambda r: -r[0])[:RETIMED]
        candidates += [(family, f"{kernel}, tile {tile}, {warps} warps", call) for _, (kernel, tile, warps, call, _)
                       in best]
    name = "x".join(map(str, x.shape))
    rows = []
    for timer, rate in TIMERS.items():
        calls = [best_plain_read(x, rate), lambda t: sum_last(t)] + [call for _, _, call in candidates]
        samples = in_rounds([lambda call=call: rate(moved, call, x) for call in calls], rounds)
        plain, ours, *theirs = (statistics.median(column) for column in zip(*samples))
        for family in FAMILIES:
            timed = [(gb, what) for gb, (fam, what, _) in zip(theirs, candidates) if fam == family]
            if timed:
                gb, what = max(timed)
                rows.append((name, timer, what, gb))
        rows.append((name, timer, "plain read of the same bytes", plain))
        rows.append((name, timer, "tritonwise sum(x, -1)", ours))
    return rows


def table(rows: list) -> str:
    plain = {(r[0], r[1]): r[3] for r in rows if r[2].startswith("plain read")}
    lines = ["| case | timer | kernel | GB/s | / plain read |", "|---|---|---|---|---|"]
    for name, timer, what, gb in sorted(rows, key=lambda r: (r[0], r[1])):
        lines.append(f"| {name} bf16 | {timer.split(',')[0]} | {what} | {gb:.0f} | {gb / plain[name, timer]:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=5)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("row_sum_floor needs a CUDA GPU", file=sys.stderr)
        return 2
    rows = []
    for shape in SHAPES:
        rows += floor_rows(torch.randn(shape, device="cuda", dtype=torch.bfloat16), args.rounds)
    report(header() + f"\nMedians of {args.rounds} alternated rounds\n\n" + table(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
