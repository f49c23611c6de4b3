"""New shapes of calls of any layout derived from a template of the same stride classes
(layout_templates.py): a derived plan equals the plan the analysis builds, field for field, for
permuted, sliced, expanded and broadcasting operands; where none is derived the new task's
layout class differs; results equal torch's; calls that route elsewhere are never derived."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.layout_patterns import _add_two, _inputs, _tensor, add_alpha, fma, patterns
from tritonwise import pointwise_dynamic
from tritonwise.runtime.arguments import call_signature


def _check_derived(make, template_args, args, template_outs=None, outs=None):
    """Once the plan of `template_args` (and given `template_outs`) is offered as the only
    template, the plan derived for `args` (and `outs`) is the analysis's, and launched it
    computes what torch computes. The template is kept unless its own call can derive nothing
    (a 0-d task whose dtype torch's default decided, an empty one); with it kept, none is
    derived only where the new task falls in another layout class."""
    fn = make()
    none = (None,) * len(fn._out_index)
    template_outs, outs = template_outs or none, outs or none
    template = fn.plan(template_args, template_outs, collapse=True)
    layouts, default = fn.planner.new_shapes.layouts, torch.get_default_dtype()
    layouts.remember(call_signature(template_args, template_outs), template)
    kept = layouts.derive(call_signature(template_args, template_outs), default)
    assert kept == (template if template.numel and template.default_dtype is None else None)
    derived = layouts.derive(call_signature(args, outs), default)
    prepared = fn.plan(args, outs, collapse=True)
    if kept is not None and prepared.task.layout_class == template.task.layout_class:
        assert derived is not None, "a task of the template's layout class was not derived"
    if derived is None:
        return
    assert derived == prepared
    _check_launch(make.torch, derived, args, outs)


def _check_launch(reference, plan, args, outs):
    """`plan` run on `args` (into `outs`, NaN-poisoned first where given and not an input: in
    place) gives torch's result."""
    expected = reference(*(a.clone() if isinstance(a, torch.Tensor) else a for a in args))
    for o in outs:
        if o is not None and all(o is not a for a in args):
            o.fill_(float("nan"))
    result = plan.run(args, outs)
    results = result if isinstance(result, tuple) else (result,)
    for got, want in zip(results, expected, strict=True):
        torch.testing.assert_close(got, want)
    for o, got in zip(outs, results):
        assert o is None or got is o


sizes = st.lists(st.integers(2, 12), min_size=4, max_size=4)


@pytest.mark.parametrize(
    "make, pick",
    [
        (add_alpha, lambda ts: (ts[0], ts[-1], 0.5)),
        (fma, lambda ts: (ts[0], ts[1 % len(ts)], ts[-1])),  # two outputs
    ],
    ids=["add_alpha", "fma"],
)
@settings(max_examples=150, deadline=None)
@given(pattern=patterns, first=sizes, second=sizes)
def test_a_derived_plan_is_the_plan_the_analysis_builds(make, pick, pattern, first, second):
    _check_derived(make, pick(_inputs(pattern, first)), pick(_inputs(pattern, second)))


@settings(max_examples=150, deadline=None)
@given(pattern=patterns, first=sizes, second=sizes, data=st.data())
def test_a_derived_plan_with_a_given_output_is_the_plan_the_analysis_builds(pattern, first, second, data):
    """The output given in some dim order, or sliced, or (in place) the first input itself."""
    template_inputs, inputs = _inputs(pattern, first), _inputs(pattern, second)
    shape = torch.broadcast_shapes(template_inputs[0].shape, template_inputs[-1].shape)
    in_place = data.draw(st.booleans()) and template_inputs[0].shape == shape and 0 not in template_inputs[0].stride()
    if in_place:
        template_out, out = template_inputs[0], inputs[0]
    else:
        order = data.draw(st.permutations(range(len(shape))))
        steps = data.draw(st.lists(st.sampled_from([1, 1, 2]), min_size=len(shape), max_size=len(shape)))
        new_shape = torch.broadcast_shapes(inputs[0].shape, inputs[-1].shape)
        template_out = _tensor(tuple(shape), order, steps, [False] * len(shape))
        out = _tensor(tuple(new_shape), order, steps, [False] * len(shape))
    _check_derived(
        add_alpha, (template_inputs[0], template_inputs[-1], 0.5), (inputs[0], inputs[-1], 0.5), (template_out,), (out,)
    )


def test_a_given_output_of_the_wrong_shape_or_overlapping_itself_is_refused_as_before():
    fn = add_alpha()
    x, y = torch.randn(5, 6).t(), torch.randn(6, 5)
    fn(x, y, 0.5, out0=torch.empty(6, 5))
    with pytest.raises(RuntimeError, match="has shape"):
        fn(x, y, 0.5, out0=torch.empty(6, 6))
    with pytest.raises(RuntimeError, match="internal overlap"):
        fn(x, y, 0.5, out0=torch.empty(6, 1).expand(6, 5))
    out = torch.full((6, 5), float("nan"))
    fn(torch.randn(7, 6).t()[:, :5], torch.randn(6, 5), 0.5, out0=out)  # a new shape's plan derived
    x2, y2 = torch.randn(8, 9).t(), torch.randn(9, 8)
    out2 = torch.full((9, 8), float("nan"))
    assert fn.planner.new_shapes.layouts.derive(call_signature((x2, y2, 0.5), (out2,)), torch.float32) is not None
    fn(x2, y2, 0.5, out0=out2)
    torch.testing.assert_close(out2, torch.add(x2, y2, alpha=0.5))
    base = torch.randn(11, 8)  # rows of 32 bytes: base[1:] keeps the 16-byte alignment class
    x3, y3, out3 = torch.randn(8, 10).t(), base[1:], base[:10]  # out3 partially overlaps y3
    assert fn.planner.new_shapes.layouts.derive(call_signature((x3, y3, 0.5), (out3,)), torch.float32) is not None
    with pytest.raises(RuntimeError, match="overlap"):
        fn(x3, y3, 0.5, out0=out3)


def test_derived_plans_of_several_outputs_compute_what_torch_computes():
    fn = fma()
    for n in (3, 17, 64, 5):
        x, y, z = torch.randn(2, n, 8), torch.randn(n, 1), torch.randn(8)
        first, second = fn(x, y, z)
        torch.testing.assert_close(first, x * y + z)
        torch.testing.assert_close(second, x - z)
    assert fn.planner.new_shapes.layouts.derive(call_signature((x, y, z)), torch.get_default_dtype()) is not None


def test_new_shapes_of_a_transposed_call_are_derived_and_compute_what_torch_computes():
    fn = add_alpha()
    derived = 0
    for n in (3, 17, 64, 5, 33, 8):
        x, y = torch.randn(n, 7), torch.randn(7, n).t()
        derived += fn.planner.new_shapes.layouts.derive(call_signature((x, y, 0.5)), torch.get_default_dtype()) is not None
        out = torch.full((n, 7), float("nan"))
        torch.testing.assert_close(fn(x, y, 0.5), x + y * 0.5)
        fn(x, y, 0.5, out0=out)
        torch.testing.assert_close(out, x + y * 0.5)
    assert derived >= 4  # every new shape after the first of each layout class (alignment, block)


@pytest.mark.parametrize(
    "make",
    [
        lambda: (torch.randn(4, 6, requires_grad=True).t(), torch.randn(6, 4), 0.5),  # recorded for autograd
        lambda: (torch.nn.Parameter(torch.randn(6, 4)), torch.randn(4, 6).t(), 0.5),  # a subclass
        lambda: (torch.randn(4, 6).t()._neg_view(), torch.randn(6, 4), 0.5),  # a negative view
    ],
)
def test_calls_that_route_elsewhere_are_not_derived(make):
    fn = add_alpha()
    args = make()
    plain = tuple(
        a.detach().resolve_neg().as_subclass(torch.Tensor) if isinstance(a, torch.Tensor) else a for a in args
    )
    fn.planner.new_shapes.layouts.remember(call_signature(plain), fn.plan(plain, (None,), collapse=True))
    assert fn.planner.new_shapes.layouts.derive(call_signature(args), torch.get_default_dtype()) is None


def test_an_empty_task_is_not_derived():
    fn = add_alpha()
    x, y = torch.randn(5, 6).t(), torch.randn(6, 5)
    fn.planner.new_shapes.layouts.remember(call_signature((x, y, 0.5)), fn.plan((x, y, 0.5), (None,), collapse=True))
    empty = (torch.randn(5, 0).t(), torch.randn(0, 5), 0.5)
    assert fn.planner.new_shapes.layouts.derive(call_signature(empty), torch.get_default_dtype()) is None


def test_a_given_output_is_not_served_by_a_template_without_one():
    fn = add_alpha()
    x, y = torch.randn(5, 6).t(), torch.randn(6, 5)
    fn.planner.new_shapes.layouts.remember(call_signature((x, y, 0.5)), fn.plan((x, y, 0.5), (None,), collapse=True))
    assert fn.planner.new_shapes.layouts.derive(call_signature((x, y, 0.5)), torch.get_default_dtype()) is not None
    out = torch.empty(6, 5)
    assert fn.planner.new_shapes.layouts.derive(call_signature((x, y, 0.5), (out,)), torch.get_default_dtype()) is None


def test_a_zero_dim_tensor_is_not_served_by_a_plan_of_a_sized_one():
    fn = pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])(_add_two)
    sized = (torch.ones(3, 4, dtype=torch.int8).t(), torch.ones(4, 3, dtype=torch.int32))
    fn.planner.new_shapes.layouts.remember(call_signature(sized), fn.plan(sized, (None,), collapse=True))
    zero_dim = (torch.ones(3, 4, dtype=torch.int8).t(), torch.tensor(7, dtype=torch.int32))
    assert fn.planner.new_shapes.layouts.derive(call_signature(zero_dim), torch.get_default_dtype()) is None
    assert fn(*zero_dim).dtype == (zero_dim[0] + zero_dim[1]).dtype == torch.int8


def test_shapes_that_do_not_broadcast_are_refused_by_the_analysis():
    fn = add_alpha()
    x, y = torch.randn(5, 6).t(), torch.randn(6, 5)
    fn(x, y, 0.5)
    with pytest.raises(RuntimeError, match="cannot be broadcast"):
        fn(torch.randn(5, 7).t(), torch.randn(6, 5), 0.5)


def test_an_output_larger_than_the_inputs_shape_is_refused_though_a_template_has_its_classes():
    """Expanded inputs give the template the stride classes that inputs of a smaller shape
    broadcast to the output would have; the analysis refuses the latter, so derive must too."""
    fn = add_alpha()
    wide = torch.randn(1, 65).expand(8, 65)
    fn(wide, wide, 0.5, out0=torch.empty(8, 65))
    with pytest.raises(RuntimeError, match=r"out0 has shape \(16, 65\), but the result has shape \(1, 65\)"):
        fn(torch.randn(1, 65), torch.randn(1, 65), 0.5, out0=torch.empty(16, 65))


def test_shapes_of_either_alignment_derive_once_each_has_a_template():
    """A sequence length that is a multiple of 16 or not puts a transposed add in the aligned or
    the unaligned layout class: one template each, and every later shape of either is derived,
    equal to the analysis's plan."""
    fn = _function_of_two()
    make = lambda n: (torch.randn(n, 256, device="meta"), torch.randn(256, n, device="meta").t())  # noqa: E731
    layouts, default = fn.planner.new_shapes.layouts, torch.get_default_dtype()
    for n in (80, 100):  # aligned, then not
        layouts.remember(call_signature(make(n)), fn.plan(make(n), (None,), collapse=True))
    for n in range(101, 133):
        derived = layouts.derive(call_signature(make(n)), default)
        assert derived == fn.plan(make(n), (None,), collapse=True)
        assert derived.task.aligned == (n % 16 == 0)


def _function_of_two():
    return pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])(_add_two)
