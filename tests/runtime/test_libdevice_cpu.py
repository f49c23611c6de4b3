"""libdevice on CPU tensors: every function FlagGems' ops call (and the rest of the family) against
torch over float32 and float64, each through a payload `return libdevice.<name>(...)`.

The payloads are written to a module at collection time (one per function) so that Triton can
read their source. Each also asserts, inside the kernel, that the result has the argument's
dtype (float32 in, float32 out; float64 in, float64 out). Correctly rounded functions (rint,
floor, sqrt, div_rn, fmod, ...) must agree with torch bit for bit; the others within a few ulp
(torch's float32 tanh and the GPU's are not correctly rounded either)."""

from __future__ import annotations

import importlib.util
import math
from fractions import Fraction

import pytest
import torch

import numerics_payloads as p
from tritonwise import pointwise_dynamic
from tritonwise.errors import PayloadError

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _round_half_away(x):
    whole = x.trunc()
    return whole + torch.sign(x) * ((x - whole).abs() >= 0.5).to(x.dtype)


def _ieee_remainder(x, y):
    values = [math.remainder(a, b) if b else math.nan for a, b in zip(x.tolist(), y.tolist())]
    return torch.tensor(values, dtype=x.dtype)


def _in_float64(fn):
    """A correctly rounded float32 reference: torch's float32 sqrt is not (1 ulp off at times);
    computed in float64 and rounded once, it is (float64 holds > 2x float32's digits)."""
    return lambda *args: fn(*(a.double() for a in args)).to(args[0].dtype)


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
    "sqrt": (_in_float64(torch.sqrt), (0, 100), True),
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


@pytest.fixture(scope="module")
def payloads(tmp_path_factory):
    return _write_payloads(tmp_path_factory.mktemp("libdevice"))


def _arguments(low, high, dtype, count=2):
    generator = torch.Generator().manual_seed(7)
    values = torch.rand(count, 48, generator=generator, dtype=torch.float64) * (high - low) + low
    values[:, :8] = torch.tensor([low, high, 0.5 * (low + high), 0.5, -0.5, 2.5, -2.5, 1.0]).clamp(low, high)
    return [v.to(dtype) for v in values]


def _run(payloads, name, args, promotion=0):
    fn = pointwise_dynamic(getattr(payloads, f"{name}_"), promotion_methods=[(promotion, "DEFAULT")])
    return fn(*args)


def _compare(got, want, exact, dtype):
    if exact:
        torch.testing.assert_close(got, want.to(got.dtype), rtol=0, atol=0, equal_nan=True)
    elif dtype == torch.float64:
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14, equal_nan=True)
    else:
        torch.testing.assert_close(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_function_matches_torch(payloads, name, dtype):
    reference, (low, high), exact = UNARY[name]
    x, y = _arguments(low, high, dtype)
    _compare(_run(payloads, name, (x, y)), reference(x), exact, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", [*BINARY, *FLOAT32_ONLY])
def test_binary_function_matches_torch(payloads, name, dtype):
    reference, (low, high), exact = {**BINARY, **FLOAT32_ONLY}[name]
    if name in FLOAT32_ONLY and dtype == torch.float64:
        pytest.skip("float32 only")
    x, y = _arguments(low, high, dtype)
    if name == "pow":
        y = _arguments(-3, 3, dtype)[1]
    _compare(_run(payloads, name, (x, y)), reference(x, y), exact, dtype)


@pytest.mark.parametrize("name", list(CLASSIFY))
def test_classification(payloads, name):
    reference, dtypes = CLASSIFY[name]
    for dtype in (getattr(torch, d) for d in dtypes):
        x = torch.tensor([0.0, -0.0, 1.5, -2.0, 1e-30, float("inf"), float("-inf"), float("nan")], dtype=dtype)
        marker = torch.zeros(8, dtype=torch.int32)  # the result dtype: int32 via the promotion of arg 1
        got = _run(payloads, name, (x, marker), promotion=1)
        want = reference(x).to(torch.int32)
        if name == "ilogb":  # CUDA: ilogb(0) and ilogb(NaN) are INT_MIN, ilogb(inf) is INT_MAX
            want = torch.tensor([-(2**31), -(2**31), 0, 1, -100, 2**31 - 1, 2**31 - 1, -(2**31)], dtype=torch.int32)
        assert torch.equal(got, want), f"{name}({x.tolist()}) = {got.tolist()}, expected {want.tolist()}"


@pytest.mark.parametrize("name", list(INTEGER))
def test_integer_function(payloads, name):
    count, reference = INTEGER[name]
    generator = torch.Generator().manual_seed(5)
    args = torch.randint(-(2**31), 2**31, (3, 40), dtype=torch.int64, generator=generator).to(torch.int32)
    args[:, :4] = torch.tensor([0, -1, 2**31 - 1, -(2**31)], dtype=torch.int32)
    fn = pointwise_dynamic(getattr(payloads, f"int_{name}"), promotion_methods=[(0, "DEFAULT")])
    got = fn(*args)
    want = [reference(*values[:count]) for values in zip(*(a.tolist() for a in args))]
    assert got.tolist() == want, f"{name}: {got.tolist()} vs {want}"


def test_bit_casts(payloads):
    x = torch.tensor([1.0, -2.5, float("inf"), float("nan"), -0.0, 1e-40])
    marker = torch.zeros(6, dtype=torch.int32)
    bits = pointwise_dynamic(payloads.float_as_int_, promotion_methods=[(1, "DEFAULT")])(x, marker)
    assert torch.equal(bits, x.view(torch.int32))
    back = pointwise_dynamic(payloads.int_as_float_, promotion_methods=[(1, "DEFAULT")])(bits, x)
    assert torch.equal(back.view(torch.int32), x.view(torch.int32))


@pytest.mark.parametrize(
    "payload", [p.stub_tanh, p.backend_tanh, p.tl_attribute_tanh, p.captured], ids=lambda f: f.__name__
)
def test_every_way_of_reaching_libdevice(payload):
    """`libdevice.tanh` (the stub module), the CUDA module (FlagGems' `tl_extra_shim`), through
    `tl.extra`, and a function captured in a module global (`tanh = tl_extra_shim.tanh`)."""
    x = torch.linspace(-3, 3, 37, dtype=torch.float64)
    torch.testing.assert_close(pointwise_dynamic(payload, promotion_methods=[(0, "DEFAULT")])(x), torch.tanh(x))


def test_a_function_without_cpu_implementation_says_so():
    fn = pointwise_dynamic(p.missing_in_backend, promotion_methods=[(0, "DEFAULT")])
    with pytest.raises(PayloadError, match=r"libdevice function libdevice\.rcp64h \(__nv_rcp64h\) is not implemented"):
        fn(torch.ones(3, dtype=torch.float64))


# ---------------------------------------------------------------------------------------------
# Directed roundings, checked against exact rationals.


def _rounds_correctly(got: float, exact: Fraction, mode: str, dtype) -> bool:
    value = Fraction(got)
    up = Fraction(torch.nextafter(torch.tensor(got, dtype=dtype), torch.tensor(math.inf, dtype=dtype)).item())
    down = Fraction(torch.nextafter(torch.tensor(got, dtype=dtype), torch.tensor(-math.inf, dtype=dtype)).item())
    below = value <= exact < up
    above = down < exact <= value
    return {"rd": below, "ru": above, "rz": below if exact >= 0 else above}[mode]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op", ["add", "mul", "div"])
@pytest.mark.parametrize("mode", ["rz", "rd", "ru"])
def test_directed_rounding(tmp_path, op, mode, dtype):
    source = (
        "import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n\n@triton.jit\n"
        f"def f(x, y):\n    return libdevice.{op}_{mode}(x, y)\n"
    )
    path = tmp_path / f"directed_{op}_{mode}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x, y = _arguments(-3, 3, dtype)
    y = torch.where(y == 0, torch.ones_like(y), y)
    got = pointwise_dynamic(module.f, promotion_methods=[(0, 1, "DEFAULT")])(x, y)
    exact_op = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b}[op]
    for a, b, g in zip(x.tolist(), y.tolist(), got.tolist()):
        assert _rounds_correctly(g, exact_op(Fraction(a), Fraction(b)), mode, dtype), f"{op}_{mode}({a}, {b}) = {g}"
