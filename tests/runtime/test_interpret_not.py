"""`not x` in a payload is elementwise on CPU as on the GPU (Triton's compiler calls the tensor's
__not__; its interpreter would take Python's `not` of the whole block). FlagGems' logical_not
is written this way."""

import pytest
import torch
import triton
import triton.language as tl

from tritonwise import pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, "ALWAYS_BOOL")])
@triton.jit
def not_of_bool(x):
    return not x.to(tl.int1)


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, "DEFAULT")])
@triton.jit
def negate_unless(x, keep: tl.constexpr):
    if not keep:
        x = -x
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool])
def test_not_is_elementwise(dtype):
    x = torch.tensor([0, 1, -2, 3, 0, 0, 5, 1]).to(dtype)
    torch.testing.assert_close(not_of_bool(x), torch.logical_not(x))


@pytest.mark.parametrize("keep", [True, False])
def test_not_of_a_constexpr_stays_python(keep):
    x = torch.arange(4.0)
    torch.testing.assert_close(negate_unless(x, keep), x if keep else -x)
