"""The floor of the (0, 2) sum: the fastest plain-Triton kernels with the extents at run time.

The case is axis_reductions.py's `sum(x, (0, 2))` of a 64x4096x64 fp32 cube (A x B x C), the one
cell of that table where torch.compile leads after a clean L2 flush. torch.compile compiles a
kernel for the one shape, its extents and strides written in; tritonwise compiles one kernel for
every shape of a layout class, which takes them at run time. Two families of plain-Triton
kernels bound what each contract can reach, each written both ways ("run time": extents and
strides are arguments; "compiled in": the same body with them as constexprs) and each over a
sweep of tiles and warps:
- flat: a program sums BJ kept columns over the reduced (i, k) pairs taken BR at a time as one
  flat index, split into i and k by a division by C (as tritonwise's row schemes and
  torch.compile's kernel split it);
- 3-D: a program sums a (BJ, BI, C) tile a step, looping over i: no division.
Run-time loops also try `loop_unroll_factor` 2 (a constant trip count lets the compiler unroll
the compiled-in loops whole). Masks are dropped where the extents divide the tile, in both forms:
a flag a layout class can carry, like tritonwise's count of whole blocks.
Each variant is checked against torch before it is timed; every variant is timed once after a
clean flush (the timer of the gap), and the three best of each family and form are then timed
under each timer of axis_reductions.py in alternated rounds beside tritonwise's own call,
torch.compile's and a plain read of the same bytes, each figure the median of its rounds. Ratios
are taken against the copy of torch.compile's kernel (COMPILED_KERNEL) in each round: its whole
call adds host time that a single call's timing can include.

    python -m benchmarks.axis_floor [--rounds 8]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys

import torch
import triton
import triton.language as tl

from benchmarks.axis_reductions import TIMERS, sum_0_2
from benchmarks.harness import best_plain_read, check_against, header, in_rounds, mismatch, nbytes, positive_int, report

SHAPE = (64, 4096, 64)
FLAT_TILES = tuple(itertools.product((1, 2, 4), (512, 1024, 2048)))  # (BJ, BR)
CUBE_TILES = tuple(itertools.product((1, 2, 4), (8, 32)))  # (BJ, BI); BK is C
WARPS = (4, 8, 16)
UNROLLS = {"run time": (None, 2), "compiled in": (None,)}  # None: the compiler decides
RETIMED = 3  # variants of each family and form timed in rounds under every timer


@triton.jit
def _flat(x_ptr, out_ptr, A, B, C, stride_a, stride_b, BJ: tl.constexpr, BR: tl.constexpr,
          MASKED: tl.constexpr, UNROLL: tl.constexpr):
    j = tl.program_id(0) * BJ + tl.arange(0, BJ)
    acc = tl.zeros((BJ, BR), tl.float32)
    for start in tl.range(0, A * C, BR, loop_unroll_factor=UNROLL):
        r = start + tl.arange(0, BR)
        i = r // C
        offsets = j[:, None] * stride_b + (i * stride_a + r - i * C)[None, :]
        if MASKED:
            mask = (j[:, None] < B) & (r[None, :] < A * C)
            acc += tl.load(x_ptr + offsets, mask=mask, other=0, eviction_policy="evict_first")
        else:
            acc += tl.load(x_ptr + offsets, eviction_policy="evict_first")
    tl.store(out_ptr + j, tl.sum(acc, 1), mask=j < B)


@triton.jit
def _cube(x_ptr, out_ptr, A, B, C, stride_a, stride_b, BJ: tl.constexpr, BI: tl.constexpr,
          BK: tl.constexpr, MASKED: tl.constexpr, UNROLL: tl.constexpr):
    j = tl.program_id(0) * BJ + tl.arange(0, BJ)
    k = tl.arange(0, BK)
    acc = tl.zeros((BJ, BI, BK), tl.float32)
    for start in tl.range(0, A, BI, loop_unroll_factor=UNROLL):
        i = start + tl.arange(0, BI)
        offsets = j[:, None, None] * stride_b + i[None, :, None] * stride_a + k[None, None, :]
        if MASKED:
            mask = (j[:, None, None] < B) & (i[None, :, None] < A) & (k[None, None, :] < C)
            acc += tl.load(x_ptr + offsets, mask=mask, other=0, eviction_policy="evict_first")
        else:
            acc += tl.load(x_ptr + offsets, eviction_policy="evict_first")
    tl.store(out_ptr + j, tl.sum(tl.sum(acc, 2), 1), mask=j < B)


@triton.jit
def _flat_run_time(x_ptr, out_ptr, A, B, C, stride_a, stride_b, BJ: tl.constexpr, BR: tl.constexpr,
                   MASKED: tl.constexpr, UNROLL: tl.constexpr):
    _flat(x_ptr, out_ptr, A, B, C, stride_a, stride_b, BJ, BR, MASKED, UNROLL)


@triton.jit
def _flat_compiled_in(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, stride_a: tl.constexpr,
                      stride_b: tl.constexpr, BJ: tl.constexpr, BR: tl.constexpr, MASKED: tl.constexpr,
                      UNROLL: tl.constexpr):
    _flat(x_ptr, out_ptr, A, B, C, stride_a, stride_b, BJ, BR, MASKED, UNROLL)


@triton.jit
def _cube_run_time(x_ptr, out_ptr, A, B, C, stride_a, stride_b, BJ: tl.constexpr, BI: tl.constexpr,
                   BK: tl.constexpr, MASKED: tl.constexpr, UNROLL: tl.constexpr):
    _cube(x_ptr, out_ptr, A, B, C, stride_a, stride_b, BJ, BI, BK, MASKED, UNROLL)


@triton.jit
def _cube_compiled_in(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, stride_a: tl.constexpr,
                      stride_b: tl.constexpr, BJ: tl.constexpr, BI: tl.constexpr, BK: tl.constexpr,
                      MASKED: tl.constexpr, UNROLL: tl.constexpr):
    _cube(x_ptr, out_ptr, A, B, C, stride_a, stride_b, BJ, BI, BK, MASKED, UNROLL)


KERNELS = {
    ("flat", "run time"): _flat_run_time,
    ("flat", "compiled in"): _flat_compiled_in,
    ("3-D", "run time"): _cube_run_time,
    ("3-D", "compiled in"): _cube_compiled_in,
}
FAMILIES = tuple(f"{family}, {form}" for family, form in KERNELS)


def variants(x: torch.Tensor) -> list:
    """(family, tile, warps and unroll, call(t), result) of each kernel configuration for x, a
    cube whose last dim is contiguous."""
    a, b, c = x.shape
    out = torch.empty(b, device=x.device, dtype=torch.float32)
    extents = {"A": a, "B": b, "C": c, "stride_a": x.stride(0), "stride_b": x.stride(1)}
    bk = triton.next_power_of_2(c)
    tiles = {"flat": [{"BJ": bj, "BR": br} for bj, br in FLAT_TILES],
             "3-D": [{"BJ": bj, "BI": bi, "BK": bk} for bj, bi in CUBE_TILES]}
    found = []
    for (family, form), kernel in KERNELS.items():
        for tile, warps, unroll in itertools.product(tiles[family], WARPS, UNROLLS[form]):
            reduced = tile.get("BR") or tile["BI"] * bk
            masked = bool(b % tile["BJ"] or (a * c) % reduced or bk != c)

            def call(t, kernel=kernel, tile=tile, warps=warps, unroll=unroll, masked=masked):
                kernel[(triton.cdiv(b, tile["BJ"]),)](t, out, **extents, **tile, MASKED=masked, UNROLL=unroll,
                                                      num_warps=warps)

            shown = tuple(tile.values())[:2]
            found.append((f"{family}, {form}", shown, f"{warps} warps" + (f", unrolled {unroll}" if unroll else ""),
                          call, out))
    return found


def checked(x: torch.Tensor, variant: tuple) -> bool:
    family, tile, how, call, result = variant
    result.fill_(float("nan"))  # poisoned: a column the kernel misses shows
    call(x)
    return mismatch(x.sum((0, 2)), result, f"{family} {tile} {how}", 1e-4, 1e-3) is None


# torch.compile's kernel for this shape (read from its autotuner at stop 53): one row of 2048 on
# 16 warps, the extents compiled in; its copy here is the anchor of every ratio, since
# torch.compile's whole call takes host time that can enter a single call's timing
COMPILED_KERNEL = ("flat, compiled in", (1, 2048), "16 warps")
# Always retimed beside the best: the same tile with the extents at run time, and the tile
# tritonwise's rule picks for this shape ((4, 512) on 4 warps) in the flat family
ALWAYS_RETIMED = (("flat, run time", (1, 2048), "16 warps"), ("flat, run time", (4, 512), "4 warps"))


def screened(x: torch.Tensor) -> list:
    """(GB/s after a clean flush, variant) of each variant whose answer is torch's, best first."""
    flush = TIMERS["after a clean L2 flush"]
    ranked = []
    for variant in variants(x):
        if checked(x, variant):
            ranked.append((flush(nbytes(x), variant[3], x), variant))
        else:
            print(f"wrong answer, not timed: {variant[0]} tile {variant[1]}, {variant[2]}", flush=True)
    return sorted(ranked, key=lambda r: -r[0])


def retimed(ranked: list) -> list:
    """The variants timed in rounds: the copy of torch.compile's kernel first, then the RETIMED
    best of each family and form after a flush, and ALWAYS_RETIMED."""
    def key(variant):
        return variant[:3]

    chosen = [v for _, v in ranked if key(v) == COMPILED_KERNEL]
    for family in FAMILIES:
        chosen += [v for _, v in ranked if v[0] == family][:RETIMED]
    chosen += [v for _, v in ranked if key(v) in ALWAYS_RETIMED]
    if not chosen or key(chosen[0]) != COMPILED_KERNEL:
        raise RuntimeError(f"no variant {COMPILED_KERNEL} gave torch's answer: nothing to take ratios against")
    unique = {}
    for variant in chosen:
        unique.setdefault(key(variant), variant)
    return list(unique.values())


def floor_rows(x: torch.Tensor, rounds: int, compiled) -> list:
    """Per timer, rows (timer, kernel, median GB/s, median / plain read, lowest and highest /
    torch.compile's kernel over the rounds) for the plain read, tritonwise, torch.compile's call
    and each retimed variant, all timed in `rounds` alternated rounds."""
    check_against(x.sum((0, 2)), sum_0_2(x), "tritonwise sum(x, (0, 2))", 1e-4, 1e-3)
    ranked = screened(x)
    for gb, (family, tile, how, _, _) in ranked[:12]:
        print(f"after a flush, screened: {family}, tile {tile}, {how}: {gb:.0f} GB/s", flush=True)
    kernels = retimed(ranked)
    names = ["plain read of the same bytes", "tritonwise sum(x, (0, 2))", "torch.compile (its whole call)"]
    names += [f"{family}, tile {tile}, {how}" for family, tile, how, _, _ in kernels]
    rows = []
    for timer, rate in TIMERS.items():
        calls = [best_plain_read(x, rate), sum_0_2, compiled] + [v[3] for v in kernels]
        samples = in_rounds([lambda call=call, rate=rate: rate(nbytes(x), call, x) for call in calls], rounds)
        medians = [statistics.median(column) for column in zip(*samples)]
        anchor = 3  # the copy of torch.compile's kernel, retimed first
        for k, name in enumerate(names):
            ratios = [s[k] / s[anchor] for s in samples]
            rows.append((timer, name, medians[k], medians[k] / medians[0], min(ratios), max(ratios)))
    return rows


def table(rows: list) -> str:
    lines = ["| timer | kernel | GB/s | / plain read | / torch.compile's kernel, rounds' range |", "|---|---|---|---|---|"]
    for timer, what, gb, to_plain, low, high in rows:
        lines.append(f"| {timer.split(',')[0]} | {what} | {gb:.0f} | {to_plain:.3f} | {low:.3f}–{high:.3f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=8)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("axis_floor needs a CUDA GPU", file=sys.stderr)
        return 2
    x = torch.randn(SHAPE, device="cuda")
    compiled = torch.compile(lambda t: t.sum((0, 2)))
    check_against(x.sum((0, 2)), compiled(x), "torch.compile sum(x, (0, 2))", 1e-4, 1e-3)
    rows = floor_rows(x, args.rounds, compiled)
    name = "x".join(map(str, SHAPE))
    report(header() + f"\nsum(x, (0, 2)) fp32 {name}; medians of {args.rounds} alternated rounds\n\n" + table(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
