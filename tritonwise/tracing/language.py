"""Triton's language, restated over torch: what a translated payload calls (`tw.<name>`), with
Triton's meaning (integer `/` divides in float32, `//` and `%` truncate as C, bitcasts reinterpret
bits), over tensors and python scalars. NAMESPACE is what translated code calls `tw`; a name missing
from FUNCTIONS is reported as unsupported.
"""

from __future__ import annotations

import functools
import operator
import types

import torch


def _tensor(x, like=None):
    """`x` as a tensor: python scalars become 0-d tensors (on `like`'s device, if any)."""
    if isinstance(x, torch.Tensor):
        return x
    device = like.device if isinstance(like, torch.Tensor) else None
    return torch.scalar_tensor(x, dtype=_scalar_dtype(x), device=device)


def _scalar_dtype(x) -> torch.dtype:
    """The dtype Triton gives a python scalar argument (float32, int32/int64, int1)."""
    if isinstance(x, bool):
        return torch.bool
    if isinstance(x, float):
        return torch.float32
    return torch.int64


def _floating(x):
    """`x` converted to float32 unless it already is a float: Triton's math on integers."""
    t = _tensor(x)
    return t if t.dtype.is_floating_point else t.to(torch.float32)


def dtype(x) -> torch.dtype:
    """`x.dtype` in a payload: a tensor's dtype, or the dtype Triton gives a python scalar."""
    return x.dtype if isinstance(x, torch.Tensor) else _scalar_dtype(x)


TRITON_DTYPES = {  # triton dtype name -> torch's
    "fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64", "int1": "bool",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
}  # fmt: skip
DTYPE_TESTS = {
    "is_floating": lambda d: d.is_floating_point,
    "is_int": lambda d: not d.is_floating_point and not d.is_complex and d != torch.bool,
    "is_int_signed": lambda d: d.is_signed and not d.is_floating_point and not d.is_complex,
    "is_int_unsigned": lambda d: d in (torch.uint8, torch.uint16, torch.uint32, torch.uint64),
    **{
        f"is_{name}": functools.partial(operator.eq, getattr(torch, torch_name))
        for name, torch_name in [("bool", "bool"), *TRITON_DTYPES.items()]
        if not name.startswith("uint")
    },
}


def dtype_test(d: torch.dtype, name: str) -> bool:
    """`x.dtype.is_floating()` and friends: Triton's dtype predicates on a torch dtype."""
    return DTYPE_TESTS[name](d)


def bitwidth(d: torch.dtype) -> int:
    """`dtype.primitive_bitwidth`."""
    return 1 if d == torch.bool else d.itemsize * 8


def to(x, d: torch.dtype, fp_downcast_rounding=None, bitcast: bool = False):
    """`x.to(d)` / `tl.cast(x, d)`: a conversion (16-bit floats through float32, as the kernels
    convert, rounding to nearest: the translation refuses another rounding), or with bitcast the
    same bits read as `d`."""
    t = _tensor(x)
    if bitcast:
        return t.view(d)
    if d in (torch.float16, torch.bfloat16) and t.dtype not in (torch.float32, d):
        t = t.to(torch.float32)
    return t.to(d)


def truediv(a, b):
    """`a / b`: integers divide in float32 (Triton's rule), floats in their own dtype."""
    if not _is_float(a) and not _is_float(b):
        return _floating(a) / _floating(b)
    return a / b


def floordiv(a, b):
    """`a // b`: Triton truncates integer quotients, as C does; floats are floored."""
    if _is_float(a) or _is_float(b):
        return torch.floor_divide(_tensor(a, b), b)
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        quotient = abs(a) // abs(b)  # exact for any python ints, where a / b rounds beyond 2**53
        return quotient if (a < 0) == (b < 0) else -quotient
    return torch.div(_tensor(a, b), b, rounding_mode="trunc")


def mod(a, b):
    """`a % b`: the remainder with the dividend's sign (C's `%`, fmod for floats)."""
    return torch.fmod(_tensor(a, b), b)


def power(a, b):
    """`a ** b`, and libdevice's pow."""
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        return a**b
    return torch.pow(a, b)


def _is_float(x) -> bool:
    return isinstance(x, float) or (isinstance(x, torch.Tensor) and x.dtype.is_floating_point)


def _pair(torch_fn):
    """A torch function of two operands; a python scalar takes the other operand's device."""
    return lambda a, b: torch_fn(_tensor(a, b), _tensor(b, a))


def _extremum(keeps_nan, drops_nan):
    """tl.maximum or tl.minimum: by default Triton returns the operand that is not NaN, as
    torch.fmax and fmin do; with propagate_nan=tl.PropagateNan.ALL a NaN, as torch.maximum does."""

    def extremum(a, b, propagate_nan=None):
        a, b = _tensor(a, b), _tensor(b, a)
        floating = a.dtype.is_floating_point or b.dtype.is_floating_point
        return (drops_nan if floating and propagate_nan != "ALL" else keeps_nan)(a, b)

    return extremum


maximum, minimum = _extremum(torch.maximum, torch.fmax), _extremum(torch.minimum, torch.fmin)


def clamp(x, lo, hi, propagate_nan=None):
    """tl.clamp: minimum(maximum(x, lo), hi) with Triton's NaN rule (a NaN x gives lo by default)."""
    return minimum(maximum(x, lo, propagate_nan), hi, propagate_nan)


def logical_and(a, b):
    return _pair(torch.logical_and)(a, b) if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor) else a and b


def logical_or(a, b):
    return _pair(torch.logical_or)(a, b) if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor) else a or b


def logical_not(a):
    return torch.logical_not(a) if isinstance(a, torch.Tensor) else not a


def where(condition, x, y):
    """tl.where: a python bool condition picks one side, as Triton's constant folding does."""
    if not isinstance(condition, torch.Tensor):
        return x if condition else y
    if condition.dtype != torch.bool:  # Triton converts a condition to int1: nonzero is true
        condition = condition != 0
    if not isinstance(x, torch.Tensor) and not isinstance(y, torch.Tensor):
        x = _tensor(x, condition)
    return torch.where(condition, x, y)


def _unary(torch_fn):
    """A float function of one operand: integers are computed in float32, as Triton's math."""
    return lambda x: torch_fn(_floating(x))


def _binary(torch_fn):
    return lambda a, b: torch_fn(_floating(_tensor(a, b)), _tensor(b, a))


def _round_half_away(x):
    """libdevice round: halves away from zero (torch.round rounds them to even). The fraction
    x - trunc(x) is exact, where adding 0.5 first would round (0.49999997 + 0.5 is 1.0)."""
    t = _floating(x)
    whole = torch.trunc(t)
    return torch.where(torch.abs(t - whole) >= 0.5, whole + torch.sign(t), whole)


def _of_tensor(torch_fn):
    """A torch function of one operand, a python scalar made a tensor first."""
    return lambda x: torch_fn(_tensor(x))


# Float functions torch names alike.
_SAME_UNARY = (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv",
    "lgamma", "sigmoid", "floor", "ceil", "trunc",
)  # fmt: skip
FUNCTIONS = {
    **{name: _unary(getattr(torch, name)) for name in _SAME_UNARY},
    **{name: _binary(getattr(torch, name)) for name in ("atan2", "hypot", "copysign")},
    **{name: _pair(getattr(torch, name)) for name in ("fmax", "fmin", "nextafter")},
    "maximum": maximum,
    "minimum": minimum,
    **{name: _of_tensor(getattr(torch, name)) for name in ("abs", "isnan", "isinf", "isfinite", "signbit")},
    "where": where,
    "exp10": _unary(lambda x: torch.pow(10.0, x)),
    "rint": _unary(torch.round),
    "round": _round_half_away,
    "clamp": clamp,
    "fma": lambda a, b, c: a * b + c,
    "pow": power,
    "fmod": mod,
    "div_rn": truediv,
    "fdiv": lambda a, b, ieee_rounding=False: truediv(a, b),
    "cast": to,
    "zeros_like": torch.zeros_like,
    "full": lambda shape, value, dtype: torch.full(tuple(shape), value, dtype=dtype),
}
_ALIASES = {  # libdevice spellings -> the function above; div_rz is within one ulp of torch's division
    "sqrt_rn": "sqrt", "nearbyint": "rint", "fabs": "abs", "powf": "pow", "div_rz": "div_rn",
    "isfinited": "isfinite", "finitef": "isfinite",
}  # fmt: skip
FUNCTIONS.update({alias: FUNCTIONS[name] for alias, name in _ALIASES.items()})

NAMESPACE = types.ModuleType("tritonwise.tracing.tw")  # `tw` for translated code
_OPERATIONS = "dtype dtype_test bitwidth to truediv floordiv mod power logical_and logical_or logical_not"
NAMESPACE.__dict__.update({name: globals()[name] for name in _OPERATIONS.split()}, **FUNCTIONS)
