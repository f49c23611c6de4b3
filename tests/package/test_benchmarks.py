"""The benchmarks check against torch before they time: the shared check, every script importing
without a GPU, and the scripts with a CPU path run on small inputs, as they are and with a wrong
answer planted, which must stop them (an exception, so a non-zero exit)."""

from __future__ import annotations

import importlib
import math
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import triton

import benchmarks
from benchmarks import (
    axis_reductions,
    bench,
    cold_start,
    column_split,
    column_tiles,
    dtensor_scaling,
    harness,
    narrow_columns,
    new_shape,
    odd_rows,
    payloads,
    row_counts,
    split_reductions,
)
from benchmarks.harness import RECOMPILES, WrongAnswer, check_against, mismatch, torch_compiled
from tests.support.paths import ROOT
from tritonwise import pointwise_dynamic

SCRIPTS = sorted(module.name for module in pkgutil.iter_modules(benchmarks.__path__))


@triton.jit
def _subtract(x, y):
    return x - y


@triton.jit
def _subtract_alpha(x, y, alpha):
    return x - y * alpha


@triton.jit
def _doubled(x):
    return x + x


@triton.jit
def _identity(x):
    return x


def wrong_add():
    """An add that subtracts: a wrong answer of the same shape and dtype."""
    return pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])(_subtract)


# ---------------------------------------------------------------------------------------------
# The shared check


def test_check_against_accepts_torchs_answer():
    x = torch.randn(3, 5)
    nan = torch.full((2,), float("nan"))
    check_against((x + 1, x.sum(), nan), (x + 1, x.sum(), nan.clone()), "three outputs")
    assert mismatch(x.sum(), x.sum() * (1 + 1e-6), "a sum in another order") is None


def _with(index: tuple, value: float) -> torch.Tensor:
    got = torch.arange(6.0).reshape(2, 3)
    got[index] = value
    return got


@pytest.mark.parametrize(
    "got, what",
    [
        (_with((1, 2), 7.0), "a value"),
        (_with((0, 0), float("nan")), "NaN where torch has a number"),
        (torch.arange(6.0).reshape(3, 2), "the shape"),
        (torch.arange(6.0, dtype=torch.float64).reshape(2, 3), "the dtype"),
        ((torch.arange(6.0).reshape(2, 3),), "one output of two"),
    ],
)
def test_check_against_names_the_case_of_a_wrong_answer(got, what):
    expected = torch.arange(6.0).reshape(2, 3)
    expected = (expected, expected) if what == "one output of two" else expected
    with pytest.raises(WrongAnswer, match="^the case: wrong answer against torch"):
        check_against(expected, got, "the case")


# ---------------------------------------------------------------------------------------------
# The package


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_benchmark_imports_without_a_gpu(name, monkeypatch):
    monkeypatch.delenv("TRITONWISE_ATEN", raising=False)  # host_overhead sets it; restored after
    importlib.import_module(f"benchmarks.{name}")


def test_no_benchmark_edits_sys_path():
    edits = [path.name for path in (ROOT / "benchmarks").glob("*.py") if "sys.path" in path.read_text()]
    assert not edits


def test_torch_compiled_compiles_every_shape_of_one_expression(monkeypatch):
    """A benchmark compiles one lambda per case; past Dynamo's default limit (8) the peer it
    times would be eager. Counted by a backend that records each graph Dynamo hands it."""
    from torch._dynamo.testing import CompileCounter

    for flag in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, flag):
            monkeypatch.setattr(torch._dynamo.config, flag, 8)
    shapes = 12
    counter = CompileCounter()
    for n in range(1, shapes + 1):
        compiled = torch_compiled(lambda t: t.sum(-1), backend=counter, dynamic=False)
        torch.testing.assert_close(compiled(torch.ones(n)), torch.tensor(float(n)))
    assert counter.frame_count == shapes <= RECOMPILES


# ---------------------------------------------------------------------------------------------
# The scripts with a CPU path: small inputs, checks only


@pytest.mark.parametrize(
    "main, argv",
    [
        (bench.main, ["--device", "cpu"]),
        (axis_reductions.main, ["--device", "cpu"]),
        (split_reductions.main, ["--device", "cpu"]),
        (split_reductions.main, ["--grid-timers", "--device", "cpu"]),
        (split_reductions.main, ["--pairs", "--device", "cpu"]),
        (split_reductions.main, ["--columns", "--device", "cpu"]),
        (new_shape.main, ["--device", "cpu", "--shapes", "2"]),
        (column_split.main, ["--device", "cpu"]),
        (column_tiles.main, ["--device", "cpu"]),
        (narrow_columns.main, ["--device", "cpu"]),
        (odd_rows.main, ["--device", "cpu"]),
        (row_counts.main, ["--device", "cpu"]),
    ],
    ids=[
        "bench",
        "axis_reductions",
        "split_reductions",
        "split_reductions --grid-timers",
        "split_reductions --pairs",
        "split_reductions --columns",
        "new_shape",
        "column_split",
        "column_tiles",
        "narrow_columns",
        "odd_rows",
        "row_counts",
    ],
)
def test_a_smoke_run_checks_every_case_and_passes(main, argv, capsys):
    assert main(argv) == 0
    assert "give torch's answer" in capsys.readouterr().out


def test_bench_stops_at_a_planted_wrong_answer(monkeypatch):
    monkeypatch.setattr(payloads, "add", wrong_add())
    with pytest.raises(WrongAnswer, match="add fp32 contiguous"):
        bench.main(["--device", "cpu", "--only", "add fp32 contiguous"])


def test_axis_reductions_stop_at_a_planted_wrong_answer(monkeypatch):
    sums_not_squares = pointwise_dynamic(_identity, promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)])
    monkeypatch.setattr(axis_reductions, "sum_sq_last", sums_not_squares)
    with pytest.raises(WrongAnswer, match=r"sum\(x\*x, -1\)"):
        axis_reductions.main(["--device", "cpu"])


@pytest.mark.parametrize(
    "mode", [[], ["--grid-timers"], ["--pairs"], ["--columns"]], ids=["default", "grid-timers", "pairs", "columns"]
)
def test_split_reductions_stop_at_a_planted_wrong_answer(mode, monkeypatch):
    monkeypatch.setattr(split_reductions, "ident", _doubled)
    with pytest.raises(WrongAnswer, match="split"):
        split_reductions.main([*mode, "--device", "cpu"])


def test_split_reductions_timers_stop_at_a_planted_wrong_combine(monkeypatch):
    assert split_reductions.main(["--timers", "--device", "cpu"]) == 0
    monkeypatch.setattr(split_reductions, "_combined_through_a_copy", lambda split, partials, outputs: None)
    with pytest.raises(WrongAnswer, match="combined through a copy"):
        split_reductions.main(["--timers", "--device", "cpu"])


def test_narrow_columns_stop_at_a_planted_wrong_answer_and_time_two_tilings(monkeypatch):
    x = torch.randn(16384, 32)
    plans = {form: narrow_columns.column_sum(x, form)[1] for form in narrow_columns.FORMS}
    assert {form: plan.split_parts for form, plan in plans.items()} == {
        "as generated": 16, "wide tiles": 16, "rows by element": 1, "unsplit": 1, "split however small": 16,
        "pipelined when unaligned": 16, "narrow tiles counted as wide": 16, "wide tiles in any parts": 16,
    }
    assert all(plan.rung == "plan cache" for plan in plans.values())  # what the timed calls take
    narrow = torch.randn(2048, 8)
    plans = {form: narrow_columns.column_sum(narrow, form)[1] for form in narrow_columns.FORMS}
    assert [plans[form].block for form in ("as generated", "wide tiles")] == [(8, 1024), (16, 512)]
    assert plans["rows by element"].split_parts == plans["split however small"].split_parts == 2
    assert plans["as generated"].split_parts == 1
    with narrow_columns.FORMS["pipelined when unaligned"]():  # the file the form writes pipelines
        inside = narrow_columns.column_sum(narrow, "as generated")[0].explain(narrow)
        assert "num_stages=3)" in Path(inside.path).read_text()
    fn, inside = narrow_columns.column_sum(narrow, "pipelined when unaligned")
    cached = lambda: {str(plan.path) for plan in fn.plan_cache.by_key.values()}  # noqa: E731
    assert cached() == {inside.path} and not Path(inside.path).exists()  # loaded, its directory gone
    check_against(narrow.sum(0), fn(narrow), "pipelined when unaligned, after the form")  # a timed call
    assert cached() == {inside.path}  # served by what the form loaded
    monkeypatch.setattr(narrow_columns, "ident", _doubled)
    with pytest.raises(WrongAnswer, match="as generated"):
        narrow_columns.main(["--device", "cpu"])


def test_column_tiles_times_both_wide_tiles_and_stops_at_a_planted_wrong_answer(monkeypatch):
    x = torch.randn(65, 16384).to(torch.bfloat16)
    assert [plan.block[0] for _, plan in column_tiles.forms(x).values()] == [64, 128]
    assert [plan.block[0] for _, plan in column_tiles.forms(x.float()).values()] == [128, 64]
    monkeypatch.setattr(split_reductions, "ident", _doubled)
    with pytest.raises(WrongAnswer, match="the rule"):
        column_tiles.main(["--device", "cpu"])


def test_odd_rows_stop_at_a_planted_wrong_answer_and_time_both_forms(monkeypatch):
    """The two forms run different files: rows read rotated and rows read from their start (whose
    directory is gone after its form); each form's timed call finds its own plan."""
    x = torch.randn(5, 4099)
    plans = {form: odd_rows.row_sum(x, form)[1] for form in odd_rows.FORMS}
    assert [plans[form].block for form in odd_rows.FORMS] == [(1, 2048), (1, 2048)]
    assert "in0_row = tl.multiple_of(" in Path(plans["as generated"].path).read_text()
    assert not Path(plans["from their start"].path).exists()
    assert all(plan.rung == "plan cache" for plan in plans.values())
    monkeypatch.setattr(odd_rows, "ident", _doubled)
    with pytest.raises(WrongAnswer, match="as generated"):
        odd_rows.main(["--device", "cpu"])


def test_row_counts_time_each_form_of_one_file(monkeypatch):
    """The three forms run one file: the row's count of whole blocks compiled in and its last
    columns read 256 at a time; the count with a whole last block; neither. Each form's timed
    call finds its own plan; a wrong payload stops the run."""
    x = torch.randn(3, 6160)
    plans = {form: row_counts.row_sum(x, form)[1] for form in row_counts.FORMS}
    assert [(p.compiled_blocks, p.rest_block) for p in plans.values()] == [(3, 256), (3, 2048), (0, 2048)]
    assert len({p.path for p in plans.values()}) == 1
    assert all(plan.rung == "plan cache" for plan in plans.values())
    monkeypatch.setattr(row_counts, "ident", _doubled)
    with pytest.raises(WrongAnswer, match="as generated"):
        row_counts.main(["--device", "cpu"])


def test_new_shape_stops_at_a_planted_wrong_answer(monkeypatch):
    monkeypatch.setattr(new_shape, "add", wrong_add())
    with pytest.raises(WrongAnswer, match="add 1-D"):
        new_shape.main(["--device", "cpu", "--shapes", "2"])


def test_column_split_stops_at_a_planted_wrong_form(monkeypatch):
    """Each form runs in a copy of its own: a copy reading half of each run twice must fail."""
    halved = "{indent}j{quot} = cols // size{dim}\n{indent}j{rest} = cols % size{dim} // 2\n"
    monkeypatch.setitem(column_split.FORMS, "signed division and remainder", halved)
    with pytest.raises(WrongAnswer, match="signed division and remainder"):
        column_split.main(["--device", "cpu"])


def test_axis_reductions_rounds_start_one_further_along_and_keep_the_ratios_range(monkeypatch):
    """measured_under: each round takes the six measurements from a place one further along, the
    medians stay in their own order, and the rounds' lowest and highest tritonwise / torch.compile
    come next, then those of torch.compile's second timing over its first (the control); the plain
    read's configuration is picked once, before the rounds."""
    taken = []
    times = {"ours": iter([4.0, 6.0, 5.0]), "eager": iter([1.0] * 3),
             "compiled": iter([5.0, 4.0, 5.0, 6.0, 2.0, 3.0]), "read": iter([6.0, 7.0, 8.0])}

    def rate(nbytes, call, x):
        taken.append(call)
        return next(times[call])

    monkeypatch.setattr(axis_reductions, "best_plain_read", lambda x, rate: taken.append("pick") or "read")
    monkeypatch.setattr(axis_reductions, "read_ceiling", lambda x, rate: taken.append("best") or 9.0)
    case = axis_reductions.Case("c", 1, None, None)
    measured = axis_reductions.measured_under(rate, case, "ours", torch.zeros(2), "eager", "compiled", rounds=3)
    assert taken == ["pick", "ours", "eager", "compiled", "read", "best", "compiled"] + [
        "eager", "compiled", "read", "best", "compiled", "ours"] + ["compiled", "read", "best", "compiled", "ours", "eager"]
    # rounds: ours 4, 6, 5; torch.compile first 5, 5, 2 and timed again 4, 6, 3
    assert measured == (5.0, 1.0, 5.0, 7.0, 9.0, (0.8, 2.5), (0.8, 1.5))


def test_axis_reductions_without_torch_compile_leaves_both_ranges_nan(monkeypatch):
    """measured_under with no compiled function (--no-compile): neither of torch.compile's two
    timings calls the timer, and both ranges over them are NaN."""
    def rate(nbytes, call, x):
        assert call is not None, "torch.compile's timing reached the timer without a function"
        return 2.0

    monkeypatch.setattr(axis_reductions, "best_plain_read", lambda x, rate: "read")
    monkeypatch.setattr(axis_reductions, "read_ceiling", lambda x, rate: 3.0)
    case = axis_reductions.Case("c", 1, None, None)
    *medians, ratios, control = axis_reductions.measured_under(rate, case, "ours", torch.zeros(2), "eager", None, 2)
    assert medians[:2] == [2.0, 2.0] and math.isnan(medians[2]) and medians[3:] == [2.0, 3.0]
    assert all(math.isnan(v) for v in ratios + control)


def test_axis_reductions_tables_put_each_figure_in_its_column(monkeypatch):
    """timer_table: the ratios' range, then the control's, last; target_table: the plain read's
    time, not the best of five plain reads'."""
    row = ("case", 2**20, 100.0, 50.0, 80.0, 200.0, 400.0, (0.9, 1.1), (0.8, 1.2))
    table = axis_reductions.timer_table("flush", 1000.0, [row]).splitlines()
    assert table[-1].split(" | ")[-2:] == ["0.900–1.100", "0.800–1.200 |"]
    monkeypatch.setattr(axis_reductions, "empty_kernel", lambda device: None)
    monkeypatch.setattr(axis_reductions, "do_bench_us", lambda fn: 4.0)
    monkeypatch.setattr(axis_reductions, "gpu_us_per_kernel", lambda fn: 1.0)
    cells = axis_reductions.target_table(1000.0, [row]).splitlines()[-1].split(" | ")
    assert cells[3:5] == [f"{axis_reductions.us_at(2**20, 100.0):.1f}", f"{axis_reductions.us_at(2**20, 200.0):.1f}"]


def test_the_plain_read_picked_is_the_configuration_of_the_highest_median(monkeypatch):
    """best_plain_read: each configuration timed `samples` times; the one of the highest median
    wins, not the one of the highest single timing."""
    timings = {(2048, 16): [9.0, 1.0, 1.0], (4096, 16): [3.0, 3.0, 3.0], (4096, 8): [2.0] * 3,
               (8192, 8): [2.0] * 3, (8192, 16): [2.0] * 3}
    reads = {config: f"read {config}" for config in timings}
    monkeypatch.setattr(harness, "plain_reads", lambda x: reads)
    left = {reads[c]: iter(v) for c, v in timings.items()}
    picked = harness.best_plain_read(torch.zeros(4), lambda nbytes, read, x: next(left[read]))
    assert picked == reads[4096, 16]


def test_row_sum_floor_split_whose_last_program_combines_gives_torchs_sums(monkeypatch):
    """The floor's third family, interpreted on CPU: torch's row sums for each of its parts and
    tiles, call after call (the last program resets each ticket it takes)."""
    from triton.runtime.interpreter import InterpretedFunction

    from benchmarks import row_sum_floor
    from tritonwise.runtime.dispatch import INTERPRETER_LOCK
    from tritonwise.runtime.interpreter.interpret import interpreting

    kernel = row_sum_floor._split_last_combines
    monkeypatch.setattr(row_sum_floor, "_split_last_combines", InterpretedFunction(getattr(kernel, "fn", kernel)))
    monkeypatch.setattr(row_sum_floor, "LAST_COMBINES", ((2, 4), (1, 4), (256,), (4,)))
    x = torch.randn(6, 2048).to(torch.bfloat16)
    found = row_sum_floor._last_combines(x, torch.empty(6, dtype=torch.bfloat16))
    assert len(found) == 4
    with INTERPRETER_LOCK, interpreting():
        assert all(row_sum_floor.checked(x, variant) and row_sum_floor.checked(x, variant) for variant in found)


def test_row_sum_floor_keeps_each_familys_best_median_over_alternated_rounds(monkeypatch):
    """floor_rows: one do_bench timing ranks the variants, the best of each family are timed in
    rounds beside tritonwise and one plain read, and a family's row is its best median: "a" won
    the ranking by one fast timing and loses to the steadier "b" in the rounds."""
    from benchmarks import row_sum_floor as floor

    fake = [("one pass", (1, 8), 4, "a", None), ("one pass", (2, 8), 4, "b", None),
            ("split, atomics", (1, 4), 4, "c", None)]
    series = {"a": iter([9.0, 1.0, 1.0, 1.0]), "b": iter([5.0] * 4), "c": iter([3.0] * 4),
              "plain": iter([6.0] * 3), "ours": iter([7.0] * 3)}
    rate = lambda nbytes, call, x: next(series[call if isinstance(call, str) else "ours"])  # noqa: E731
    monkeypatch.setattr(floor, "variants", lambda x: fake)
    monkeypatch.setattr(floor, "checked", lambda x, variant: True)
    monkeypatch.setattr(floor, "sum_last", lambda t: t.sum(-1))
    monkeypatch.setattr(floor, "best_plain_read", lambda x, rate: "plain")
    monkeypatch.setattr(floor, "TIMERS", {"do_bench": rate})
    assert floor.floor_rows(torch.ones(4, 8), rounds=3) == [
        ("4x8", "do_bench", "one pass, tile (2, 8), 4 warps", 5.0),
        ("4x8", "do_bench", "split, atomics, tile (1, 4), 4 warps", 3.0),
        ("4x8", "do_bench", "plain read of the same bytes", 6.0),
        ("4x8", "do_bench", "tritonwise sum(x, -1)", 7.0),
    ]


def _interpreted_axis_floor(monkeypatch):
    """benchmarks.axis_floor with its kernels interpreted and its sweep cut to a few small tiles."""
    from triton.runtime.interpreter import InterpretedFunction

    from benchmarks import axis_floor

    kernels = {key: InterpretedFunction(getattr(k, "fn", k)) for key, k in axis_floor.KERNELS.items()}
    monkeypatch.setattr(axis_floor, "KERNELS", kernels)
    monkeypatch.setattr(axis_floor, "FLAT_TILES", ((1, 32), (2, 64)))
    monkeypatch.setattr(axis_floor, "CUBE_TILES", ((1, 2), (2, 4)))
    monkeypatch.setattr(axis_floor, "WARPS", (4,))
    return axis_floor


@pytest.mark.parametrize("shape", [(4, 16, 8), (3, 10, 6)], ids=["tiles divide", "masked"])
def test_axis_floor_kernels_give_torchs_sums_and_a_planted_narrow_tile_fails(monkeypatch, shape):
    """Every family and form of the (0, 2) floor, interpreted on CPU, sums as torch does, on a
    view whose strides are not its extents' too; a 3-D tile narrower than the last dim (half of
    it, planted) misses columns and fails the check that gates timing."""
    from tritonwise.runtime.dispatch import INTERPRETER_LOCK
    from tritonwise.runtime.interpreter.interpret import interpreting

    floor = _interpreted_axis_floor(monkeypatch)
    x = torch.randn(shape)
    view = torch.randn(shape[0], shape[1] + 3, 2 * shape[2])[:, 1:-2, : shape[2]]
    with INTERPRETER_LOCK, interpreting():
        for t in (x, view):
            found = floor.variants(t)
            assert {v[0] for v in found} == set(floor.FAMILIES) and len(found) == 12
            assert all(floor.checked(t, variant) for variant in found)
        monkeypatch.setattr(floor.triton, "next_power_of_2", lambda n, real=triton.next_power_of_2: real(n) // 2)
        narrow = [v for v in floor.variants(x) if v[0].startswith("3-D")]
        assert not any(floor.checked(x, variant) for variant in narrow)


def test_axis_floor_takes_each_rounds_ratios_against_the_copy_of_torch_compiles_kernel(monkeypatch):
    """floor_rows: the variants screened after a flush, the copy of torch.compile's kernel, each
    family's best and the always-retimed tiles timed in rounds under each timer, and each ratio's
    range taken round by round against that copy."""
    from benchmarks import axis_floor as floor

    def variant(family, tile, how):
        return (family, tile, how, f"{family} {tile} {how}", None)

    fake = [variant(*floor.COMPILED_KERNEL), variant("flat, run time", (1, 1024), "8 warps"),
            variant(*floor.ALWAYS_RETIMED[0]), variant(*floor.ALWAYS_RETIMED[1]),
            variant("3-D, run time", (2, 8), "4 warps")]
    screen = {v[3]: 9.0 - k for k, v in enumerate(fake)}
    rounds = {"plain": iter([10.0, 10.0]), "ours": iter([6.0, 9.0]), "tc": iter([1.0, 1.0]),
              fake[0][3]: iter([8.0, 8.0])}
    rounds.update({v[3]: iter([4.0, 6.0]) for v in fake[1:]})

    def rate(nbytes, call, x):
        return next(rounds[call if isinstance(call, str) else "ours"])

    monkeypatch.setattr(floor, "variants", lambda x: fake)
    monkeypatch.setattr(floor, "checked", lambda x, v: True)
    monkeypatch.setattr(floor, "sum_0_2", lambda t: t.sum((0, 2)))
    monkeypatch.setattr(floor, "best_plain_read", lambda x, rate: "plain")
    monkeypatch.setattr(floor, "TIMERS", {"after a clean L2 flush": lambda n, call, x: screen[call]})
    ranked = floor.screened(torch.ones(2, 3, 4))
    assert [v[3] for _, v in ranked] == [v[3] for v in fake]
    kept = [v[:3] for v in floor.retimed(ranked)]
    assert kept[0] == floor.COMPILED_KERNEL and len(kept) == len(set(kept)) == 5
    monkeypatch.setattr(floor, "screened", lambda x: ranked)
    monkeypatch.setattr(floor, "TIMERS", {"do_bench": rate})
    rows = floor.floor_rows(torch.ones(2, 3, 4), rounds=2, compiled="tc")
    by_name = {row[1]: row[2:] for row in rows}
    assert by_name["plain read of the same bytes"] == (10.0, 1.0, 1.25, 1.25)
    assert by_name["tritonwise sum(x, (0, 2))"] == (7.5, 0.75, 0.75, 1.125)
    assert by_name["torch.compile (its whole call)"][0] == 1.0
    assert by_name["flat, compiled in, tile (1, 2048), 16 warps"] == (8.0, 0.8, 1.0, 1.0)


def test_torch_op_comparison_fails_a_planted_wrong_variant_and_passes_the_others(monkeypatch, capsys):
    from benchmarks import torch_op_vs_triton_op as torch_op  # registers its custom ops

    wrong_silu = pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])(_doubled)
    monkeypatch.setattr(torch_op, "silu", wrong_silu)
    assert torch_op.main(["--device", "cpu", "--no-compile"]) == 1
    lines = [line.split("|") for line in capsys.readouterr().out.splitlines() if line.startswith("| eager")]
    rows = {cells[2].strip(): cells[3].strip() for cells in lines}
    assert rows["tritonwise silu(x)"].startswith("MISMATCH") and rows["torch F.silu"] == "ok", rows


def test_dtensor_scaling_checks_each_shard_and_stops_at_a_planted_wrong_answer(monkeypatch, tmp_path):
    if not dist.is_available():
        pytest.skip("torch without distributed support")
    from torch.distributed.tensor import init_device_mesh

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        mesh = init_device_mesh("cpu", (1,))
        dtensor_scaling.check(dtensor_scaling.cases(24, 40, "cpu", mesh), 24, 40, "cpu")
        wrong = pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])(_subtract_alpha)
        monkeypatch.setattr(dtensor_scaling, "axpy", wrong)
        with pytest.raises(WrongAnswer, match="add fp32"):
            dtensor_scaling.check(dtensor_scaling.cases(24, 40, "cpu", mesh), 24, 40, "cpu")
        assert [name for name, _ in dtensor_scaling.host_costs("cpu", mesh, 1)] == [
            "torch, local", "tritonwise, local", "torch, DTensor", "tritonwise, DTensor"]
        wrong_add = pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])(_subtract)
        monkeypatch.setattr(dtensor_scaling, "add", wrong_add)
        with pytest.raises(WrongAnswer, match="add on DTensors"):
            dtensor_scaling.host_costs("cpu", mesh, 1)
    finally:
        dist.destroy_process_group()


def test_cold_start_exits_non_zero_when_a_first_call_is_wrong(monkeypatch):
    right = dict(first_ms=1.0, second_layout_ms=1.0, import_library_ms=1.0, correct=True)
    wrong = dict(right, correct=False, wrong="tritonwise first call: wrong answer against torch")
    for runs, status in (([right, right], 0), ([right, wrong], 1)):
        children = iter(runs)
        monkeypatch.setattr(cold_start, "run_child", lambda library, env, device: next(children))
        assert cold_start.main(["--libraries", "tritonwise", "--warm-runs", "1", "--device", "cpu"]) == status


PLANTED = """
import sys
from pathlib import Path

import triton

from benchmarks import bench, payloads
from tritonwise import pointwise_dynamic


@triton.jit
def subtract(x, y):
    return x - y


payloads.add = pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])(subtract)
sys.exit(bench.main(sys.argv[1:]))
"""


def test_a_benchmark_with_a_wrong_answer_exits_non_zero(tmp_path):
    script = tmp_path / "planted.py"
    script.write_text(PLANTED)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    argv = ["--device", "cpu", "--only", "add fp32 contiguous"]
    command = [sys.executable, str(script), *argv]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "WrongAnswer: add fp32 contiguous" in done.stderr, done.stderr[-2000:]
