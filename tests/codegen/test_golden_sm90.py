"""Every golden case compiles for an H100 (sm_90) with Triton's real compiler, on this CPU machine.

The CPU suite runs kernels in Triton's interpreter, which accepts code the GPU compiler rejects;
compiling the representative generated files (tests/golden) all the way to a cubin here catches
generated code that would only fail on a GPU.
"""

import re

import pytest
import torch

from tests.golden.golden_cases import cases
from tests.support.sm90_compile import compile_for_sm90

CASES = cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_case_compiles_for_sm90(name):
    fn, args, outs = CASES[name]
    compiled = compile_for_sm90(fn, *args, **outs)
    assert compiled.asm["cubin"], name
    assert compiled.metadata.name.startswith(fn.explain(*args, **outs).kernel)


def _loops(fn, args) -> int:
    return compile_for_sm90(fn, *args).asm["ttir"].count("scf.for")


@pytest.mark.parametrize(
    "reductions, args, scheme",
    [
        (None, lambda: (torch.ones(40, 32)[:, :24], torch.ones(24)), "nd"),
        (None, lambda: (torch.ones(40, 24), torch.ones(24, 40).t()), "tile2d"),
        ([("sum", -1)], lambda: (torch.ones(40, 24), torch.ones(24)), "row_persistent"),
        ([("max", -1)], lambda: (torch.ones(40, 1500), torch.ones(1500)), "row_looped"),
        ([("max", 0, True)], lambda: (torch.ones(1500, 40), torch.ones(40)), "column_looped"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_tile_loop_is_compiled_only_where_the_grid_is_capped(reductions, args, scheme):
    """GRID_STRIDE (templates/tile_loop.py.j2): a grid covering every tile compiles no loop over
    tiles; capped below the tile count (CodeGenConfig.max_grid_size), the same file loops. tile2d
    loops in both (Scheme.always_loops_tiles)."""
    from tests.golden.golden_cases import add
    from tritonwise import CodeGenConfig, pointwise_dynamic

    def function(**config):
        config = CodeGenConfig(max_tile_size=256, **config)
        return pointwise_dynamic(add, promotion_methods=[(0, 1, "DEFAULT")], reductions=reductions, config=config)

    whole, capped, args = function(), function(max_grid_size=(2,)), args()
    assert whole.explain(*args).scheme == capped.explain(*args).scheme == scheme
    assert whole.explain(*args).grid[0] > 2
    assert _loops(capped, args) == _loops(whole, args) + (scheme != "tile2d")


@pytest.mark.parametrize("name", ["row_persistent_sum_f16", "row_looped_sum_02_int64"])
def test_a_column_split_over_reduced_dims_divides_unsigned(name):
    """schemes/nd.py decompose, unsigned_bits: the reduced dims' indices come from an unsigned
    quotient and a multiply-subtract, with no signed division or remainder
    (docs/decisions/column-split.md); row_looped's where its innermost reduced extent (4096 here)
    is not compiled in."""
    fn, args, outs = CASES[name]
    assert fn.explain(*args, **outs).inner_extent == 0
    ttir = compile_for_sm90(fn, *args, **outs).asm["ttir"]
    assert "arith.divui" in ttir and "arith.remsi" not in ttir and "arith.remui" not in ttir


def test_an_innermost_reduced_extent_of_16_is_compiled_in_and_divides_nothing():
    """RowLooped.inner_extent: a (0, 2) sum of 128x64x16 compiles its innermost reduced extent in
    (INNER_EXTENT), and its kernel then holds no division or remainder instruction at all: the
    split shifts (docs/decisions/inner-extent.md)."""
    fn, x = _identity_reduced(("sum", (0, 2))), torch.zeros(128, 64, 16)
    plan = fn.explain(x)
    assert plan.scheme == "row_looped" and plan.inner_extent == 16
    assert not re.search(r"\b(div|rem)\.", compile_for_sm90(fn, x).asm["ptx"])


def _identity_reduced(entry):
    from tests.golden.golden_cases import square
    from tritonwise import pointwise_dynamic

    return pointwise_dynamic(square, promotion_methods=[(0, "DEFAULT")], reductions=[entry])


@pytest.mark.parametrize(
    "entry, shape, scheme",
    [
        (("sum", (0, 2)), (8, 64, 512), "row_looped"),
        (("sum", -1), (64, 4160), "row_looped"),  # its last 64 columns in a block of 256
        (("sum", (0, 2)), (5, 64, 48), "row_persistent"),
        (("sum", -1), (8, 2**16), "row_persistent"),  # split in parts: a partial buffer of 8 rows
        (("sum", -1), (2**17,), "row_persistent"),  # split, and one row: a filler row stride
        (("max", 0), (3, 2048, 64), "column_looped"),
    ],
    ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) and isinstance(v[0], int) else None,
)
def test_an_aligned_reduction_loads_16_bytes_at_a_time(entry, shape, scheme):
    """Scheme.aligned_dims and aligned_operands: a reduction along dims is in the aligned class when
    the extents its loads run along and its inputs' strides are multiples of 16, whatever its
    other extents (a first reduced one of 8 or 5; a reduced 3 under column_looped), its
    outputs' strides (a split's partial buffer of 8 rows) and a row count of 1; compiled with the launcher's
    specialization, every load of its fp32 input is then 16 bytes wide. (A row_looped file whose
    last columns take a narrow block, docs/decisions/row-looped-rest.md, spreads fewer than four
    of them a lane: its predicated loads, those columns' alone there, are left out.)"""
    fn, x = _identity_reduced(entry), torch.zeros(shape)
    plan = fn.explain(x)
    assert plan.scheme == scheme and plan.aligned
    ptx = compile_for_sm90(fn, x, specialized=True).asm["ptx"]
    narrow = scheme == "row_looped" and plan.rest_block < plan.block[1]
    found = re.findall(r"(@!?%p\d+ )?(ld\.global\S*)", ptx)
    loads = {load for predicate, load in found if not (predicate and narrow)}
    assert loads and all(".v4." in load for load in loads), loads


@pytest.mark.parametrize(
    "shape, pipelined",
    [((2048, 8), False), ((4096, 2), False), ((16384, 8), False), ((2048, 12), False), ((2048, 40), False),
     ((3, 2048, 64), True), ((2048, 64), True)],
    ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else None,
)
def test_column_loops_pipeline_only_in_the_aligned_class(shape, pipelined):
    """ColumnLooped.pipelines_unaligned: a file of the aligned class pipelines its loop over the
    reduced dim (asynchronous copies into shared memory); an unaligned one, whose loads are 4
    bytes wide (narrow tiles, runs of 12 or 40, split in parts or not), runs a plain loop, which
    read faster (docs/decisions/column-looped-tile.md)."""
    fn, x = _identity_reduced(("sum", 0)), torch.zeros(shape)
    plan = fn.explain(x)
    assert plan.scheme == "column_looped" and plan.aligned == pipelined, plan
    ttgir = compile_for_sm90(fn, x, specialized=True).asm["ttgir"]
    assert ("async_copy_global_to_local" in ttgir) == pipelined


@pytest.mark.parametrize("shape, aligned", [((64, 65536), True), ((64, 65537), False)])
def test_few_long_rows_pipeline_in_both_classes(shape, aligned):
    """RowLooped.pipelined_from and pipelines_unaligned: few rows of 65536 or more take a block of
    8192 columns whose loop pipelines, in the unaligned class too where its rows are read from
    their start (two inputs vary along them; docs/decisions/row-looped-pipelining.md). Rows read
    rotated take (1, 2048) instead (RowLooped.peeled_blocks)."""
    from tests.golden.golden_cases import add
    from tritonwise import pointwise_dynamic

    fn = pointwise_dynamic(add, promotion_methods=[(0, 1, "DEFAULT")], reductions=[("sum", -1)])
    x, y = torch.zeros(shape), torch.zeros(shape[-1])
    plan = fn.explain(x, y)
    assert plan.scheme == "row_looped" and plan.block == (1, 8192) and plan.aligned == aligned, plan
    assert "async_copy_global_to_local" in compile_for_sm90(fn, x, y, specialized=True).asm["ttgir"]
    rotated = _identity_reduced(("sum", -1))
    assert rotated.explain(x).block == ((1, 8192) if aligned else (1, 2048))


@pytest.mark.parametrize("dtype, width", [(torch.float32, "v4.b32"), (torch.bfloat16, "v2.b32")])
def test_rows_starting_anywhere_load_whole_blocks_16_bytes_a_lane(dtype, width, monkeypatch):
    """RowLooped.peel_operand: few rows of an odd length, one row of 2048 a program on 16 warps
    (4 elements a lane), read from their first 16-byte boundary, load their whole blocks 4
    elements at a time; read from their start, every load is one element wide."""
    from tritonwise.schemes.row_looped import RowLooped

    def load_widths():
        fn, x = _identity_reduced(("sum", -1)), torch.zeros(17, 4099, dtype=dtype)
        plan = fn.explain(x)
        assert (plan.scheme, plan.block, plan.aligned) == ("row_looped", (1, 2048), False), plan
        ptx = compile_for_sm90(fn, x, specialized=True).asm["ptx"]
        return set(re.findall(r"ld\.global\S*?\.((?:v\d\.)?b\d+)\s", ptx))  # "v4.b32", "b16"

    assert width in load_widths()
    monkeypatch.setattr(RowLooped, "peels_rows", False)
    assert not any(w.startswith("v") for w in load_widths())
