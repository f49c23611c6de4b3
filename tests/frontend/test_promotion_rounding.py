"""Operands reach the payload as torch's kernels see them: rounded to the common dtype first,
each output in its own computation dtype, bool arithmetic saturating. torch is the oracle;
every given output is poisoned first."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from tests.support.poison import poisoned_like
from tritonwise import pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def mul(x, y):
    return x * y


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def mul_scalar(x, y):
    return x * y


@pointwise_dynamic(promotion_methods=[(0, 1, "ALWAYS_BOOL")])
@triton.jit
def eq(x, y):
    return x == y


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "ALWAYS_BOOL")])
@triton.jit
def eq_scalar(x, y):
    return x == y


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "ALWAYS_BOOL")])
@triton.jit
def lt_scalar(x, y):
    return x < y


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT"), (0, 1, "INT_TO_FLOAT")])
@triton.jit
def product_twice(x, y):
    return x * y, x * y


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, 2, "DEFAULT")])
@triton.jit
def add_alpha(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add(x, y):
    return x + y


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def bitwise_not(x):
    return ~x


def _check(fn, torch_fn, *args):
    want = torch_fn(*args)
    wants = want if isinstance(want, tuple) else (want,)
    outs = {f"out{k}": poisoned_like(w) for k, w in enumerate(wants)}
    got = fn(*args, **outs)
    gots = got if isinstance(got, tuple) else (got,)
    for g, w, given in zip(gots, wants, outs.values()):
        assert g is given
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)


BOOLS = torch.tensor([True, True, False, False]), torch.tensor([True, False, True, False])


def test_int_tensor_is_rounded_to_a_16_bit_result_dtype_first():
    x, y = torch.tensor([2049, 100000], dtype=torch.int32), torch.tensor([3.0, 0.0], dtype=torch.float16)
    _check(mul, torch.mul, x, y)  # 2049 -> 2048 in fp16, 100000 -> inf: [6144, nan]
    _check(mul, torch.mul, y, x)
    _check(eq, torch.eq, torch.tensor([2049], dtype=torch.int32), torch.tensor([2048.0], dtype=torch.float16))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_comparisons_round_a_python_scalar_to_the_tensors_dtype(dtype):
    x = torch.tensor([3.140625, 3.14159, 2.0], dtype=dtype)
    _check(eq_scalar, torch.eq, x, 3.14159)
    _check(lt_scalar, torch.lt, x, 3.14159)
    _check(eq, torch.eq, x, torch.tensor(3.14159, dtype=torch.float64))  # a 0-d tensor too


def test_arithmetic_keeps_a_python_scalar_at_opmath_precision():
    x = torch.tensor([1000.0, 0.0, 3.0], dtype=torch.float16)
    _check(mul_scalar, torch.mul, x, 1.0004)  # torch: 1000.5, not 1000 * fp16(1.0004) = 1000
    _check(mul_scalar, torch.mul, x, 100000)  # 0 * 100000 is 0, not 0 * inf


def test_each_output_computes_in_its_own_dtype():
    x = torch.tensor([70000, -3, 2**31 - 1], dtype=torch.int32)
    _check(product_twice, lambda a, b: (a * b, a.float() * b.float()), x, x)  # ints wrap as torch's do
    big = torch.tensor([2**53 + 1, 7], dtype=torch.int64)
    one = torch.ones(2, dtype=torch.int64)
    _check(product_twice, lambda a, b: (a * b, a.float() * b.float()), big, one)
    plan = open(product_twice.explain(x, x).path).read()
    assert "out0 = product_twice_out0(in0, in1)" in plan  # each output runs its own variant
    assert "out1 = product_twice_out1(in0_for_out1, in1_for_out1)" in plan


def test_outputs_that_agree_share_one_call():
    x = torch.tensor([1.5, -2.0])
    _check(product_twice, lambda a, b: (a * b, a * b), x, x)
    assert "out0, out1 = product_twice(in0, in1)" in open(product_twice.explain(x, x).path).read()


def test_bool_arithmetic_saturates_as_in_torch():
    x, y = BOOLS
    _check(add_alpha, lambda a, b, alpha: torch.add(a, b, alpha=alpha), x, y, True)
    _check(add_alpha, lambda a, b, alpha: torch.add(a, b, alpha=alpha), x, y, False)
    _check(add, torch.add, x, y)
    _check(mul, torch.mul, x, y)
    _check(add, torch.add, x[:, None], y)  # broadcast, nd scheme


def test_bool_bitwise_not_stays_logical():
    x, _ = BOOLS
    _check(bitwise_not, torch.bitwise_not, x)


def test_non_bool_code_is_unchanged():
    """Int and float payloads load without conversions: no widening outside bool computations."""
    x = torch.tensor([1, 2], dtype=torch.int32)
    text = open(add.explain(x, x).path).read()
    assert "in0 = tl.load(in0_ptr + offs, mask=mask)\n" in text
    _check(add, torch.add, x, x)


def test_bool_sum_of_a_bool_computation_counts_saturated_values():
    @triton.jit
    def plus(x, y):
        return x + y

    count = pointwise_dynamic(plus, promotion_methods=[(0, 1, "DEFAULT")], reductions=["sum"])
    x, y = BOOLS
    assert torch.equal(count(x, y), (x + y).sum())


@pytest.mark.parametrize("fn, args", [(add_alpha, (*BOOLS, True)), (product_twice, (torch.ones(3, dtype=torch.int32),) * 2)])
def test_converted_kernels_compile_for_the_gpu(fn, args):
    from tests.support.sm90_compile import compile_for_sm90

    assert "cubin" in compile_for_sm90(fn, *args).asm


@pytest.mark.gpu
def test_promotion_on_the_gpu():
    cuda = lambda *ts: tuple(t.cuda() for t in ts)  # noqa: E731
    _check(mul, torch.mul, *cuda(torch.tensor([2049, 100000], dtype=torch.int32), torch.tensor([3.0, 0.0], dtype=torch.float16)))
    _check(eq_scalar, torch.eq, torch.tensor([3.140625], dtype=torch.bfloat16, device="cuda"), 3.14159)
    _check(product_twice, lambda a, b: (a * b, a.float() * b.float()), *cuda(torch.tensor([70000], dtype=torch.int32),) * 2)
    _check(add_alpha, lambda a, b, alpha: torch.add(a, b, alpha=alpha), *cuda(*BOOLS), True)
    _check(bitwise_not, torch.bitwise_not, BOOLS[0].cuda())
