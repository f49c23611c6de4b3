"""Siblings (plans/siblings.py): a plan the analysis builds for a new shape launches through an
earlier plan's launcher of its kernel, rebound, where its class (the signature without shapes and
strides) and Triton's specialization are the same."""

from types import SimpleNamespace

import pytest
import torch
import triton

from tests.support.poison import poisoned_like
from tritonwise import pointwise_dynamic
from tritonwise.plans.siblings import Siblings, shape_free_class
from tritonwise.runtime.arguments import call_signature


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add_alpha(x, y, alpha):
    return x + y * alpha


def test_the_shape_free_class_keeps_dtypes_alignment_and_scalar_widths():
    base = shape_free_class(call_signature((torch.randn(4, 5), torch.randn(5), 0.5)))
    assert shape_free_class(call_signature((torch.randn(7, 3), torch.randn(3), 2.5))) == base
    assert shape_free_class(call_signature((torch.randn(4, 5).double(), torch.randn(5), 0.5))) != base
    assert shape_free_class(call_signature((torch.randn(21)[1:].view(4, 5), torch.randn(5), 0.5))) != base
    assert shape_free_class(call_signature((torch.randn(4, 5), torch.randn(5), 2**40))) != base


def test_plans_that_never_got_a_launcher_make_room_in_a_full_group():
    """Plans launched only while launch.c was being built keep no launcher to lend; where they fill
    a group, a new plan takes their place instead of being turned away for good."""

    def plan():
        spec = SimpleNamespace(file_name="kernel.py")
        return SimpleNamespace(device=torch.device("cuda", 0), interpreted=False, spec=spec, allocates_and_launches=True, direct=None)

    siblings, key = Siblings(), call_signature((torch.randn(4, 5), torch.randn(5), 0.5))
    for _ in range(Siblings.PER_GROUP):
        siblings.adopt(key, plan())
    newcomer = plan()
    siblings.adopt(key, newcomer)
    (group,) = siblings._groups.values()
    assert [launched.plan for launched in group] == [newcomer]


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
