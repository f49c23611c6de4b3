"""libdevice's correctly rounded operations (`add_rz`, `div_ru`, `sqrt_rd`, ...) and float ->
integer conversions, for the interpreter: NumPy's round-to-nearest result moved one step where the
exact value (a Fraction) lies on the other side.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

MODES = ("rn", "rz", "rd", "ru")


def _exact_sign(value, candidate) -> int:
    """Sign of (value - candidate); 0 where value is None (the result is exact: x / 0). A finite
    exact value always lies on the zero side of an infinite candidate (an overflow)."""
    if value is None:
        return 0
    if np.isinf(candidate):
        return -1 if candidate > 0 else 1
    difference = value - Fraction(float(candidate))
    return (difference > 0) - (difference < 0)


def directed(nearest: np.ndarray, error_sign, args: tuple, mode: str) -> np.ndarray:
    """Move each round-to-nearest `nearest` to the neighbour `mode` asks for (`error_sign`: the sign
    of exact - candidate); non-finite inputs keep the nearest result."""
    if mode == "rn":
        return nearest
    result = np.array(nearest, copy=True)
    flat = result.reshape(-1)
    scalars = [np.broadcast_to(a, result.shape).reshape(-1) for a in args]
    for i, candidate in enumerate(flat):
        if all(np.isfinite(s[i]) for s in scalars) and not np.isnan(candidate):
            flat[i] = _step(candidate, error_sign(candidate, *(s[i] for s in scalars)), mode)
    return result


def _step(candidate, sign: int, mode: str):
    if sign == 0:
        return candidate
    toward_zero = (sign > 0) == (candidate < 0)  # the exact value is closer to zero
    if mode == "ru" and sign > 0 or mode == "rd" and sign < 0 or mode == "rz" and toward_zero:
        return np.nextafter(candidate, candidate.dtype.type(np.inf if sign > 0 else -np.inf))
    return candidate


def _rational(fn):
    """error_sign from a function computing the exact rational result of Fractions (or None)."""
    return lambda candidate, *args: _exact_sign(fn(*(Fraction(_scalar(a)) for a in args)), candidate)


def _scalar(a):
    return int(a) if np.issubdtype(np.asarray(a).dtype, np.integer) else float(a)


def _sqrt_sign(candidate, x) -> int:
    square = Fraction(float(candidate)) ** 2
    return (Fraction(float(x)) > square) - (Fraction(float(x)) < square)


def _nearest_fma(x, y, z, dtype):
    """fma rounded to nearest: float64 is exact enough for float32 operands; float64 operands go
    through Fractions (float(Fraction) rounds correctly)."""
    if dtype == np.float32:
        product = x.astype(np.float64) * y.astype(np.float64)
        return (product + z.astype(np.float64)).astype(np.float32)
    x, y, z = np.broadcast_arrays(x, y, z)
    flat = [_fraction_fma(a, b, c) for a, b, c in zip(x.reshape(-1), y.reshape(-1), z.reshape(-1))]
    return np.array(flat, dtype=np.float64).reshape(x.shape)


def _fraction_fma(a, b, c) -> float:
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return float(a) * float(b) + float(c)
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if exact == 0:  # IEEE: -0 only when both the product and c are -0
        negative_product = (a == 0 or b == 0) and np.signbit(a) != np.signbit(b)
        return -0.0 if negative_product and c == 0 and np.signbit(c) else 0.0
    try:
        return float(exact)
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")


_ARITHMETIC = {
    "add": (np.add, lambda a, b: a + b),
    "sub": (np.subtract, lambda a, b: a - b),
    "mul": (np.multiply, lambda a, b: a * b),
    "div": (np.divide, lambda a, b: a / b if b else None),
}


def _arithmetic(op: str, mode: str):
    numpy_op, exact = _ARITHMETIC[op]
    return lambda a, b: directed(numpy_op(a, b), _rational(exact), (a, b), mode)


def _sqrt(mode: str):
    return lambda x: directed(np.sqrt(x), _sqrt_sign, (x,), mode)


def _fma(mode: str):
    exact = _rational(lambda a, b, c: a * b + c)
    return lambda x, y, z: directed(_nearest_fma(x, y, z, x.dtype.type), exact, (x, y, z), mode)


def to_float(dtype, mode: str):
    """An int or float64 -> float conversion with a rounding mode."""
    exact = _rational(lambda v: v)
    return lambda x: directed(np.asarray(x).astype(dtype), exact, (x,), mode)


_ROUNDERS = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}


def to_int(dtype, mode: str):
    """A float -> integer conversion as PTX's cvt does it: rounded by `mode`, saturated, NaN to 0."""
    info = np.iinfo(dtype)

    def convert(x):
        rounded = _ROUNDERS[mode](np.asarray(x, dtype=np.float64))
        too_big = rounded >= 2.0 ** (info.bits - (info.min < 0))
        too_small = rounded < info.min
        safe = np.where(too_big | too_small | np.isnan(rounded), 0, rounded).astype(dtype)
        return np.where(too_big, info.max, np.where(too_small, info.min, safe)).astype(dtype)

    return convert


def symbols() -> dict:
    """Symbol -> implementation for the rounding-mode families."""
    table = {}
    for mode in MODES:
        for op in _ARITHMETIC:
            table[f"__nv_f{op}_{mode}"] = table[f"__nv_d{op}_{mode}"] = _arithmetic(op, mode)
        divide = _arithmetic("div", mode)  # a reciprocal is 1 / x, rounded alike
        table[f"__nv_frcp_{mode}"] = table[f"__nv_drcp_{mode}"] = lambda x, divide=divide: divide(x.dtype.type(1), x)
        table[f"__nv_fsqrt_{mode}"] = table[f"__nv_dsqrt_{mode}"] = _sqrt(mode)
        table[f"__nv_fmaf_{mode}"] = table[f"__nv_fma_{mode}"] = _fma(mode)
        table[f"__nv_double2float_{mode}"] = to_float(np.float32, mode)
        for source in ("int", "uint", "ll", "ull"):
            table[f"__nv_{source}2float_{mode}"] = to_float(np.float32, mode)
        for source in ("ll", "ull"):
            table[f"__nv_{source}2double_{mode}"] = to_float(np.float64, mode)
        for source in ("float", "double"):
            for target, dtype in (("int", np.int32), ("uint", np.uint32), ("ll", np.int64), ("ull", np.uint64)):
                table[f"__nv_{source}2{target}_{mode}"] = to_int(dtype, mode)
    table["__nv_int2double_rn"] = table["__nv_uint2double_rn"] = to_float(np.float64, "rn")
    table["__nv_fmaf"] = table["__nv_fma"] = _fma("rn")
    return table
