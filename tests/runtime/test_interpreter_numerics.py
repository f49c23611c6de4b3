"""bf16 and fp8 on CPU tensors compute what the GPU computes (Triton's interpreter stores them as
raw bits and, left alone, does integer arithmetic on those bits).

torch is the oracle where it computes the same way: one bf16 operation is computed in float32
and rounded to bf16, by torch and by the GPU. Under NO_OPMATH (and for fp8, whose opmath is fp8
itself) the payload rounds after every operation, constants included (Triton rounds `x * 0.1`'s
0.1 to the tensor's dtype); under DEFAULT bf16 is computed in float32 and rounded once."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from tests.support import numerics_payloads as p
from tests.support.paths import ROOT
from tests.support.poison import poisoned_like
from tritonwise import pointwise_dynamic
from tritonwise.runtime.interpreter.narrow_floats import FORMATS

FP8 = [torch.float8_e4m3fn, torch.float8_e5m2]
TRITON_NAMES = {torch.bfloat16: "bf16", torch.float8_e4m3fn: "fp8e4nv", torch.float8_e5m2: "fp8e5"}
BITS = p.BITS
same_bits = p.same_bits


# ---------------------------------------------------------------------------------------------
# The formats themselves, against torch's own bf16/fp8 conversions.


@pytest.mark.parametrize("dtype", [torch.bfloat16, *FP8])
def test_every_code_decodes_as_torch(dtype):
    fmt = FORMATS[TRITON_NAMES[dtype]]
    codes = torch.arange(2 ** (8 * dtype.itemsize), dtype=torch.int32).to(BITS[dtype])
    want = codes.view(dtype).float().numpy()
    got = fmt.decode(codes.numpy().view(fmt.storage))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [torch.bfloat16, *FP8])
def test_rounding_to_nearest_even_matches_torch_in_range(dtype):
    fmt = FORMATS[TRITON_NAMES[dtype]]
    exact = torch.arange(2 ** (8 * dtype.itemsize), dtype=torch.int32).to(BITS[dtype]).view(dtype).float()
    exact = exact[exact.isfinite()].unique()
    midpoints = (exact[:-1].double() + exact[1:].double()) / 2  # ties: the even neighbour wins
    generator = torch.Generator().manual_seed(0)
    spread = torch.randn(20000, dtype=torch.float64, generator=generator) * fmt.max_finite / 4
    values = torch.cat([exact.double(), midpoints, spread]).float()  # what torch converts from
    values = values[values.abs() <= fmt.max_finite].double()
    got = torch.from_numpy(fmt.encode(values.numpy()).view(np.dtype(f"int{8 * dtype.itemsize}")))
    same_bits(got.view(dtype), values.float().to(dtype))


def test_overflow_follows_the_gpu_conversions():
    """bf16 overflows to inf (IEEE); fp8 conversions saturate (`cvt.rn.satfinite`), inf included;
    rounding toward zero stops at the largest finite value."""
    big = np.array([1e39, -1e39, np.inf, -np.inf, np.nan])
    assert FORMATS["bf16"].decode(FORMATS["bf16"].encode(big)).tolist()[:4] == [np.inf, -np.inf, np.inf, -np.inf]
    assert FORMATS["fp8e4nv"].decode(FORMATS["fp8e4nv"].encode(big)).tolist()[:4] == [448, -448, 448, -448]
    assert FORMATS["fp8e5"].decode(FORMATS["fp8e5"].encode(big)).tolist()[:4] == [57344, -57344, 57344, -57344]
    assert np.isnan(FORMATS["fp8e4nv"].decode(FORMATS["fp8e4nv"].encode(big))[4])
    largest = np.float32(FORMATS["bf16"].max_finite)
    toward_zero = FORMATS["bf16"].decode(FORMATS["bf16"].encode(np.array([1e39, np.inf, 1.00781]), toward_zero=True))
    assert toward_zero.tolist() == [largest, np.inf, 1.0]


# ---------------------------------------------------------------------------------------------
# Payloads on CPU tensors.


def _operands(dtype, count, n=64):
    """Random finite values of `dtype` (fp8: every finite code equally likely; bf16: a wide range
    with zeros, signed zeros, subnormals, and a few values near the top that overflow)."""
    torch.manual_seed(len(str(dtype)) + count)
    if dtype in FP8:
        codes = torch.randint(-128, 128, (count, n), dtype=torch.int8)
        values = codes.view(dtype)
        return [torch.where(v.float().isfinite(), v, torch.zeros_like(v)) for v in values]
    values = (torch.randn(count, n) * 10.0 ** torch.randint(-3, 4, (count, n)).float()).to(dtype)
    specials = torch.tensor([0.0, -0.0, 1e-39, -3e38, 3e38, 2.5, 0.1, -0.9], dtype=dtype)
    values[:, : len(specials)] = specials
    return list(values)


CASES = [(fn, dtype) for fn in p.ARITHMETIC for dtype in (torch.bfloat16, *FP8)]


@pytest.mark.parametrize("method", ["NO_OPMATH", "DEFAULT"])
@pytest.mark.parametrize("payload, dtype", CASES, ids=[f"{f.__name__}-{str(d)[6:]}" for f, d in CASES])
def test_arithmetic_matches_torch_bit_for_bit(payload, dtype, method):
    arity, _ = p.ARITHMETIC[payload]
    fn = pointwise_dynamic(payload, promotion_methods=[(0, method)])
    args = _operands(dtype, arity)
    per_op = method == "NO_OPMATH" or dtype in FP8  # torch's opmath of fp8 is fp8 itself
    want = p.reference(payload, args, dtype, per_op)
    _check_into_poisoned(fn, args, want)
    same_bits(fn(*args), want)


def _check_into_poisoned(fn, args, want):
    """fn writes every element of a given output: a NaN poison left unwritten fails where the
    answer is a number, a finite poison where the answer is NaN (same_bits takes NaN for NaN)."""
    for poison in (float("nan"), 1.0):
        out = poisoned_like(want, poison)
        assert fn(*args, out0=out) is out
        same_bits(out, want)


@pytest.mark.parametrize("source", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("payload", list(p.CONVERSIONS), ids=lambda f: f.__name__)
def test_conversions_round_as_the_gpu(payload, source):
    """Round to nearest even (or toward zero when asked), fp8 saturating, from every float type."""
    if source == torch.float64 and payload in (p.to_e4m3, p.to_e5m2):
        pytest.skip("the GPU has no float64 -> fp8 conversion")
    torch.manual_seed(1)
    values = torch.randn(200, dtype=torch.float64) * 10.0 ** torch.randint(-6, 6, (200,))
    values[:8] = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e6, -3e38, 1 + 2**-8])
    x = values.to(source)
    fn = pointwise_dynamic(payload, promotion_methods=[(0, "DEFAULT")])
    want = p.CONVERSIONS[payload](x)
    same_bits(fn(x).to(want.dtype), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_maximum_prefers_numbers_over_nan_as_the_gpu(dtype):
    """tl.maximum's default (no NaN propagation) is the GPU's max: the non-NaN operand wins."""
    maximum = pointwise_dynamic(p.maximum, promotion_methods=[(0, 1, "NO_OPMATH")])
    x = torch.tensor([float("nan"), 1.0, float("nan"), -2.0], dtype=dtype)
    y = torch.tensor([3.0, float("nan"), float("nan"), 5.0], dtype=dtype)
    same_bits(maximum(x, y), torch.fmax(x, y))


def test_the_issues_examples():
    times_two = pointwise_dynamic(p.times_two, promotion_methods=[(0, "NO_OPMATH")])
    x = torch.tensor([0.1, 0.7, 0.3, -0.9], dtype=torch.bfloat16)
    same_bits(times_two(x), x * 2)
    add = pointwise_dynamic(p.add, promotion_methods=[(0, 1, "DEFAULT")])
    y = torch.tensor([0.5, 1, 2, -3]).to(torch.float8_e4m3fn)
    assert add(y, y).float().tolist() == [1, 2, 4, -6]
    assert add(y.to(torch.float8_e5m2), y.to(torch.float8_e5m2)).float().tolist() == [1, 2, 4, -6]


def test_fp8_overflow_saturates_as_the_gpu_conversion():
    add = pointwise_dynamic(p.add, promotion_methods=[(0, 1, "DEFAULT")])
    x = torch.tensor([300.0, -448.0]).to(torch.float8_e4m3fn)
    assert add(x, x).float().tolist() == [448, -448]
    y = torch.tensor([40000.0]).to(torch.float8_e5m2)
    assert add(y, y).float().tolist() == [57344]


def test_flaggems_lerp_verbatim_on_bf16():
    """The weight is not named by the promotion, so it stays bf16 in the payload: its comparison
    and `1 - weight` run on bf16 values (exact here: weights in [-0.49, 1])."""
    lerp = pointwise_dynamic(p.lerp_tensor_kernel, is_tensor=[True, True, True], promotion_methods=[(0, 1, "DEFAULT")])
    torch.manual_seed(3)
    x, e = torch.randn(2, 40).bfloat16()
    w = (torch.rand(40) * 1.49 - 0.49).bfloat16()
    xf, ef, wf = x.float(), e.float(), w.float()
    want = torch.where(wf.abs() < 0.5, xf + wf * (ef - xf), ef - (ef - xf) * (1 - wf)).bfloat16()
    same_bits(lerp(x, e, w), want)
    torch.testing.assert_close(lerp(x, e, w), torch.lerp(x, e, w))


def test_float64_results_into_a_bf16_output_round_once_from_float32():
    add = pointwise_dynamic(p.add, promotion_methods=[(0, 1, "DEFAULT")])
    x, y = torch.randn(2, 50, dtype=torch.float64)
    out = poisoned_like(x.bfloat16())
    same_bits(add(x, y, out0=out), (x + y).bfloat16())


def test_triton_interpret_mode_computes_the_same(tmp_path):
    """With TRITON_INTERPRET=1 set before import, the same emulation applies."""
    code = (
        "import torch\n"
        "from tests.support import numerics_payloads as p\n"
        "from tritonwise import pointwise_dynamic\n"
        "x = torch.tensor([0.1, 0.7, 0.3, -0.9], dtype=torch.bfloat16)\n"
        "f = pointwise_dynamic(p.times_two, promotion_methods=[(0, 'NO_OPMATH')])\n"
        "assert torch.equal(f(x), x * 2), f(x)\n"
        "g = pointwise_dynamic(p.add, promotion_methods=[(0, 1, 'DEFAULT')])\n"
        "y = torch.tensor([0.5, 1, 2, -3]).to(torch.float8_e4m3fn)\n"
        "assert g(y, y).float().tolist() == [1, 2, 4, -6], g(y, y)\n"
        "t = pointwise_dynamic(p.stub_tanh, promotion_methods=[(0, 'DEFAULT')])\n"
        "torch.testing.assert_close(t(x.float()), torch.tanh(x.float()))\n"
        "print('ok')\n"
    )
    env = dict(
        os.environ,
        TRITON_INTERPRET="1",
        TRITONWISE_CACHE_DIR=str(tmp_path),
        PYTHONPATH=str(ROOT),
    )
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]
