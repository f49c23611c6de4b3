"""One tile a program against the grid-stride tile loop, on the same generated file and grid.

    python -m benchmarks.tile_loop [--rounds 3]

The evidence of Scheme.always_loops_tiles (docs/decisions/one-tile-a-program.md). Each case's
kernel runs as launched, with GRID_STRIDE off (a grid covering every tile compiles no loop), and
with GRID_STRIDE forced on (the loop compiled, each program taking one pass), alternated in rounds
under the timers of axis_reductions.py. Both are checked against torch first. tile2d, which always
loops, has no GRID_STRIDE: its one tile a program is a copy of the file with the loop's line
replaced by `tile = pid`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import types

import torch
import triton

from benchmarks import payloads
from benchmarks.axis_reductions import TIMERS, _identity, _reducer, _square
from benchmarks.harness import check_against, header, nbytes, report

sum_last, sum_sq_last = _reducer(_identity, ("sum", -1)), _reducer(_square, ("sum", -1))
max_dim0, sum_0_2 = _reducer(_identity, ("max", 0)), _reducer(_identity, ("sum", (0, 2)))


def cases() -> list:
    """(name, function, inputs, given outputs, torch expression) of each case."""
    randn = lambda *shape, dtype=torch.float32: torch.randn(*shape, device="cuda", dtype=dtype)  # noqa: E731
    add, copy = payloads.add, payloads.copy
    return [
        ("tile2d: transpose copy 8191x8193", copy, (randn(8193, 8191).t(),), {"out0": randn(8191, 8193)}, torch.clone),
        ("tile2d: transpose copy 8192^2", copy, (randn(8192, 8192).t(),), {"out0": randn(8192, 8192)}, torch.clone),
        ("tile2d: add, one transposed 8191x8193", add, (randn(8191, 8193), randn(8193, 8191).t()), {}, torch.add),
        ("nd: add + row 8191x8193", add, (randn(8191, 8193), randn(8193)), {}, torch.add),
        ("nd: add + row 8192^2", add, (randn(8192, 8192), randn(8192)), {}, torch.add),
        ("nd: add, sliced rows 8192x8000", add, (randn(8192, 8192)[:, :8000], randn(8000)), {}, torch.add),
        ("row_persistent: sum(x, -1) bf16 16384x128", sum_last, (randn(16384, 128, dtype=torch.bfloat16),), {}, None),
        ("row_persistent: sum(x, -1) fp32 8191x1000", sum_last, (randn(8191, 1000),), {}, None),
        ("row_looped: sum(x, -1) bf16 128x16384", sum_last, (randn(128, 16384, dtype=torch.bfloat16),), {}, None),
        ("row_looped: sum(x*x, -1) fp32 8192^2", sum_sq_last, (randn(8192, 8192),), {}, None),
        ("row_looped: sum(x, (0, 2)) fp32 64x4096x64", sum_0_2, (randn(64, 4096, 64),), {}, None),
        ("column_looped: amax(x, 0) fp32 8192^2", max_dim0, (randn(8192, 8192),), {}, None),
    ]


LOOP_LINE = "    for tile in range(pid, num_tiles, tl.num_programs(0)):\n"


def one_tile_copy(plan):
    """The launch of a copy of a tile2d file whose programs each run one tile, without the loop."""
    text = open(plan.path).read()
    assert text.count(LOOP_LINE) == 1, plan.path
    module = types.ModuleType("one_tile_copy")
    exec(compile(text.replace(LOOP_LINE, "    tile = pid\n    if tile < num_tiles:\n"), plan.path, "exec"), module.__dict__)
    return module.launch


def variants(fn, args: tuple, outs: dict) -> tuple:
    """(bytes moved, {label: call(x)}) of the case's kernel with one tile a program and with the
    loop; call(x) runs it with x in place of the first input (the back-to-back timer rotates copies)."""
    given = fn.outputs(outs)
    plan = fn.plan(args, given, collapse=True)
    values = list(plan.kernel_values(args, given))
    result = values[len(args)]  # the first output (a reduction's along dims: its values in task order)
    moved = nbytes(*args) + (0 if fn in (sum_last, sum_sq_last, max_dim0, sum_0_2) else nbytes(result))

    def call_with(launch, tail: tuple):
        def call(x):
            launch(plan.grid, x, *values[1 : len(values) - len(plan.constexprs)], *tail, plan.num_warps)
            return result

        return call

    block = plan.constexprs[:2]
    if plan.spec.scheme == "tile2d":
        one, loop = call_with(one_tile_copy(plan), block), call_with(plan.launch, block)
    else:
        assert plan.constexprs == (*block, False), plan.constexprs
        one, loop = call_with(plan.launch, (*block, False)), call_with(plan.launch, (*block, True))
    return moved, {"one tile a program": one, "tile loop": loop}


def case_rows(name, fn, args, outs, expr, rounds: int) -> list:
    moved, calls = variants(fn, args, outs)
    expected = fn(*args, **outs).float() if expr is None else expr(*args)
    for label, call in calls.items():
        got = call(args[0]).float().reshape(expected.shape)
        check_against(expected.float(), got, f"{name}, {label}", 2e-2, 2e-1)
    rows = []
    for timer, rate in TIMERS.items():
        if len(args) > 1 and timer.startswith("back"):
            continue  # the rotation copies the first input only
        times = {label: [] for label in calls}
        for _ in range(rounds):
            for label, call in calls.items():
                times[label].append(rate(moved, call, args[0]))
        one, loop = (statistics.median(v) for v in times.values())
        rows.append(f"| {name} | {timer.split(',')[0]} | {one:.0f} | {loop:.0f} | {one / loop:.3f} |")
        print(rows[-1], flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("tile_loop needs a CUDA GPU", file=sys.stderr)
        return 2
    lines = ["| case | timer | one tile a program GB/s | tile loop GB/s | ratio |", "|---|---|---|---|---|"]
    for case in cases():
        lines += case_rows(*case, args.rounds)
    report(header() + f"\nTriton {triton.__version__}; medians of {args.rounds} alternated rounds\n\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
