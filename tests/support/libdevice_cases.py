"""libdevice's functions with their torch references (unary, binary, classification, int32), and a
module of one payload `return libdevice.<name>(...)` per function, written to a directory so that
Triton can read their source. Shared by runtime/test_libdevice_cpu.py and gpu/test_gpu_numerics.py."""

from __future__ import annotations

import importlib.util
import math

import torch


def _round_half_away(x):
    whole = x.trunc()
    return whole + torch.sign(x) * ((x - whole).abs() >= 0.5).to(x.dtype)


def _ieee_remainder(x, y):
    values = [math.remainder(a, b) if b else math.nan for a, b in zip(x.tolist(), y.tolist())]
    return torch.tensor(values, dtype=x.dtype)


def _in_float64(fn):
    """A correctly rounded float32 reference of a correctly rounded float64 operation: computed in
    float64 and rounded once (float64 holds more than twice float32's digits)."""
    return lambda *args: fn(*(a.double() for a in args)).to(args[0].dtype)


def _correctly_rounded_sqrt(x):
    """IEEE's sqrt, rounded once to x's dtype: Python's math.sqrt is correctly rounded in float64,
    and float64 holds more than twice float32's digits, so rounding that to float32 is too.
    torch's own sqrt is not always: 1 ulp off at times in float32, and in float64 on the GPU
    machine's CPU (torch 2.11, sqrt(0.5))."""
    values = [math.sqrt(v) for v in x.double().tolist()]
    return torch.tensor(values, dtype=torch.float64).view(x.shape).to(x.dtype)


def _logb(x):
    return torch.where(x == 0, -math.inf, (torch.frexp(x).exponent - 1).to(x.dtype))


# name -> (torch reference, (low, high) of the random arguments, exact)
def _mpmath_bessel(name: str, order: int, x: torch.Tensor) -> torch.Tensor:
    import mpmath

    return torch.tensor([float(getattr(mpmath, name)(order, float(v))) for v in x.double()], dtype=x.dtype)


UNARY = {
    "tanh": (torch.tanh, (-5, 5), False),
    "erf": (torch.erf, (-3, 3), False),
    "erfc": (torch.erfc, (-3, 3), False),
    "erfinv": (torch.erfinv, (-0.99, 0.99), False),
    "erfcx": (torch.special.erfcx, (-2, 10), False),
    "exp": (torch.exp, (-10, 10), False),
    "exp2": (torch.exp2, (-10, 10), False),
    "exp10": (lambda x: torch.pow(torch.tensor(10.0, dtype=x.dtype), x), (-5, 5), False),
    "expm1": (torch.expm1, (-3, 3), False),
    "log": (torch.log, (0.01, 100), False),
    "log2": (torch.log2, (0.01, 100), False),
    "log10": (torch.log10, (0.01, 100), False),
    "log1p": (torch.log1p, (-0.9, 10), False),
    "sqrt": (_correctly_rounded_sqrt, (0, 100), True),
    "rsqrt": (torch.rsqrt, (0.01, 100), False),
    "cbrt": (lambda x: x.sign() * x.abs().pow(1 / 3), (-100, 100), False),
    "sin": (torch.sin, (-3, 3), False),
    "cos": (torch.cos, (-3, 3), False),
    "tan": (torch.tan, (-1.5, 1.5), False),
    "asin": (torch.asin, (-1, 1), False),
    "acos": (torch.acos, (-1, 1), False),
    "atan": (torch.atan, (-10, 10), False),
    "sinh": (torch.sinh, (-5, 5), False),
    "cosh": (torch.cosh, (-5, 5), False),
    "asinh": (torch.asinh, (-10, 10), False),
    "acosh": (torch.acosh, (1, 50), False),
    "atanh": (torch.atanh, (-0.99, 0.99), False),
    "sinpi": (lambda x: torch.sin(math.pi * x), (-2, 2), False),
    "lgamma": (torch.lgamma, (0.1, 20), False),
    "tgamma": (lambda x: torch.lgamma(x).exp(), (0.1, 10), False),
    "j0": (lambda x: _mpmath_bessel("besselj", 0, x), (0.1, 20), False),  # torch's fp64 Bessel
    "j1": (lambda x: _mpmath_bessel("besselj", 1, x), (0.1, 20), False),  # functions are off by ~3e-7,
    "y0": (lambda x: _mpmath_bessel("bessely", 0, x), (0.1, 20), False),  # the GPU's are not
    "abs": (torch.abs, (-10, 10), True),
    "rint": (torch.round, (-20, 20), True),  # torch.round: half to even
    "nearbyint": (torch.round, (-20, 20), True),
    "round": (_round_half_away, (-20, 20), True),
    "trunc": (torch.trunc, (-20, 20), True),
    "floor": (torch.floor, (-20, 20), True),
    "ceil": (torch.ceil, (-20, 20), True),
    "logb": (_logb, (-1000, 1000), True),
}
CLASSIFY = {  # name -> (reference, dtypes the function exists for)
    "isnan": (torch.isnan, ("float32", "float64")),
    "isinf": (torch.isinf, ("float32", "float64")),
    "finitef": (torch.isfinite, ("float32",)),
    "isfinited": (torch.isfinite, ("float64",)),
    "signbit": (torch.signbit, ("float32", "float64")),
    "ilogb": (lambda x: torch.frexp(x).exponent - 1, ("float32", "float64")),
}
BINARY = {
    "pow": (torch.pow, (0.1, 10), False),
    "atan2": (torch.atan2, (-5, 5), False),
    "hypot": (torch.hypot, (-5, 5), False),
    "fmod": (torch.fmod, (-20, 20), True),
    "remainder": (_ieee_remainder, (-20, 20), True),
    "copysign": (torch.copysign, (-5, 5), True),
    "nextafter": (torch.nextafter, (-5, 5), True),
    "div_rn": (_in_float64(torch.div), (-5, 5), True),
    "fdim": (lambda x, y: (x - y).clamp_min(0), (-5, 5), True),
}
FLOAT32_ONLY = {"fast_dividef": (torch.div, (-5, 5), False)}


def _signed32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _sign_extend24(v: int) -> int:
    v &= 0xFFFFFF
    return v - (1 << 24) if v >= 1 << 23 else v


def _byte_perm(x: int, y: int, s: int) -> int:
    source = ((y & 0xFFFFFFFF) << 32) | (x & 0xFFFFFFFF)
    return _signed32(sum(((source >> (8 * ((s >> (4 * n)) & 7))) & 0xFF) << (8 * n) for n in range(4)))


# int32 functions: name -> (argument count, reference over Python ints)
INTEGER = {
    "clz": (1, lambda v: 32 - (v & 0xFFFFFFFF).bit_length()),
    "popc": (1, lambda v: bin(v & 0xFFFFFFFF).count("1")),
    "ffs": (1, lambda v: (v & -v & 0xFFFFFFFF).bit_length()),
    "brev": (1, lambda v: _signed32(int(f"{v & 0xFFFFFFFF:032b}"[::-1], 2))),
    "mulhi": (2, lambda a, b: (a * b) >> 32),
    "mul24": (2, lambda a, b: _signed32(_sign_extend24(a) * _sign_extend24(b))),
    "hadd": (2, lambda a, b: (a + b) >> 1),
    "rhadd": (2, lambda a, b: (a + b + 1) >> 1),
    "byte_perm": (3, _byte_perm),
    "abs": (1, lambda v: _signed32(abs(v))),
}


def _write_payloads(directory):
    lines = ["import triton", "import triton.language as tl", "from triton.language.extra import libdevice", ""]
    for names, args, check in (
        (list(UNARY), "x", True),
        ([*CLASSIFY, "float_as_int", "int_as_float"], "x", False),
        ([*BINARY, *FLOAT32_ONLY], "x, y", True),
    ):
        for name in names:
            lines += ["@triton.jit", f"def {name}_(x, y):", f"    result = libdevice.{name}({args})"]
            if check:
                lines.append("    tl.static_assert(result.dtype == x.dtype)")
            lines += ["    return result", ""]
    for name, (count, _) in INTEGER.items():
        args = ", ".join("xyz"[:count])
        lines += ["@triton.jit", f"def int_{name}(x, y, z):", f"    return libdevice.{name}({args})", ""]
    path = directory / "libdevice_payloads.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("libdevice_payloads", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
