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

from tests.support import numerics_payloads as p
from tests.support.libdevice_cases import BINARY, CLASSIFY, FLOAT32_ONLY, INTEGER, UNARY, _write_payloads
from tritonwise import pointwise_dynamic
from tritonwise.errors import PayloadError

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


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
