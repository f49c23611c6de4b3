"""New shapes of broadcasting calls derived from a template (broadcast_templates.py): the closed
form of the collapsed task is the analysis's own for every pattern of size-1 dims, a derived
plan equals the plan the analysis builds, field for field, and results equal torch's; calls
of any other kind are never derived."""

import pytest
import torch
import triton
from hypothesis import given, settings
from hypothesis import strategies as st

from tritonwise import pointwise_dynamic
from tritonwise.analysis.plan import analyze
from tritonwise.broadcast_templates import _collapsed, structure
from tritonwise.config import CodeGenConfig
from tritonwise.runtime.arguments import call_signature


@triton.jit
def _add_alpha(x, y, alpha):
    return x + y * alpha


@triton.jit
def _fma(x, y, z):
    return x * y + z, x - z


def add_alpha():
    return pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])(_add_alpha)


def fma():
    return pointwise_dynamic(promotion_methods=[((0, 1, 2), "DEFAULT"), ((0, 2), "DEFAULT")])(_fma)


# A pattern: the broadcast rank, then per input its rank and which of its dims are 1.
patterns = st.integers(1, 4).flatmap(
    lambda rank: st.lists(
        st.integers(0, rank).flatmap(lambda r: st.tuples(st.just(r), st.lists(st.booleans(), min_size=r, max_size=r))),
        min_size=1,
        max_size=3,
    ).map(lambda inputs: (rank, inputs))
)


def shapes_of(pattern, sizes) -> list:
    """Input shapes of `pattern` with the broadcast's dims of `sizes` (each at least 2)."""
    rank, inputs = pattern
    return [tuple(1 if one else sizes[rank - r + i] for i, one in enumerate(ones)) for r, ones in inputs]


def c_strides(shape) -> tuple:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


@settings(max_examples=300, deadline=None)
@given(patterns, st.lists(st.integers(2, 9), min_size=4, max_size=4), st.integers(1, 2))
def test_the_closed_form_is_the_analysis_collapse(pattern, sizes, n_outputs):
    shapes = [s for s in shapes_of(pattern, sizes)]
    task_shape, strides, shape, allocated = _collapsed(shapes, n_outputs)
    plan = analyze([(s, c_strides(s)) for s in shapes], [None] * n_outputs, 4, CodeGenConfig())
    assert (task_shape, strides, shape) == (plan.task_shape, plan.strides, plan.shape)
    assert (allocated,) * n_outputs == plan.output_strides


def test_shapes_that_do_not_broadcast_or_are_empty_have_no_closed_form():
    assert _collapsed([(3, 4), (5, 4)], 1) is None
    assert _collapsed([(0, 4), (1, 4)], 1) is None


@settings(max_examples=150, deadline=None)
@given(
    patterns, st.lists(st.integers(2, 12), min_size=4, max_size=4), st.lists(st.integers(2, 12), min_size=4, max_size=4)
)
def test_a_derived_plan_is_the_plan_the_analysis_builds(pattern, first, second):
    fn = add_alpha()
    template_args, args = _args(pattern, first), _args(pattern, second)
    template = fn._prepare(template_args, (None,), collapse=True)
    fn._new_shapes.remember(call_signature(template_args), template)
    derived = fn._new_shapes.broadcast.derive(call_signature(args), torch.get_default_dtype())
    prepared = fn._prepare(args, (None,), collapse=True)
    if derived is not None:
        assert derived == prepared
    else:  # no structure (a 0-d tensor), or the new shape falls in another layout class
        no_structure = structure(call_signature(args)) is None
        assert no_structure or prepared.task.layout_class != template.task.layout_class


def _args(pattern, sizes) -> tuple:
    operands = [torch.randn(s) for s in shapes_of(pattern, sizes)]
    return operands[0], operands[-1], 0.5


def test_derived_plans_of_several_outputs_compute_what_torch_computes():
    fn = fma()
    for n in (3, 17, 64, 5):
        x, y, z = torch.randn(2, n, 8), torch.randn(n, 1), torch.randn(8)
        first, second = fn(x, y, z)
        torch.testing.assert_close(first, x * y + z)
        torch.testing.assert_close(second, x - z)
    assert fn._new_shapes.broadcast.derive(call_signature((x, y, z)), torch.get_default_dtype()) is not None


@pytest.mark.parametrize(
    "make",
    [
        lambda: (torch.randn(4, 6).t(), torch.randn(6), 0.5),  # strided
        lambda: (torch.randn(4, 6), torch.randn(6, 2)[:, 0], 0.5),  # a strided view
        lambda: (torch.randn(0, 6), torch.randn(6), 0.5),  # empty
        lambda: (torch.randn(5, requires_grad=True), torch.randn(5), 0.5),  # recorded for autograd
        lambda: (torch.nn.Parameter(torch.randn(5)), torch.randn(5), 0.5),
        lambda: (torch.randn(5), torch.tensor(2.0), 0.5),  # a 0-d tensor beside
    ],
)
def test_other_calls_have_no_structure(make):
    assert structure(call_signature(make())) is None


def test_the_structure_holds_ranks_and_size_one_dims_but_not_sizes():
    a = structure(call_signature((torch.randn(4, 5, 6), torch.randn(5, 1), 0.5)))
    assert a[0] == structure(call_signature((torch.randn(7, 2, 3), torch.randn(2, 1), 2.5)))[0]
    assert a[0] != structure(call_signature((torch.randn(4, 5, 6), torch.randn(1, 6), 0.5)))[0]
    assert a[0] != structure(call_signature((torch.randn(4, 5, 6), torch.randn(5), 0.5)))[0]
    assert a[1] == [(4, 5, 6), (5, 1)]
