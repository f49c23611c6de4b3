"""A payload that calls @tl.constexpr helpers of its module (as FlagGems' copysign does)."""

import triton
import triton.language as tl


def _value(o):
    return o.value if isinstance(o, tl.constexpr) else o


@tl.constexpr
def unsigned_of(bits):
    return tl.core.get_int_dtype(_value(bits), False)


@tl.constexpr
def top_bit(bits):
    return 1 << (_value(bits) - 1)


@triton.jit
def copysign(x, y):
    bits: tl.constexpr = x.dtype.primitive_bitwidth
    magnitude = tl.abs(x)
    negative = (y.to(unsigned_of(bits), bitcast=True) & top_bit(bits)) != 0
    return tl.where(negative, -magnitude, magnitude)
