"""tritonwise.analysis: pure Python over shapes and strides (no tensors), and fn.explain()."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from tritonwise import CodeGenConfig, pointwise_dynamic
from tritonwise.analysis.broadcast import broadcast_shapes, broadcast_strides
from tritonwise.analysis.layout import collapse, dense_strides, dim_order
from tritonwise.analysis.plan import analyze
from tritonwise.analysis.tiling import INT32_LIMIT, index_bits

from tests.support import payload_no_tl

CONFIG = CodeGenConfig()


def contiguous(shape):
    return tuple(torch.empty(shape, device="meta").stride())


def plan(*inputs, outputs=(None,), itemsize=4, config=CONFIG):
    return analyze(list(inputs), list(outputs), itemsize, config)


# ---------------------------------------------------------------------------------------------
# broadcast


@pytest.mark.parametrize(
    "shapes, expected",
    [
        ([(4, 5), (5,)], (4, 5)),
        ([(4, 1), (1, 5)], (4, 5)),
        ([(3,), (2, 1, 3), ()], (2, 1, 3)),
        ([(), ()], ()),
        ([(0,), (1,)], (0,)),
        ([(2, 0, 3), (1, 3)], (2, 0, 3)),
        ([(1, 1, 6)], (1, 1, 6)),
        ([], ()),
    ],
)
def test_broadcast_shapes(shapes, expected):
    assert broadcast_shapes(shapes) == expected
    if shapes:
        assert broadcast_shapes(shapes) == tuple(torch.broadcast_shapes(*shapes))


@pytest.mark.parametrize("shapes", [[(3,), (4,)], [(2, 3), (3, 2)], [(0,), (2,)], [(5, 4), (2, 1, 3)]])
def test_broadcast_shapes_error_names_the_shapes(shapes):
    with pytest.raises(RuntimeError) as info:
        broadcast_shapes(shapes)
    for s in shapes:
        assert str(tuple(s)) in str(info.value)


@pytest.mark.parametrize(
    "shape, strides, task_shape, expected",
    [
        ((5,), (1,), (4, 5), (0, 1)),
        ((4, 1), (1, 1), (4, 5), (1, 0)),
        ((4, 5), (5, 1), (2, 4, 5), (0, 5, 1)),
        ((), (), (3, 2), (0, 0)),
        ((4, 5), (1, 4), (4, 5), (1, 4)),
        ((4, 5), (-5, -1), (4, 5), (-5, -1)),
    ],
)
def test_broadcast_strides(shape, strides, task_shape, expected):
    assert broadcast_strides(shape, strides, task_shape) == expected


# ---------------------------------------------------------------------------------------------
# layout


@pytest.mark.parametrize(
    "shape, operands, expected",
    [
        ((4, 5), [(5, 1)], [1, 0]),
        ((4, 5), [(1, 4)], [0, 1]),
        ((2, 3, 4), [(1, 2, 6)], [0, 1, 2]),
        ((2, 3, 4), [(12, 1, 3)], [1, 2, 0]),
        ((4, 5), [(0, 1), (1, 4)], [0, 1]),  # a zero stride says nothing; the next operand decides
        ((4, 5), [(1, 4), (5, 1)], [0, 1]),  # the first operand with an opinion wins
        ((4, 5), [(0, 0)], [1, 0]),  # nothing known: keep C order
    ],
)
def test_dim_order(shape, operands, expected):
    assert dim_order(shape, operands) == expected


@pytest.mark.parametrize(
    "shape, order, expected",
    [
        ((2, 3, 4), [2, 1, 0], (12, 4, 1)),
        ((2, 3, 4), [0, 1, 2], (1, 2, 6)),
        ((2, 3, 4, 5), [1, 3, 2, 0], (60, 1, 15, 3)),  # channels_last
    ],
)
def test_dense_strides(shape, order, expected):
    assert dense_strides(shape, order) == expected


@pytest.mark.parametrize(
    "shape, operands, order, expected",
    [
        ((2, 3, 4), [(12, 4, 1)], [2, 1, 0], ((24,), ((1,),))),
        ((2, 3, 4), [(12, 4, 1), (0, 4, 1)], [2, 1, 0], ((2, 12), ((12, 1), (0, 1)))),
        ((4, 1, 5), [(5, 5, 1)], [2, 1, 0], ((20,), ((1,),))),  # size-1 dims drop out
        ((4, 5), [(5, 1), (1, 4)], [1, 0], ((4, 5), ((5, 1), (1, 4)))),  # nothing merges
        ((4, 5), [(-5, -1)], [1, 0], ((20,), ((-1,),))),  # negative strides merge too
        ((3, 4), [(20, 2)], [1, 0], ((3, 4), ((20, 2),))),  # a gap between rows
    ],
)
def test_collapse(shape, operands, order, expected):
    assert collapse(shape, operands, order) == expected


# ---------------------------------------------------------------------------------------------
# analyze: collapsed task shape, scheme and index width for a table of layouts.

ROW_BCAST = [((4, 5), (5, 1)), ((5,), (1,))]

LAYOUTS = {
    "contiguous 4-d": ([((2, 3, 4, 5), contiguous((2, 3, 4, 5)))] * 2, (120,), "flat", 32),
    "size-1 dims": ([((4, 1, 5), (5, 5, 1))] * 2, (20,), "flat", 32),
    "row broadcast": (ROW_BCAST, (4, 5), "nd", 32),
    "column broadcast": ([((4, 5), (5, 1)), ((4, 1), (1, 1))], (4, 5), "nd", 32),
    "leading broadcast": ([((2, 3, 4), (12, 4, 1)), ((4,), (1,))], (6, 4), "nd", 32),
    "0-d with sized": ([((4, 5), (5, 1)), ((), ())], (20,), "flat", 32),
    "one transposed": ([((4, 5), (5, 1)), ((4, 5), (1, 4))], (4, 5), "tile2d", 32),
    "both transposed": ([((4, 5), (1, 4)), ((4, 5), (1, 4))], (20,), "flat", 32),
    "permuted 3-d vs contiguous": ([((3, 4, 5), (1, 15, 3)), ((3, 4, 5), (20, 5, 1))], (20, 3), "tile2d", 32),
    "permuted 3-d alone": ([((3, 4, 5), (1, 15, 3))] * 2, (60,), "flat", 32),
    "channels_last": ([((2, 3, 4, 5), (60, 1, 15, 3))] * 2, (120,), "flat", 32),
    "sliced with steps": ([((3, 4), (20, 2))], (3, 4), "nd", 32),
    "negative strides": ([((4, 5), (-5, -1))], (20,), "flat", 32),
    "negative outer stride": ([((4, 5), (-5, 1))], (4, 5), "nd", 32),
    "0-d": ([((), ())], (), "flat", 32),
    "just under 2**31 elements": ([((2**31 - 2**16,), (1,))], (2**31 - 2**16,), "flat", 32),
    "2**31 elements": ([((2**31,), (1,))], (2**31,), "flat", 64),
    "2**31 as 2-d": ([((2**16, 2**15), (2**15, 1))], (2**31,), "flat", 64),
    "broadcast to 2**32": ([((2**16, 2**16), (0, 1))], (2**16, 2**16), "nd", 64),
    "few elements, far apart": ([((2, 3), (2**31, 1))], (2, 3), "nd", 64),
    "few elements, near the limit": ([((2, 3), (2**30, 1))], (2, 3), "nd", 32),
}


@pytest.mark.parametrize("inputs, task_shape, scheme, bits", list(LAYOUTS.values()), ids=list(LAYOUTS))
def test_analyze_layouts(inputs, task_shape, scheme, bits):
    p = plan(*inputs)
    assert p.task_shape == task_shape
    assert p.tiling.scheme == scheme
    assert p.index_bits == bits
    assert p.numel == math.prod(p.shape)
    assert len(p.strides) == len(inputs) + 1
    assert all(len(s) == len(task_shape) for s in p.strides)


@pytest.mark.parametrize("inputs", [v[0] for v in LAYOUTS.values()], ids=list(LAYOUTS))
def test_analyze_output_strides_match_torch(inputs):
    """The allocated output's strides, as torch's TensorIterator allocates them (meta tensors)."""
    if any(x < 0 for _, strides in inputs for x in strides):
        pytest.skip("torch tensors have no negative strides")
    metas = [torch.empty_strided(shape, strides, device="meta") for shape, strides in inputs]
    expected = metas[0] + metas[-1]
    assert plan(*inputs).output_strides == (tuple(expected.stride()),)


def test_analyze_given_output_strides_are_kept():
    p = plan(((4, 5), (5, 1)), outputs=[((4, 5), (1, 4))])
    assert p.output_strides == ((1, 4),)
    assert p.tiling.scheme == "tile2d"


def test_analyze_given_output_decides_the_order():
    p = plan(((4, 5), (1, 4)), outputs=[((4, 5), (1, 4))])
    assert p.task_shape == (20,)
    assert p.tiling.scheme == "flat"


def test_analyze_without_collapsing_keeps_every_dim():
    p = analyze([((2, 3, 4), (12, 4, 1))], [((2, 3, 4), (12, 4, 1))], 4, CONFIG, collapse_dims=False)
    assert p.task_shape == (2, 3, 4)
    assert p.rank == 3


def test_analyze_numel_zero_has_no_tiles():
    p = plan(((0, 3), (3, 1)), ((3,), (1,)))
    assert p.numel == 0
    assert p.num_tiles == 0


def test_analyze_grid_and_tile_respect_config():
    config = CodeGenConfig(max_tile_size=16, max_grid_size=(2, 1, 1))
    for inputs in (LAYOUTS["contiguous 4-d"][0], ROW_BCAST, LAYOUTS["one transposed"][0]):
        p = plan(*inputs, config=config)
        assert p.grid[0] <= 2
        assert math.prod(p.tiling.block) <= 16
        assert p.num_tiles >= p.grid[0]


def test_analyze_layout_class_not_exact_shape():
    """Shapes of one layout class give the same code-shaping fields (rank, scheme, bits)."""
    a = plan(((20,), (1,)), ((20,), (1,)))
    b = plan(((37,), (1,)), ((37,), (1,)))
    assert (a.rank, a.tiling.scheme, a.index_bits) == (b.rank, b.tiling.scheme, b.index_bits)


def test_analyze_is_pure_python():
    """No torch tensor is needed: plain tuples in, frozen dataclass out."""
    p = plan(((4, 5), (5, 1)), ((5,), (1,)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.task_shape = (1,)


# ---------------------------------------------------------------------------------------------
# The index-width margin: int32 indexing while every operand's farthest element (its reach) and
# numel plus one block (the tile arithmetic of the last tile) fit in int32 (tiling.index_bits,
# the one definition: shape programs trace it).


@pytest.mark.parametrize("block", [(1024,), (8192,), (32, 64), (1, 4096), (2, 8, 64)])
def test_index_width_margin_is_numel_plus_one_block(block):
    area = math.prod(block)
    fits = (INT32_LIMIT - area,)  # numel + area == INT32_LIMIT
    assert index_bits(fits, [(1,), (1,)], block) == 32
    assert index_bits((fits[0] + 1,), [(1,), (1,)], block) == 64


@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("far", [0, 1, 2])
def test_index_width_margin_on_the_reach_of_each_operand(far, sign):
    """Task (2, 8): the operand `far` with row stride S reaches S + 7; the others are dense."""
    at = INT32_LIMIT - 7
    strides = lambda s: [(sign * s, 1) if k == far else (8, 1) for k in range(3)]  # noqa: E731
    assert index_bits((2, 8), strides(at), (1, 8)) == 32
    assert index_bits((2, 8), strides(at + 1), (1, 8)) == 64


def _around_the_margin(make, step):
    """Plans of `make(k)` (a task of k * step elements) for the largest k whose numel plus the
    block the analysis picks fits int32, and for k + 1, checked to pick that block both times."""
    block = plan(*make(INT32_LIMIT // step - 2**12)).tiling.block
    k = (INT32_LIMIT - math.prod(block)) // step
    fits, past = plan(*make(k)), plan(*make(k + 1))
    assert fits.tiling.block == past.tiling.block == block
    return fits, past


# Per scheme, a task of k * step elements (its alignment the same for every k) and the step: a
# block is a multiple of the step, so at the first k past the margin numel + block is INT32_LIMIT + 1.
MARGIN_LAYOUTS = {
    "flat": (lambda k: [((k, 16), (16, 1))], 16),
    "nd": (lambda k: [((k, 16), (16, 1)), ((16,), (1,))], 16),
    "tile2d": (lambda k: [((16 * k, 16), (16, 1)), ((16 * k, 16), (1, 16 * k))], 256),
}


@pytest.mark.parametrize("scheme", list(MARGIN_LAYOUTS))
def test_analyze_index_width_on_each_side_of_the_margin(scheme):
    fits, past = _around_the_margin(*MARGIN_LAYOUTS[scheme])
    assert (fits.tiling.scheme, fits.index_bits) == (scheme, 32)
    assert (past.tiling.scheme, past.index_bits) == (scheme, 64)
    assert past.numel + math.prod(past.tiling.block) == INT32_LIMIT + 1


# ---------------------------------------------------------------------------------------------
# fn.explain on small CPU tensors.

ADD = pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])


@pytest.mark.parametrize(
    "make, task_shape, scheme",
    [
        (lambda: (torch.randn(2, 3, 4), torch.randn(2, 3, 4)), (24,), "flat"),
        (lambda: (torch.randn(4, 5), torch.randn(5)), (4, 5), "nd"),
        (lambda: (torch.randn(4, 5), torch.randn(5, 4).t()), (4, 5), "tile2d"),
    ],
    ids=["flat", "nd", "tile2d"],
)
def test_explain(make, task_shape, scheme):
    a, b = make()
    e = ADD.explain(a, b)
    assert e.task_shape == task_shape
    assert e.scheme == scheme
    assert e.index_bits == 32
    assert isinstance(e.block, tuple) and isinstance(e.grid, tuple)
    assert e.num_warps >= 1
    assert len(e.strides) == 3
    assert e.path is not None and e.path.endswith(".py")
    text = str(e)
    assert scheme in text
    assert str(task_shape) in text
    assert e.path in text
    assert str(e.index_bits) in text
    assert len(text.splitlines()) >= 4


def test_explain_names_the_rung_that_would_serve_the_call():
    """A first call is the planner's, the same call again the plan cache's (shape programs need
    the C hit path: tests/gpu/test_gpu_hit_path.py)."""
    fn = pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
    a = torch.randn(4, 3)
    assert fn.explain(a, a).rung == "planner"
    fn(a, a)
    assert fn.explain(a, a).rung == "plan cache"
    assert "served: by the plan cache" in str(fn.explain(a, a))
    b = torch.randn(5, 3)
    assert fn.explain(b, b).rung == "planner"  # another shape, and no C path here


def test_explain_names_the_feature_a_routed_call_takes_and_launches_nothing():
    fn = pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
    a, grad = torch.randn(4, 3), torch.randn(4, 3, requires_grad=True)
    negative = torch.randn(4, 3).conj()._neg_view()
    with_scalar = pointwise_dynamic(payload_no_tl.add, is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
    np = pytest.importorskip("numpy")
    cases = {"autograd": (fn, grad, a), "negative views": (fn, negative, a),
             "NumPy scalars": (with_scalar, a, np.float32(2))}
    for name, (f, *args) in cases.items():
        explanation = f.explain(*args)
        assert explanation.rung == f"routed: {name}", name
        assert f"served: routed: {name} (a feature" in str(explanation)
    assert fn.explain(a, a).rung == with_scalar.explain(a, 2.0).rung == "planner"
    assert len(fn.planner.plans.by_key) == len(with_scalar.planner.plans.by_key) == 0  # nothing ran


def test_explain_does_not_launch():
    a = torch.randn(6)
    out = torch.full((6,), float("nan"))
    ADD.explain(a, a, out0=out)
    assert torch.isnan(out).all()


def test_explain_validates_like_a_call():
    with pytest.raises(RuntimeError):
        ADD.explain(torch.randn(3), torch.randn(4))
    with pytest.raises(TypeError):
        ADD.explain(torch.randn(3), torch.randn(3), out7=torch.empty(3))
