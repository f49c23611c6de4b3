"""add, sub, mul, div: torch's binary arithmetic with alpha and rounding modes, over tensors (or
StridedBuffers) and python scalars in either position, with torch's promotion.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._pointwise import BOOL, FLOATING, INTEGRAL, Pointwise, is_tensor_like, require_number, result_category

@triton.jit
def _add(x, y):
    return x + y


@triton.jit
def _add_alpha(x, y, alpha):
    return x + y * alpha


@triton.jit
def _add_bool(x, y, alpha):
    return x | (y & alpha)


@triton.jit
def _sub(x, y):
    return x - y


@triton.jit
def _sub_alpha(x, y, alpha):
    return x - y * alpha


@triton.jit
def _mul(x, y):
    return x * y


@triton.jit
def _true_div(x, y):
    """x / y rounded to nearest (Triton's fp32 `/` may be approximate on GPU)."""
    if x.dtype == tl.float32:
        q = tl.math.div_rn(x, y)
    else:
        q = x / y
    return q


@triton.jit
def _trunc_div(x, y):
    if x.dtype.is_floating():
        q = _true_div(x, y)
        r = tl.where(q < 0, -tl.floor(-q), tl.floor(q))
    else:
        r = x // y  # Triton's integer division truncates, as C's
    return r


@triton.jit
def _floor_div_float(a, b):
    """torch's div_floor_floating: floor((a - fmod(a, b)) / b), corrected to the nearest integer."""
    mod = a % b  # fmod for floats
    div = _true_div(a - mod, b)
    div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    floordiv = tl.floor(div)
    floordiv = tl.where(div - floordiv > 0.5, floordiv + 1, floordiv)
    quotient = _true_div(a, b)
    floordiv = tl.where(div == 0, quotient * 0.0, floordiv)  # a zero with the quotient's sign
    return tl.where(b == 0, quotient, floordiv)


@triton.jit
def _floor_div(x, y):
    if x.dtype.is_floating():
        r = _floor_div_float(x, y)
    else:
        q = x // y
        r = tl.where((x % y != 0) & ((x < 0) != (y < 0)), q - 1, q)
    return r


_DEFAULT = [(0, 1, "DEFAULT")]
_WITH_ALPHA = [(0, 1, 2, "DEFAULT")]

ADD = Pointwise(_add, _DEFAULT)
ADD_ALPHA = Pointwise(_add_alpha, _WITH_ALPHA)
ADD_BOOL = Pointwise(_add_bool, _WITH_ALPHA)
SUB = Pointwise(_sub, _DEFAULT)
SUB_ALPHA = Pointwise(_sub_alpha, _WITH_ALPHA)
MUL = Pointwise(_mul, _DEFAULT)
TRUE_DIV = Pointwise(_true_div, [(0, 1, "INT_TO_FLOAT")])
ROUNDED_DIV = {"trunc": Pointwise(_trunc_div, _DEFAULT), "floor": Pointwise(_floor_div, _DEFAULT)}

def _check_alpha(op: str, input, other, alpha) -> int:
    """torch's rules for alpha; returns the result's category."""
    require_number(op, "alpha", alpha)
    result = result_category(input, other)
    if isinstance(alpha, bool) and result != BOOL:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if result <= INTEGRAL and result_category(alpha) >= FLOATING:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    return result


def add(input, other, *, alpha=1, out=None):
    """torch.add: input + alpha * other (a logical or for bool results); at least one tensor."""
    result = _check_alpha("add", input, other, alpha)
    if result == BOOL:
        return ADD_BOOL(input, other, bool(alpha), out0=out)
    if alpha == 1:
        return ADD(input, other, out0=out)
    return ADD_ALPHA(input, other, alpha, out0=out)


def _check_not_bool(input, other) -> None:
    if result_category(input) == BOOL and result_category(other) == BOOL:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    if BOOL in (result_category(input), result_category(other)):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def sub(input, other, *, alpha=1, out=None):
    """torch.sub: input - alpha * other; at least one tensor, neither bool (torch raises)."""
    _check_not_bool(input, other)
    _check_alpha("sub", input, other, alpha)
    if alpha == 1:
        return SUB(input, other, out0=out)
    return SUB_ALPHA(input, other, alpha, out0=out)


def mul(input, other, *, out=None):
    """torch.mul: input * other (a logical and for bool results); at least one tensor."""
    return MUL(input, other, out0=out)


def div(input, other, *, rounding_mode=None, out=None):
    """torch.div, rounding_mode None (INT_TO_FLOAT), "trunc" or "floor"; bool operands and integral
    division by a python 0 raise, an integer tensor divided by 0 gives an unspecified result."""
    if rounding_mode is None:
        return TRUE_DIV(input, other, out0=out)
    fn = ROUNDED_DIV.get(rounding_mode)
    if fn is None:
        raise RuntimeError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
        )
    result = result_category(input, other)
    if result == BOOL:
        raise NotImplementedError(f"\"div_{rounding_mode}\" not implemented for 'Bool'")
    if result == INTEGRAL and not is_tensor_like(other) and other == 0:
        raise RuntimeError("ZeroDivisionError")
    return fn(input, other, out0=out)
