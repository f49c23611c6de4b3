"""Replacements for the interpreter builder's methods that compute on bf16/fp8 or convert floats
(BUILDER_PATCHES): emulated values are decoded to float32, computed with NumPy and rounded back
once; other handles pass through unchanged. They run inside interpret.interpreting(), whose
np.errstate silences NumPy's float warnings (masked lanes compute too).
"""

from __future__ import annotations

import numpy as np
import triton.language as tl
from triton.runtime.interpreter import TensorHandle

from .narrow_floats import FORMATS, FloatFormat


def emulated_format(handle):
    """The FloatFormat of a handle holding raw bf16/fp8 bits, else None (comparisons give bool data)."""
    fmt = FORMATS.get(getattr(handle.dtype.scalar, "name", None))
    return fmt if fmt is not None and fmt.emulated and handle.data.dtype == fmt.storage else None


def _values(handle) -> np.ndarray:
    fmt = emulated_format(handle)
    return fmt.decode(handle.data) if fmt is not None else handle.data


def _result(values: np.ndarray, fmt: FloatFormat, dtype):
    """A handle for computed values: bool stays bool (a comparison), floats round to `fmt`."""
    values = np.asarray(values)
    if values.dtype == np.bool_:
        return TensorHandle(values, tl.int1)
    return TensorHandle(fmt.encode(values), dtype)


def binary_op(original):
    def patched(self, lhs, rhs, op):
        fmt = emulated_format(lhs) or emulated_format(rhs)
        if fmt is None:
            return original(self, lhs, rhs, op)
        dtype = (lhs if emulated_format(lhs) else rhs).dtype.scalar
        return _result(op(_values(lhs), _values(rhs)), fmt, dtype)

    return patched


def unary_op(original):
    def patched(self, arg, op):
        fmt = emulated_format(arg)
        if fmt is None:
            return original(self, arg, op)
        if op is np.negative:  # the GPU flips the sign bit, NaN payloads included
            return TensorHandle(arg.data ^ fmt.storage.type(1 << (fmt.width - 1)), arg.dtype.scalar)
        return _result(op(fmt.decode(arg.data)), fmt, arg.dtype.scalar)

    return patched


def ternary_op(original):
    """select(cond, a, b) moves bits and needs nothing; clamp(x, lo, hi) compares values."""

    def patched(self, lhs, rhs, other, op):
        fmt = emulated_format(lhs)
        if fmt is None:
            return original(self, lhs, rhs, other, op)
        return _result(op(fmt.decode(lhs.data), _values(rhs), _values(other)), fmt, other.dtype.scalar)

    return patched


def create_fma(original):
    """x * y is exact in float64 for bf16/fp8 operands, so x * y + z rounds once there and once
    more to the format, which is as good as one rounding (float64 holds > 2x the digits)."""

    def patched(self, x, y, z):
        fmt = emulated_format(z)
        if fmt is None:
            return original(self, x, y, z)
        product = _values(x).astype(np.float64) * _values(y).astype(np.float64)
        return TensorHandle(fmt.encode(product + _values(z)), z.dtype.scalar)

    return patched


def cast_impl(original):
    """Conversions the interpreter does with `astype` or its own truncating bit code: int/float to
    bf16 (rounded to nearest even), bf16 to int/float (through its exact float32 value)."""

    def patched(self, src, dst_type):
        src_fmt = emulated_format(src)
        dst_fmt = FORMATS.get(dst_type.scalar.name)
        if dst_fmt is not None and dst_fmt.emulated:
            return TensorHandle(dst_fmt.encode(_values(src).astype(np.float64)), dst_type.scalar)
        if src_fmt is None:
            return original(self, src, dst_type)
        return original(self, TensorHandle(src_fmt.decode(src.data), tl.float32), dst_type)

    return patched


def create_fp_to_fp(original):
    """Every float -> float conversion, with its rounding mode (to nearest even unless RTZ)."""

    def patched(self, src, dst_type, rounding_mode):
        dst = dst_type.scalar
        if dst.name not in FORMATS and dst.name != "fp64" or src.dtype.scalar.name not in (*FORMATS, "fp64"):
            return original(self, src, dst_type, rounding_mode)  # the fnuz and fp8e4b15 formats
        values = _values(src).astype(np.float64)
        if dst.name == "fp64":
            return TensorHandle(values, dst)
        toward_zero = getattr(rounding_mode, "name", None) == "RTZ"
        return TensorHandle(FORMATS[dst.name].encode(values, toward_zero), dst)

    return patched


def constant(name: str):
    """builder.get_<name>: an emulated format's constant, rounded once (Triton 3.6 asks for fp8 ones)."""

    def make(original):
        def patched(self, value):
            return TensorHandle(FORMATS[name].encode(np.array([value], dtype=np.float64)), tl.dtype(name))

        return patched

    return make


def number_preferring(op):
    """maxnumf/minnumf return the non-NaN operand, as the GPU does (Triton 3.6 maps them to np.maximum)."""

    def make(original):
        return lambda self, lhs, rhs: self.binary_op(lhs, rhs, op)

    return make


BUILDER_PATCHES = {
    "create_maxnumf": number_preferring(np.fmax),
    "create_minnumf": number_preferring(np.fmin),
    "binary_op": binary_op,
    "unary_op": unary_op,
    "ternary_op": ternary_op,
    "create_fma": create_fma,
    "cast_impl": cast_impl,
    "create_fp_to_fp": create_fp_to_fp,
    **{f"get_{name}": constant(name) for name, fmt in FORMATS.items() if fmt.emulated},
}
