"""eq, lt, where, clamp: comparisons and selections with torch's promotion."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._pointwise import BOOL, Pointwise, require_tensor, result_category


@triton.jit
def _eq(x, y):
    return x == y


@triton.jit
def _lt(x, y):
    return x < y


@triton.jit
def _where(condition, x, y):
    return tl.where(condition, x, y)


# Two selections, not `(x < low) | (low != low)`: Triton 3.9's interpreter fails on `|` of a
# block and a 0-d comparison (a scalar bound).
@triton.jit
def _clamp_min(x, low):
    r = tl.where(x < low, low, x)
    return tl.where(low != low, low, r)  # a NaN bound gives NaN


@triton.jit
def _clamp_max(x, high):
    r = tl.where(x > high, high, x)
    return tl.where(high != high, high, r)


@triton.jit
def _clamp(x, low, high):
    return _clamp_max(_clamp_min(x, low), high)


EQ = Pointwise(_eq, [(0, 1, "ALWAYS_BOOL")])
LT = Pointwise(_lt, [(0, 1, "ALWAYS_BOOL")])
WHERE = Pointwise(_where, [(1, 2, "NO_OPMATH")])
CLAMP_MIN = Pointwise(_clamp_min, [(0, 1, "DEFAULT")])
CLAMP_MAX = Pointwise(_clamp_max, [(0, 1, "DEFAULT")])
CLAMP = Pointwise(_clamp, [(0, 1, 2, "DEFAULT")])


def eq(input, other, *, out=None):
    """torch.eq: input == other (a tensor or python scalar) in their promoted dtype, as bool."""
    require_tensor("eq", "input", input)
    return EQ(input, other, out0=out)


def lt(input, other, *, out=None):
    """torch.lt: input < other (a tensor or python scalar) in their promoted dtype, as bool."""
    require_tensor("lt", "input", input)
    return LT(input, other, out0=out)


def where(condition, input, other, *, out=None):
    """torch.where(condition, input, other), input and other promoted together (NO_OPMATH)."""
    require_tensor("where", "condition", condition)
    if condition.dtype != torch.bool:
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype {condition.dtype}"
        )
    return WHERE(condition, input, other, out0=out)


def clamp(input, min=None, max=None, *, out=None):
    """torch.clamp: input limited to [min, max] (max wins where min > max; NaN anywhere gives NaN);
    bounds are tensors, python scalars or None (not both), promoted with input."""
    require_tensor("clamp", "input", input)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    bounds = [b for b in (min, max) if b is not None]
    # torch clamps bools against one tensor bound only (its clamp_min/clamp_max.Tensor)
    if result_category(input, *bounds) == BOOL and (len(bounds) == 2 or not isinstance(bounds[0], torch.Tensor)):
        raise NotImplementedError("\"clamp\" not implemented for 'Bool'")
    if max is None:
        return CLAMP_MIN(input, min, out0=out)
    if min is None:
        return CLAMP_MAX(input, max, out0=out)
    return CLAMP(input, min, max, out0=out)
