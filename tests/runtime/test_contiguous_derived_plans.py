"""New shapes of contiguous calls derived from a template plan (new_shapes.py): the derived plan
equals the one the analysis builds, field for field, and its results equal torch's; calls of any
other kind are never derived."""

import pytest
import torch
import triton

from tests.support.poison import poisoned_like
from tritonwise import StridedBuffer, pointwise_dynamic
from tritonwise.plans.new_shapes import contiguous_class, shape_free_class
from tritonwise.runtime.arguments import call_signature


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add_alpha(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(promotion_methods=[((0, 1), "DEFAULT"), ((0, 1), "DEFAULT")])
@triton.jit
def sum_and_difference(x, y):
    return x + y, x - y


FIELDS = ("grid", "index_args", "out_shape", "out_strides", "numel", "constexprs", "num_warps", "out_dtypes")
SHAPES = [(5,), (16,), (3, 7), (32, 4), (2, 3, 5), (1, 17), (4096,), (4097,), (64, 65), (2, 1, 33)]


def _plan_fields(plan) -> tuple:
    task = plan.task
    return tuple(getattr(plan, f) for f in FIELDS) + (task.task_shape, task.num_tiles, task.grid, task.index_bits)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_a_derived_plan_is_the_plan_the_analysis_builds(dtype):
    fn = pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])(add_alpha.payload)
    compared = 0
    for shape in SHAPES:
        x, y = (torch.randn(shape) * 10).to(dtype), (torch.randn(shape) * 10).to(dtype)
        args = (x, y, 3)
        key = call_signature(args)
        derived = fn.planner.new_shapes.contiguous.derive(key, torch.get_default_dtype())
        prepared = fn.plan(args, (None,), collapse=True)
        if derived is not None:
            assert _plan_fields(derived) == _plan_fields(prepared), shape
            compared += 1
        fn(*args)  # the first call of each alignment class leaves a template
    assert compared == len(SHAPES) - 2  # all but the first of each class: numel a multiple of 16 or not
    assert fn.planner.new_shapes.contiguous.derive(call_signature((x[:2], y[:2], 3)), torch.get_default_dtype()) is not None


def test_derived_plans_compute_what_torch_computes():
    for shape in SHAPES * 2:
        x, y = torch.randn(shape), torch.randn(shape)
        torch.testing.assert_close(add_alpha(x, y, 0.5), x + 0.5 * y)
        s, d = sum_and_difference(x, y)
        torch.testing.assert_close(s, x + y)
        torch.testing.assert_close(d, x - y)
    misses = add_alpha.plan_cache.misses
    add_alpha(torch.randn(77), torch.randn(77), 0.5)
    assert add_alpha.plan_cache.misses == misses + 1  # a derived plan is still a plan-cache miss


def test_given_outputs_are_never_derived():
    x, y = torch.randn(40), torch.randn(40)
    add_alpha(x, y, 0.5)
    for n in (41, 48):
        x, y = torch.randn(n), torch.randn(n)
        out = poisoned_like(x)
        assert add_alpha(x, y, 0.5, out0=out) is out
        torch.testing.assert_close(out, x + 0.5 * y)


@pytest.mark.parametrize(
    "make",
    [
        lambda: (torch.randn(4, 6).t(), torch.randn(6, 4), 0.5),  # strided
        lambda: (torch.randn(4, 6), torch.randn(6), 0.5),  # broadcast
        lambda: (torch.randn(1), torch.randn(1), 0.5),  # one element
        lambda: (torch.randn(0), torch.randn(0), 0.5),  # empty
        lambda: (torch.randn(5, requires_grad=True), torch.randn(5), 0.5),  # recorded for autograd
        lambda: (torch.randn(5, dtype=torch.complex64).conj().imag, torch.randn(5), 0.5),  # negative bit
        lambda: (StridedBuffer(torch.randn(5)), torch.randn(5), 0.5),
        lambda: (torch.nn.Parameter(torch.randn(5)), torch.randn(5), 0.5),
        lambda: (torch.randn(5), torch.tensor(2.0), 0.5),  # a 0-d tensor beside
    ],
)
def test_other_calls_have_no_contiguous_class(make):
    assert contiguous_class(call_signature(make())) is None


def test_the_class_ignores_shape_but_not_dtype_device_or_alignment():
    a = contiguous_class(call_signature((torch.randn(5), torch.randn(5), 0.5)))
    b = contiguous_class(call_signature((torch.randn(3, 9), torch.randn(3, 9), 2.0)))
    assert a[0] == b[0] and (a[1], a[2]) == ((5,), 5) and (b[1], b[2]) == ((3, 9), 27)
    assert contiguous_class(call_signature((torch.randn(5).double(), torch.randn(5), 0.5)))[0] != a[0]
    assert contiguous_class(call_signature((torch.randn(6)[1:], torch.randn(5), 0.5)))[0] != a[0]  # misaligned
    assert contiguous_class(call_signature((torch.randn(5), torch.randn(5), 2**40)))[0] != a[0]  # int64 scalar


def test_a_shape_int32_cannot_index_is_not_derived_from_an_int32_template():
    fn = pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])(add_alpha.payload)
    for n in (40, 48):  # a template of each class: numel a multiple of 16 or not
        fn(torch.randn(n), torch.randn(n), 0.5)
    key = call_signature((torch.randn(40), torch.randn(40), 0.5))

    def derived(numel):
        resized = tuple((e[0], (numel,), (1,), *e[3:]) if isinstance(e, tuple) else e for e in key)
        return fn.planner.new_shapes.contiguous.derive(resized, torch.get_default_dtype())

    assert derived(2**20 + 8) is not None and derived(2**20 + 16) is not None
    assert derived(2**31 - 56) is None and derived(2**31 + 64) is None  # int64 offsets past the last block


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_the_gpu_derived_plans_compute_what_torch_computes():
    fn = pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])(add_alpha.payload)
    for n in (1000, 1024):  # the templates, launched: derived plans take their launchers rebound
        fn(torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), 0.5)
    for n in (1001, 1500, 3, 77777, 4096 * 3 + 5, 4096 * 16, 2**22 + 16):
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        plan = fn.planner.new_shapes.contiguous.derive(call_signature((x, y, 0.5)), torch.get_default_dtype())
        assert plan is not None and plan.direct is not None and plan.fast is not None, n
        out = fn(x, y, 0.5)
        torch.testing.assert_close(out, x + 0.5 * y)
        out.fill_(float("nan"))
        del out  # the next output likely reuses its poisoned block
        torch.testing.assert_close(fn(x, y, 0.5), x + 0.5 * y)  # the cached plan (the C hit path)


def test_the_shape_free_class_keeps_dtypes_alignment_and_scalar_widths():
    base = shape_free_class(call_signature((torch.randn(4, 5), torch.randn(5), 0.5)))
    assert shape_free_class(call_signature((torch.randn(7, 3), torch.randn(3), 2.5))) == base
    assert shape_free_class(call_signature((torch.randn(4, 5).double(), torch.randn(5), 0.5))) != base
    assert shape_free_class(call_signature((torch.randn(21)[1:].view(4, 5), torch.randn(5), 0.5))) != base
    assert shape_free_class(call_signature((torch.randn(4, 5), torch.randn(5), 2**40))) != base


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_the_gpu_new_shapes_the_analysis_plans_launch_through_their_siblings_launcher(monkeypatch):
    from tritonwise.runtime import dispatch

    fn = pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])(add_alpha.payload)

    def operands(n):
        return torch.randn(4, n, 64, device="cuda"), torch.randn(n, 1, device="cuda")

    for n in (40, 48):  # the first plan of each group and specialization (n divisible by 16 or not) launches
        x, y = operands(n)
        fn(x, y, 0.5), fn(x, y, 0.5, out0=torch.empty_like(x))
    first_launches, real = [], dispatch.first_launch
    monkeypatch.setattr(dispatch, "first_launch", lambda *a: first_launches.append(a) or real(*a))
    for n in (64, 100, 333, 56):
        x, y = operands(n)
        torch.testing.assert_close(fn(x, y, 0.5), x + 0.5 * y)
        out = poisoned_like(x)
        assert fn(x, y, 0.5, out0=out) is out
        torch.testing.assert_close(out, x + 0.5 * y)
    assert first_launches == []
