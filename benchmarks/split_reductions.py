"""Split against unsplit reductions along dims with few kept rows (GPU): GB/s read (median of
do_bench), the split as tritonwise chooses it, the unsplit by setting SPLIT_MAX_ROWS and
SPLIT_MAX_TILES to 0 (`never_split`).

    python -m benchmarks.split_reductions
    python -m benchmarks.split_reductions --grid         # GRID's shapes split always against never, two rounds
    python -m benchmarks.split_reductions --grid-timers  # TIMED_GRID's shapes the same way under three timers
    python -m benchmarks.split_reductions --device cpu   # both forms checked on small inputs, nothing timed
    python -m benchmarks.split_reductions --timers       # TIMER_CASES under three timers, combines and torch.compile
    python -m benchmarks.split_reductions --short        # SHORT's shapes split against unsplit, µs per call
    python -m benchmarks.split_reductions --pairs        # PAIR_CASES at 2048-256 (row, part) pairs, three timers
    python -m benchmarks.split_reductions --columns      # COLUMN_CASES' column sums split and unsplit, three timers

`--pairs` times each of PAIR_CASES split as the rule splits it and as (row, part) pairs aimed at
each of PAIR_TARGETS would (`SPLIT_TARGET_ROWS`, with no least count of parts), torch.compile
beside, under the same three timers, medians of ROUNDS rounds.

`--columns` times the column sums of COLUMN_CASES (sum over dim 0 of a row-major matrix, 32 to 128
tiles of 16 kept elements) as the rule plans them and unsplit (`never_split`), torch
eager and torch.compile beside, under the same three timers, medians of ROUNDS rounds.

`--timers` times the split of each of TIMER_CASES as tritonwise runs it, and with its partials
combined the older way (torch's sum into a new result, rounded to the result dtype by a kernel
of its own, then copied into the output), as shares of a plain read of the same bytes, under
the three timers of axis_reductions.py, torch.compile beside; medians of ROUNDS rounds, each
timing them in turn.

Both forms of every case are checked against torch before anything is timed; a wrong answer
stops the run with a non-zero exit.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from unittest import mock

import torch
import triton

from benchmarks.harness import (
    check_against,
    do_bench_us,
    gbps,
    gpu_us_per_kernel,
    nbytes,
    read_ceiling,
    smoke_arguments,
    smoke_run,
    torch_compiled,
)
from tritonwise import pointwise_dynamic
from tritonwise.analysis import plan as plan_module
from tritonwise.runtime import dispatch


@triton.jit
def ident(x):
    return x


CASES = [
    ((128, 16384), torch.bfloat16),
    ((64, 1 << 20), torch.float32),
    ((8, 1 << 22), torch.float32),
    ((256, 1 << 16), torch.float32),
    ((32, 1 << 16), torch.float32),
    ((128, 1 << 18), torch.bfloat16),
    ((1 << 24,), torch.float32),  # a vector: one row
]
# The rule's evidence (docs/decisions/split-rule.md): rows x reduced extent x dtype
GRID = [((rows, cols), dtype) for rows in (32, 64, 128, 192, 256) for cols in (1 << 16, 1 << 18, 1 << 20)
        for dtype in (torch.float32, torch.bfloat16)]
# --grid-timers: few rows around the rule's thresholds, under the three timers of axis_reductions.py
TIMED_GRID = [((rows, cols), dtype) for rows in (8, 32, 64, 128) for cols in (1 << 16, 1 << 17, 1 << 18, 1 << 19)
              for dtype in (torch.float32, torch.bfloat16)]
SMOKE_CASES = [((2, 1 << 16), torch.float32), ((1, 1 << 16), torch.bfloat16)]  # few rows: split on CPU too
# --timers: one row, few rows, and a bf16 row (whose older combine took a rounding kernel and a copy)
TIMER_CASES = [((1 << 24,), torch.float32), ((8, 1 << 22), torch.float32), ((1 << 22,), torch.bfloat16)]
ROUNDS = 3
# --pairs: few rows where the (row, part) pairs a split aims at were measured (docs/decisions/split-rule.md)
PAIR_CASES = [((8, 1 << 17), torch.float32), ((8, 1 << 18), torch.bfloat16), ((32, 1 << 17), torch.bfloat16),
              ((32, 1 << 19), torch.float32), ((3, 1000003), torch.float32), ((1 << 22,), torch.bfloat16),
              ((48, 1 << 18), torch.bfloat16), ((64, 1 << 17), torch.bfloat16), ((64, 1 << 19), torch.float32)]
PAIR_TARGETS = (2048, 1024, 512, 256)
# --columns: column sums of 32, 64 and 128 tiles of 16 kept elements around the split's thresholds
COLUMN_CASES = [((rows, kept), dtype) for kept in (512, 1024, 2048) for rows in (8192, 16384, 32768, 1 << 18)
                for dtype in (torch.float32, torch.bfloat16)]
# --short: few rows whose reduced extent is short, where a second kernel and the Python call
# that launches it may cost more than the split saves
SHORT = [((rows, cols), dtype) for rows in (1, 8) for cols in (1 << 12, 1 << 14, 1 << 15, 1 << 16, 1 << 17)
         for dtype in (torch.float32, torch.bfloat16)]


def never_split():
    """Reductions planned inside never split, rows or columns."""
    return mock.patch.multiple(plan_module, SPLIT_MAX_ROWS=0, SPLIT_MAX_TILES=0)


def splitting(split, always: bool = False):
    """Reductions planned inside split as tritonwise chooses (True), never (False), or with
    `always`, a row layout whatever its rows (up to 1024) and length (past 2048: the combine of up
    to 2048 partials, a reduction too, must not split)."""
    if always:
        limit = plan_module.SPLIT_TARGET_TILES + 1
        return mock.patch.multiple(plan_module, SPLIT_MAX_ROWS=1024, SPLIT_FEW_ROWS=1024, SPLIT_MIN_COLS_FEW=limit)
    return contextlib.nullcontext() if split else never_split()


def planned_sum(x, dim: int, within, label: str):
    """A fresh function summing over `dim`, planned for `x` inside the context `within` and
    checked against torch under a name ending in `label`: (the function, its explanation)."""
    with within:
        fn = pointwise_dynamic(ident, promotion_methods=[(0, "DEFAULT")], reductions=[("sum", dim)])
        tol = 2e-2 if x.dtype == torch.bfloat16 else 1e-3
        name = f"sum(x, {dim}) {tuple(x.shape)} {str(x.dtype)[6:]}, {label}"
        check_against(x.float().sum(dim), fn(x).float(), name, rtol=tol, atol=10 * tol)
        return fn, fn.explain(x)


def row_sum(x, split: bool, always: bool = False):
    """A fresh row-sum function planned for `x` split or not (or always), checked against torch:
    (the function, how many parts the split cut the rows into)."""
    fn, plan = planned_sum(x, -1, splitting(split, always), "split" if split else "unsplit")
    return fn, plan.split_parts


def grid() -> None:
    """GRID's shapes split always and never, GB/s in two alternating rounds, and the rule's choice."""
    print("| shape | split always (parts) | never | the rule |\n|---|---|---|---|")
    for shape, dtype in GRID:
        x = torch.randn(shape, device="cuda").to(dtype)
        (split_fn, parts), (unsplit_fn, _) = row_sum(x, True, always=True), row_sum(x, False)
        rates = [[gbps(x.numel() * x.element_size(), lambda f=f: f(x)) for f in (split_fn, unsplit_fn)] for _ in range(2)]
        split, unsplit = (f"{min(r):.0f}–{max(r):.0f}" for r in zip(*rates))
        print(f"| {shape} {str(dtype)[6:]} | {split} ({parts}) | {unsplit} | {row_sum(x, True)[1]} parts |", flush=True)


def grid_timers(device: str) -> None:
    """TIMED_GRID's shapes (on CPU: SMOKE_CASES, checked only) split always and never, beside
    torch.compile, under each timer of axis_reductions.py: GB/s read, medians of ROUNDS rounds
    (each timing the three in turn, starting one further along), and the parts the rule takes."""
    from benchmarks.axis_reductions import median_rates

    cases = SMOKE_CASES if device == "cpu" else TIMED_GRID
    print("| shape | rule's parts (always) | timer | split always / never / torch.compile GB/s |\n|---|---|---|---|")
    for shape, dtype in cases:
        x = torch.randn(shape, device=device).to(dtype)
        (split_fn, parts), (unsplit_fn, _) = row_sum(x, True, always=True), row_sum(x, False)
        if device == "cpu":
            continue
        compiled = torch_compiled(lambda t: t.sum(-1), dynamic=False)
        check_against(x.float().sum(-1), compiled(x).float(), "torch.compile", 2e-2, 2e-1)
        rule = row_sum(x, True)[1]
        for timer, rates in median_rates(x, (split_fn, unsplit_fn, compiled), ROUNDS):
            cells = " / ".join(f"{r:.0f}" for r in rates)
            print(f"| {shape} {str(dtype)[6:]} | {rule} ({parts}) | {timer} | {cells} |", flush=True)
    print(f"{len(cases)} cases, split and unsplit, give torch's answer", flush=True)


def short(device: str) -> None:
    """SHORT's shapes (on CPU: SMOKE_CASES, checked only) split whenever a part keeps 1024
    elements, and unsplit: µs per call under do_bench (host time counts where it exceeds the
    GPU's) and back to back in a CUDA graph on one input (no host time), medians of ROUNDS rounds."""
    cases = SMOKE_CASES if device == "cpu" else SHORT
    inputs = [torch.randn(shape, device=device).to(dtype) for shape, dtype in cases]
    pairs = [(row_sum(x, True, always=True), row_sum(x, False)[0]) for x in inputs]
    print(f"{len(inputs)} cases, split and unsplit, give torch's answer", flush=True)
    if device == "cpu":
        return
    timers = (do_bench_us, lambda call: gpu_us_per_kernel(call, 200))
    print("| shape | parts | do_bench µs split / unsplit | back to back µs split / unsplit |\n|---|---|---|---|")
    for x, ((split_fn, parts), unsplit_fn) in zip(inputs, pairs):
        cells = []
        for timer in timers:
            times = [[], []]
            for _ in range(ROUNDS):
                for k, fn in enumerate((split_fn, unsplit_fn)):
                    with splitting(not k, always=not k):
                        times[k].append(timer(lambda fn=fn: fn(x)))
            cells.append(" / ".join(f"{statistics.median(t):.2f}" for t in times))
        print(f"| {tuple(x.shape)} {str(x.dtype)[6:]} | {parts} | {' | '.join(cells)} |", flush=True)


def aimed_at(x, target: int):
    """A fresh row-sum function whose split aims at `target` (row, part) pairs with no least
    count of parts, checked against torch: (the function, "parts:block@warps")."""
    aim = mock.patch.multiple(plan_module, SPLIT_TARGET_ROWS=target, SPLIT_LEAST_ROW_PARTS=1)
    fn, plan = planned_sum(x, -1, aim, f"at {target} pairs")
    return fn, _split_label(plan)


def _split_label(plan) -> str:
    return f"{plan.split_parts}:{plan.block[0]}x{plan.block[1]}@{plan.num_warps}"


def pairs(device: str) -> None:
    """PAIR_CASES (on CPU: SMOKE_CASES, checked only) as the rule splits them and aimed at each of
    PAIR_TARGETS, torch.compile beside: GB/s read under each timer of axis_reductions.py, medians
    of ROUNDS rounds; each variant's parts, block and warps in the case's first line."""
    from benchmarks.axis_reductions import median_rates

    cases = []
    for shape, dtype in SMOKE_CASES if device == "cpu" else PAIR_CASES:
        x = torch.randn(shape, device=device).to(dtype)
        rule, _ = row_sum(x, True)
        cases.append((x, [(rule, _split_label(rule.explain(x)))] + [aimed_at(x, target) for target in PAIR_TARGETS]))
    aims = f"as the rule splits them and aimed at {PAIR_TARGETS} pairs"
    print(f"{len(cases)} cases, {aims}, give torch's answer", flush=True)
    labels = ["the rule"] + [f"{t} pairs" for t in PAIR_TARGETS] + ["torch.compile"]
    print("| shape | timer | " + " | ".join(labels) + " |")
    print("|---" * (len(labels) + 2) + "|")
    for x, variants in cases:
        name = f"{tuple(x.shape)} {str(x.dtype)[6:]}"
        print(f"| {name} | parts:block@warps | {' | '.join(label for _, label in variants)} | |", flush=True)
        if device == "cpu":
            continue
        compiled = torch_compiled(lambda t: t.sum(-1), dynamic=False)
        check_against(x.float().sum(-1), compiled(x).float(), "torch.compile", 2e-2, 2e-1)
        calls = [fn for fn, _ in variants] + [compiled]
        for timer, rates in median_rates(x, calls, ROUNDS):
            print(f"| {name} | {timer} | {' | '.join(f'{r:.0f}' for r in rates)} |", flush=True)


def column_sum(x, split: bool):
    """A fresh column-sum function (over dim 0) planned for `x` as the rule splits it or unsplit,
    checked against torch: (the function, "parts:block@warps")."""
    within = contextlib.nullcontext() if split else never_split()
    fn, plan = planned_sum(x, 0, within, "split" if split else "unsplit")
    return fn, _split_label(plan)


def columns(device: str) -> None:
    """COLUMN_CASES (on CPU: one small matrix, checked only) as the rule plans them and unsplit,
    torch eager and torch.compile beside: GB/s read under each timer of axis_reductions.py,
    medians of ROUNDS rounds."""
    from benchmarks.axis_reductions import median_rates

    shapes = [((1024, 512), torch.float32)] if device == "cpu" else COLUMN_CASES
    cases = []
    for shape, dtype in shapes:
        x = torch.randn(shape, device=device).to(dtype)
        cases.append((x, column_sum(x, True), column_sum(x, False)))
    print(f"{len(cases)} column sums, as the rule plans them and unsplit, give torch's answer", flush=True)
    print("| shape | timer | the rule | unsplit | torch eager | torch.compile |\n|---|---|---|---|---|---|")
    for x, (rule, rule_label), (whole, whole_label) in cases:
        name = f"{tuple(x.shape)} {str(x.dtype)[6:]}"
        print(f"| {name} | parts:block@warps | {rule_label} | {whole_label} | | |", flush=True)
        if device == "cpu":
            continue
        compiled = torch_compiled(lambda t: t.sum(0), dynamic=False)
        check_against(x.float().sum(0), compiled(x).float(), "torch.compile", 2e-2, 2e-1)
        calls = [rule, whole, lambda t: t.sum(0), compiled]
        for timer, rates in median_rates(x, calls, ROUNDS):
            print(f"| {name} | {timer} | {' | '.join(f'{r:.0f}' for r in rates)} |", flush=True)


def _combined_through_a_copy(split, partials, outputs) -> None:
    """SplitLaunch.combine as it was before 2b25a41: every output's rows summed into a new result,
    rounded to the result dtype by a kernel of its own, then copied."""
    for out, buffer, kind, result, row_strides in zip(outputs, partials, split.kinds, split.results,
                                                      split.out_row_strides):
        rows = torch.as_strided(out, split.rows, row_strides, out.storage_offset())
        rows.copy_(dispatch._COMBINE[kind](buffer, 0).to(result))


@contextlib.contextmanager
def combined_through_a_copy():
    """Split reductions inside combine their partials the older way."""
    saved = dispatch.SplitLaunch.combine
    dispatch.SplitLaunch.combine = _combined_through_a_copy
    try:
        yield
    finally:
        dispatch.SplitLaunch.combine = saved


def timers(device: str) -> None:
    """TIMER_CASES' splits as run and combined through a copy, and torch.compile, as shares of a
    plain read under each timer (on CPU: both combines checked against torch, nothing timed)."""
    from benchmarks.axis_reductions import TIMERS

    cases = SMOKE_CASES if device == "cpu" else TIMER_CASES
    inputs = [torch.randn(shape, device=device).to(dtype) for shape, dtype in cases]
    functions = [row_sum(x, True)[0] for x in inputs]  # checked as run
    for x, fn in zip(inputs, functions):
        out = torch.full(x.shape[:-1], float("nan"), dtype=x.dtype, device=device)  # what no combine wrote
        with combined_through_a_copy():
            check_against(x.float().sum(-1), fn(x, out0=out).float(), "combined through a copy", 2e-2, 2e-1)
    print(f"{len(inputs)} cases, combined as run and through a copy, give torch's answer", flush=True)
    if device == "cpu":
        return
    print("| case | timer | plain read GB/s | as run | combined through a copy | torch.compile |\n|---|---|---|---|---|---|")
    for x, fn in zip(inputs, functions):
        compiled = torch_compiled(lambda t: t.sum(-1))
        compiled(x)
        for timer, rate in TIMERS.items():
            plains, shares = [], [[] for _ in range(3)]
            for _ in range(ROUNDS):
                plains.append(read_ceiling(x, rate))
                shares[0].append(rate(nbytes(x), fn, x) / plains[-1])
                with combined_through_a_copy():
                    shares[1].append(rate(nbytes(x), fn, x) / plains[-1])
                shares[2].append(rate(nbytes(x), compiled, x) / plains[-1])
            cells = " | ".join(f"{statistics.median(s):.3f}" for s in shares)
            name = f"{tuple(x.shape)} {str(x.dtype)[6:]}"
            print(f"| {name} | {timer.split(',')[0]} | {statistics.median(plains):.0f} | {cells} |", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--grid", action="store_true", help="GRID's shapes split always against never")
    mode.add_argument("--grid-timers", action="store_true", help="TIMED_GRID's shapes split always and never, three timers")
    mode.add_argument("--timers", action="store_true", help="TIMER_CASES under three timers")
    mode.add_argument("--short", action="store_true", help="SHORT's shapes split against unsplit")
    mode.add_argument("--pairs", action="store_true", help="PAIR_CASES split into 2048-256 (row, part) pairs")
    mode.add_argument("--columns", action="store_true", help="COLUMN_CASES' column sums split and unsplit")
    smoke_arguments(parser)
    args = parser.parse_args(argv)
    if args.grid:
        grid()
        return 0
    modes = {"timers": timers, "grid_timers": grid_timers, "short": short, "pairs": pairs, "columns": columns}
    chosen = [mode for name, mode in modes.items() if getattr(args, name)]
    if chosen:
        if smoke_run(args, "split_reductions") is None:
            return 2
        chosen[0](args.device)
        return 0
    smoke = smoke_run(args, "split_reductions")
    if smoke is None:
        return 2
    inputs = [torch.randn(shape, device=args.device).to(dtype) for shape, dtype in (SMOKE_CASES if smoke else CASES)]
    checked = [(x, row_sum(x, True), row_sum(x, False)) for x in inputs]
    parts = ", ".join(f"{tuple(x.shape)} in {split[1]}" for x, split, _ in checked)
    print(f"{len(checked)} cases, split ({parts}) and unsplit, give torch's answer", flush=True)
    if smoke:
        return 0
    for x, (split_fn, parts), (unsplit_fn, _) in checked:
        read = x.numel() * x.element_size()
        with splitting(True):
            a = gbps(read, lambda: split_fn(x))
        with splitting(False):
            b = gbps(read, lambda: unsplit_fn(x))
        eager = gbps(read, lambda: x.sum(-1))
        row = f"| {tuple(x.shape)} {str(x.dtype)[6:]} | split {parts}: {a:.0f} | unsplit: {b:.0f}"
        print(f"{row} | eager {eager:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
