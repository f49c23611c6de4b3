"""The scheme registry: every scheme's arithmetic agrees with itself and with what codegen emits."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tritonwise.analysis.plan import analyze
from tritonwise.config import CodeGenConfig
from tritonwise.schemes import SCHEMES, choose_scheme, get_scheme

CONFIG = CodeGenConfig()


def test_lookup_names_the_known_schemes():
    assert set(SCHEMES) >= {"flat", "nd", "tile2d"}
    with pytest.raises(ValueError, match="unknown tiling scheme 'diagonal'.*flat"):
        get_scheme("diagonal")


def test_every_task_gets_a_scheme_that_applies():
    assert choose_scheme((), []).name == "flat"
    assert choose_scheme((4, 5), [(5, 1)]).name == "nd"
    assert choose_scheme((4, 5), [(5, 1), (1, 4)]).name == "tile2d"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 300), min_size=1, max_size=4),
    st.sampled_from(["row", "transposed", "broadcast"]),
    st.sampled_from([1, 2, 4, 8]),
)
def test_tile_count_and_index_values_agree(shape, layout, itemsize):
    """The plan's tile count is the scheme's `num_tiles` count, every tile is needed (the last
    one along each tiled dim is partly used), and launch values match the parameter list."""
    shape = tuple(shape)
    row = _contiguous(shape)
    other = {"row": row, "transposed": _contiguous(shape[::-1])[::-1], "broadcast": (0,) * (len(shape) - 1) + (1,)}
    plan = analyze([(shape, row), (shape, other[layout])], [None], itemsize, CONFIG)
    scheme, tiling = get_scheme(plan.tiling.scheme), plan.tiling
    counts = scheme.counts(plan.task_shape, tiling.m_dim, tiling.block) if plan.task_shape else {"num_tiles": 1}
    assert plan.num_tiles == counts["num_tiles"]
    assert plan.num_tiles * max(1, _prod(tiling.block)) >= _prod(plan.task_shape)
    classes = [(f"op{k}", c) for k, c in enumerate(plan.stride_classes)]
    params = scheme.index_params(plan.rank, tiling.m_dim, classes)
    values = scheme.index_values(plan.task_shape, tiling.m_dim, tiling.block, classes, plan.strides)
    assert len(params) == len(values)
    for name, value in zip(params, values):
        if name.startswith("size"):
            assert value == plan.task_shape[int(name[4:])]
        elif "_stride" in name:
            operand, dim = name.split("_stride")
            assert value == plan.strides[int(operand[2:])][int(dim)]
        else:
            assert value == counts[name]


def _contiguous(shape) -> tuple:
    return tuple(_prod(shape[d + 1 :]) for d in range(len(shape)))


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out
