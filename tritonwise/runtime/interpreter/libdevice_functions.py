"""libdevice's math and classification functions over NumPy arrays, by symbol: float
functions register as `__nv_<name>f` and `__nv_<name>`, computed in float64; edge cases follow the
CUDA math API.
"""

from __future__ import annotations

import math

import numpy as np

from .libdevice_exact import to_int


def _wide(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _torch(name: str):
    def call(x):
        import torch

        fn = getattr(torch.special, name, None) or getattr(torch, name)
        return fn(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))).numpy()

    return call


def _elementwise(fn, *arrays) -> np.ndarray:
    """fn over Python floats/ints, element by element (functions NumPy and torch lack)."""
    arrays = np.broadcast_arrays(*arrays)
    flat = [fn(*values) for values in zip(*(a.reshape(-1).tolist() for a in arrays))]
    return np.array(flat, dtype=np.float64).reshape(arrays[0].shape)


def _round_half_away(x):
    whole = np.trunc(x)
    return whole + np.copysign((np.abs(x - whole) >= 0.5).astype(np.float64), x)


def _sinpi(x):
    r = x - 2.0 * np.rint(x / 2.0)  # exact, in [-1, 1]
    r = np.where(np.abs(r) > 0.5, np.copysign(1.0, r) - r, r)  # sin(pi r) = sin(pi (1 - r))
    return np.where(x == np.trunc(x), np.copysign(0.0, x), np.sin(np.pi * r))


def _cospi(x):
    r = np.abs(x - 2.0 * np.rint(x / 2.0))  # in [0, 1]; cos(pi r) = sin(pi (1/2 - r))
    return np.where(np.isinf(x), np.nan, np.sin(np.pi * (0.5 - r)))


def _logb(x):
    exponent = np.frexp(x)[1] - 1.0
    return np.where(x == 0, -np.inf, np.where(np.isfinite(x), exponent, np.abs(x)))


def _ilogb(x):
    x = _wide(x)
    exponent = np.frexp(np.where(np.isfinite(x), x, 1.0))[1] - 1
    exponent = np.where((x == 0) | np.isnan(x), np.iinfo(np.int32).min, exponent)
    return np.where(np.isinf(x), np.iinfo(np.int32).max, exponent).astype(np.int32)


def _gamma(v: float) -> float:
    try:
        return math.gamma(v)
    except OverflowError:
        return math.inf
    except ValueError:  # a pole: 0 gives a signed infinity, a negative integer or -inf NaN
        return math.copysign(math.inf, v) if v == 0 else math.nan


def _remainder(x: float, y: float) -> float:
    try:
        return math.remainder(x, y)
    except ValueError:
        return math.nan


def _mpmath(name: str):
    def call(n, x):
        import mpmath

        def one(order, value):
            try:
                return float(getattr(mpmath, name)(int(order), value))
            except (ValueError, ZeroDivisionError, TypeError):
                return math.nan

        result = _elementwise(one, np.asarray(n), _wide(x))
        if name == "bessely":  # Y_n(0) = -inf, Y_n(x < 0) is undefined
            return np.where(_wide(x) == 0, -np.inf, np.where(_wide(x) < 0, np.nan, result))
        return result

    return call


def _hypot(*args):
    result = _wide(args[0])
    for a in args[1:]:
        result = np.hypot(result, _wide(a))
    return result


_NUMPY_ALIKE = (
    "floor", "ceil", "trunc", "rint", "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2",
    "log10", "log1p", "sin", "cos", "tan", "sinh", "cosh", "tanh",
)
_FLOAT_UNARY = {
    **{name: getattr(np, name) for name in _NUMPY_ALIKE},
    **{name: getattr(np, "arc" + name[1:]) for name in ("asin", "acos", "atan", "asinh", "acosh", "atanh")},
    **{name: _torch(name) for name in ("erf", "erfc", "erfcx", "erfinv", "lgamma")},
    "fabs": np.abs,
    "nearbyint": np.rint,
    "round": _round_half_away,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "rcbrt": lambda x: 1.0 / np.cbrt(x),
    "exp10": lambda x: np.power(10.0, x),
    "logb": _logb,
    "sinpi": _sinpi,
    "cospi": _cospi,
    "erfcinv": lambda x: -_torch("ndtri")(_wide(x) / 2.0) / math.sqrt(2.0),
    "normcdf": _torch("ndtr"),
    "normcdfinv": _torch("ndtri"),
    "tgamma": lambda x: _elementwise(_gamma, _wide(x)),
    "cyl_bessel_i0": _torch("i0"),
    "cyl_bessel_i1": _torch("i1"),
}

_FLOAT_BINARY = {
    "atan2": np.arctan2,
    "pow": np.power,
    "fmod": np.fmod,
    "remainder": lambda x, y: _elementwise(_remainder, x, y),
    "hypot": np.hypot,
    "rhypot": lambda x, y: 1.0 / np.hypot(x, y),
    "copysign": np.copysign,
    "fdim": lambda x, y: np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0.0)),
}

_FAST_FLOAT32 = ("sin", "cos", "tan", "log2", "log", "exp", "exp10", "log10")  # __nv_fast_<name>f

_CLASSIFICATION = (
    (("isnanf", "isnand"), np.isnan),
    (("isinff", "isinfd"), np.isinf),
    (("finitef", "isfinited"), np.isfinite),
    (("signbitf", "signbitd"), np.signbit),
    (("ilogbf", "ilogb"), _ilogb),
)


def symbols() -> dict:
    table = {f"__nv_{name}": fn for names, fn in _CLASSIFICATION for name in names}
    for name, fn in _FLOAT_UNARY.items():
        table[f"__nv_{name}f"] = table[f"__nv_{name}"] = lambda x, fn=fn: fn(_wide(x))
    for name, fn in _FLOAT_BINARY.items():
        table[f"__nv_{name}f"] = table[f"__nv_{name}"] = lambda x, y, fn=fn: fn(_wide(x), _wide(y))
    for name in _FAST_FLOAT32:
        table[f"__nv_fast_{name}f"] = table[f"__nv_{name}f"]
    table["__nv_fast_powf"] = table["__nv_powf"]
    table["__nv_fast_fdividef"] = lambda x, y: _wide(x) / _wide(y)
    table["__nv_powif"] = table["__nv_powi"] = lambda x, n: np.power(_wide(x), _wide(n))
    table["__nv_nextafterf"] = table["__nv_nextafter"] = np.nextafter  # in the argument dtype
    for name in ("ldexp", "scalbn"):
        table[f"__nv_{name}f"] = table[f"__nv_{name}"] = lambda x, n: np.ldexp(_wide(x), np.asarray(n, np.int64))
    for suffix in ("3d", "4d"):
        table[f"__nv_norm{suffix}f"] = table[f"__nv_norm{suffix}"] = _hypot
        table[f"__nv_rnorm{suffix}f"] = table[f"__nv_rnorm{suffix}"] = lambda *a: 1.0 / _hypot(*a)
    table["__nv_frsqrt_rn"] = lambda x: 1.0 / np.sqrt(_wide(x))
    table["__nv_saturatef"] = lambda x: np.where(np.isnan(x), 0.0, np.clip(_wide(x), 0.0, 1.0))
    table["__nv_jnf"] = table["__nv_jn"] = _mpmath("besselj")
    table["__nv_ynf"] = table["__nv_yn"] = _mpmath("bessely")
    # Orders 0 and 1 through mpmath too: torch's float64 ones are less accurate than libdevice's.
    for kind, name in (("j", "besselj"), ("y", "bessely")):
        for order in (0, 1):
            bessel = _mpmath(name)
            table[f"__nv_{kind}{order}f"] = table[f"__nv_{kind}{order}"] = lambda x, b=bessel, n=order: b(n, x)
    for suffix in ("f", ""):
        table[f"__nv_llrint{suffix}"] = to_int(np.int64, "rn")
        table[f"__nv_llround{suffix}"] = lambda x: to_int(np.int64, "rz")(_round_half_away(_wide(x)))
    return table
