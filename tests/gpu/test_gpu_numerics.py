"""The CPU path computes what the GPU computes: the same random cases through tritonwise on CPU
tensors (Triton's interpreter, with tritonwise's bf16/fp8 emulation and libdevice) and on CUDA,
compared bit for bit where the GPU is deterministic and correctly rounded; libdevice's
transcendental functions (a few ulp on the GPU) within a tolerance. Marked `gpu`.

Run: python -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_numerics.py
Expressions avoid a multiply feeding an add: the GPU contracts those into one fma (Triton's
enable_fp_fusion), which rounds once where the interpreter rounds twice."""

from __future__ import annotations

import random

import pytest
import torch

from tests.support import numerics_payloads as p
from tests.support.libdevice_cases import BINARY, UNARY, _write_payloads
from tritonwise import PayloadError, pointwise_dynamic

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

# libdevice's float32 sqrt is sqrt.approx unless __CUDA_PREC_SQRT is reflected, which Triton does not set.
APPROXIMATE_ON_GPU = {("sqrt", torch.float32)}

FLOATS = [torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2, torch.float16, torch.float32]
FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def _shape(rng: random.Random) -> tuple:
    return tuple(rng.choice([0, 1, 2, 3, 7, 33]) for _ in range(rng.randint(0, 3)))


def _values(rng: random.Random, shape: tuple, dtype: torch.dtype) -> torch.Tensor:
    """Random values of `dtype`: every finite fp8 code; for wider floats a wide exponent range
    with signed zeros, infinities and (not for max/min) no NaN."""
    generator = torch.Generator().manual_seed(rng.randrange(2**31))
    if dtype in FP8:
        codes = torch.randint(-128, 128, shape, dtype=torch.int8, generator=generator).view(dtype)
        return torch.where(codes.float().isfinite(), codes, torch.zeros_like(codes))
    scale = 10.0 ** torch.randint(-4, 5, shape, generator=generator).double()
    values = torch.randn(shape, dtype=torch.float64, generator=generator) * scale
    flat = values.view(-1)
    specials = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 3e38, 1 + 2**-8 + 2**-40])
    flat[: min(len(specials), flat.numel())] = specials[: flat.numel()]
    return values.to(dtype)


def _operand(rng: random.Random, shape: tuple, dtype: torch.dtype) -> torch.Tensor:
    """Values of `shape`, for 2-d shapes sometimes a transposed view."""
    if len(shape) == 2 and rng.random() < 0.5:
        return _values(rng, shape[::-1], dtype).t()
    return _values(rng, shape, dtype)


def _both(fn, args, **outs):
    """fn on the CPU arguments and on CUDA copies of them."""
    cpu = fn(*args, **outs)
    gpu = fn(*(a.cuda() for a in args), **{k: v.cuda() for k, v in outs.items()})
    return cpu, gpu


@pytest.mark.parametrize("seed", range(120))
def test_arithmetic_cpu_equals_gpu(seed):
    rng = random.Random(seed)
    payload = rng.choice(list(p.ARITHMETIC))
    dtype = rng.choice(FLOATS)
    method = rng.choice(["NO_OPMATH", "DEFAULT"])
    arity, _ = p.ARITHMETIC[payload]
    shape = _shape(rng)
    args = [_operand(rng, shape, dtype) for _ in range(arity)]
    fn = pointwise_dynamic(payload, promotion_methods=[(0, method)])
    cpu = fn(*args)  # the CPU emulates every dtype: its failure is always a failure
    try:
        gpu = fn(*(a.cuda() for a in args))
    except PayloadError as e:
        # fp8 computes in fp8 under both methods (torch's computation dtype for fp8 is fp8
        # itself), and Triton cannot compile fp8 arithmetic for sm_90 (3.6: 'llvm.fadd' on i8).
        # That refusal is the only failure accepted, only there, and shown as an xfail.
        if not (dtype in FP8 and "failed to compile" in str(e)):
            raise
        pytest.xfail(f"Triton does not compile {dtype} arithmetic for this GPU: {type(e.__cause__).__name__}")
    p.same_bits(gpu, cpu, zero_sign=payload is not p.maximum)


@pytest.mark.parametrize("seed", range(40))
def test_conversions_cpu_equal_gpu(seed):
    rng = random.Random(1000 + seed)
    payload = rng.choice(list(p.CONVERSIONS))
    sources = [torch.float32, torch.bfloat16, torch.float16]
    if payload not in (p.to_e4m3, p.to_e5m2, p.to_bf16_toward_zero):
        sources.append(torch.float64)  # Triton has no float64 -> fp8, nor float64 -> bf16 toward zero
    x = _values(rng, _shape(rng), rng.choice(sources))
    fn = pointwise_dynamic(payload, promotion_methods=[(0, "DEFAULT")])
    cpu, gpu = _both(fn, [x])
    p.same_bits(gpu, cpu)


@pytest.fixture(scope="module")
def libdevice_payloads(tmp_path_factory):
    return _write_payloads(tmp_path_factory.mktemp("libdevice_gpu"))


BESSEL = ("j0", "j1", "y0", "y1")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", [*UNARY, *BINARY])
def test_libdevice_cpu_equals_gpu(libdevice_payloads, name, dtype):
    _, (low, high), exact = {**UNARY, **BINARY}[name]
    generator = torch.Generator().manual_seed(11)
    x, y = torch.rand(2, 300, dtype=torch.float64, generator=generator) * (high - low) + low
    if name == "pow":
        y = torch.rand(300, dtype=torch.float64, generator=generator) * 6 - 3
    fn = pointwise_dynamic(getattr(libdevice_payloads, f"{name}_"), promotion_methods=[(0, "DEFAULT")])
    cpu, gpu = _both(fn, [x.to(dtype), y.to(dtype)])
    if exact and (name, dtype) not in APPROXIMATE_ON_GPU:
        p.same_bits(gpu, cpu)
    else:
        tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 1e-13, "atol": 1e-15}
        if dtype == torch.float64 and name in BESSEL:
            # CUDA's documented bound for fp64 Bessel functions beyond |x| = 8 is an absolute
            # 5e-12 (the CPU, exact through mpmath, differed by 2.5e-14 near a zero of y0)
            tolerance = {"rtol": 1e-13, "atol": 5e-12}
        torch.testing.assert_close(gpu.cpu(), cpu, equal_nan=True, **tolerance)
