"""abs, neg, sin, exp: unary math with torch's result dtypes, each with an optional `out=`."""

from __future__ import annotations

import triton
import triton.language as tl

from ._pointwise import BOOL, COMPLEX, Pointwise, category, require_tensor
from .complex import complex_abs


@triton.jit
def _abs(x):
    return tl.abs(x)


@triton.jit
def _neg(x):
    return -x


@triton.jit
def _sin(x):
    return tl.sin(x)


@triton.jit
def _exp(x):
    return tl.exp(x)


ABS = Pointwise(_abs, [(0, "COMPLEX_TO_FLOAT")])
NEG = Pointwise(_neg, [(0, "DEFAULT")])
SIN = Pointwise(_sin, [(0, "INT_TO_FLOAT")])
EXP = Pointwise(_exp, [(0, "INT_TO_FLOAT")])


def abs(input, *, out=None):
    """torch.abs (COMPLEX_TO_FLOAT: complex64 -> float32, via hypot); bool raises, as in torch."""
    require_tensor("abs", "input", input)
    kind = category(input)
    if kind == BOOL:
        raise NotImplementedError("\"abs\" not implemented for 'Bool'")
    if kind == COMPLEX:
        return complex_abs(input, out=out)
    return ABS(input, out0=out)


def neg(input, *, out=None):
    """torch.neg: -input, same dtype (integers wrap). input: a non-bool tensor."""
    require_tensor("neg", "input", input)
    if category(input) == BOOL:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return NEG(input, out0=out)


def sin(input, *, out=None):
    """torch.sin: integers give the default float dtype (INT_TO_FLOAT), 16-bit floats compute in fp32."""
    require_tensor("sin", "input", input)
    return SIN(input, out0=out)


def exp(input, *, out=None):
    """torch.exp: integers give the default float dtype (INT_TO_FLOAT), 16-bit floats compute in fp32."""
    require_tensor("exp", "input", input)
    return EXP(input, out0=out)
