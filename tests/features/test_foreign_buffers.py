"""Another library's StridedBuffer (FlagGems' own, from flag_gems.utils.tensor_wrapper) as input
and as given output, through instantiate and through the plain call, against torch."""

from __future__ import annotations

import math

import pytest
import torch
import triton

from tests.support.poison import poisoned_like
from tritonwise import pointwise_dynamic


class OtherBuffer:
    """What FlagGems' StridedBuffer offers: a view of `base` with any strides, `offset` elements
    from base's first element; not tritonwise's class."""

    def __init__(self, base, shape=None, strides=None, dtype=None, offset=0):
        self._base, self.dtype, self.offset = base, dtype or base.dtype, offset
        self.shape = tuple(base.shape if shape is None else shape)
        self._strides = tuple(base.stride() if strides is None else strides)
        self.device, self.ndim = base.device, len(self.shape)

    def stride(self):
        return self._strides

    def unwrap(self):
        return self._base

    def data_ptr(self):
        return self._base.data_ptr() + self.offset * self.dtype.itemsize

    def numel(self):
        return math.prod(self.shape)


@pointwise_dynamic(promotion_methods=[(0, "NO_OPMATH")])
@triton.jit
def copy(x):
    return x


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add(x, y):
    return x + y


def _flipped(x: torch.Tensor, dims: tuple) -> OtherBuffer:
    """x flipped along `dims`, as FlagGems' flip builds it (negative strides, an offset)."""
    strides = [-s if d in dims else s for d, s in enumerate(x.stride())]
    offset = sum((n - 1) * s for d, (n, s) in enumerate(zip(x.shape, x.stride())) if d in dims)
    return OtherBuffer(x, strides=strides, offset=offset)


@pytest.mark.parametrize("dims", [(0,), (1,), (0, 1)])
def test_flip_as_flag_gems_builds_it(dims):
    x = torch.randn(5, 7)
    out = poisoned_like(x)
    result = copy.instantiate(2)(_flipped(x, dims), out0=out)
    assert result is out
    torch.testing.assert_close(out, torch.flip(x, dims), rtol=0, atol=0)


def test_a_given_output_of_another_library_comes_back_as_given():
    x = torch.randn(3, 4)
    target = poisoned_like(torch.empty(4, 3))
    out_view = OtherBuffer(target, shape=(3, 4), strides=(1, 3))  # writes the transpose
    result = copy.instantiate(2)(x, out0=out_view)
    assert result is out_view
    torch.testing.assert_close(target, x.t(), rtol=0, atol=0)


def test_the_plain_call_mixes_them_with_tensors():
    x, y = torch.randn(4, 6), torch.randn(6)
    got = add(_flipped(x, (1,)), y)
    torch.testing.assert_close(got, torch.flip(x, (1,)) + y)
