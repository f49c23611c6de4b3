"""tritonwise.ops against torch: one expression, two backends.

Each test runs a torch op and its tritonwise.ops counterpart on the same small CPU tensors
(Triton's interpreter) and checks dtype, shape and values; `out=` tensors are poisoned first
(NaN, the dtype's minimum, or True), so an element the kernel fails to write shows up.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn.functional as F

import tritonwise.ops as ops
from tests.support.poison import poisoned_like
from tritonwise import StridedBuffer

# The interpreter computes masked-off lanes too (zeros), so integer and float divisions warn.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

INF, NAN = float("inf"), float("nan")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def rand(*shape, dtype=torch.float32):
    if dtype == torch.bool:
        return torch.rand(shape) < 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape) * 2).to(dtype)
    return torch.randint(-50, 50, shape, dtype=dtype)


def nonzero(*shape, dtype=torch.int32):
    """Random values, none of them zero (integer divisors)."""
    t = rand(*shape, dtype=dtype)
    return torch.where(t == 0, torch.ones_like(t), t)


def check(got, expected, exact=False):
    assert isinstance(got, torch.Tensor), f"expected a tensor, got {type(got).__name__}"
    assert got.dtype == expected.dtype, f"dtype {got.dtype}, torch gives {expected.dtype}"
    assert got.shape == expected.shape, f"shape {tuple(got.shape)}, torch gives {tuple(expected.shape)}"
    tol = {"rtol": 0, "atol": 0} if exact else {}
    torch.testing.assert_close(got, expected, equal_nan=True, **tol)


def same_signs(got, expected):
    """Signed zeros too: assert_close takes -0.0 == 0.0."""
    both = ~(got.isnan() | expected.isnan())
    assert torch.equal(torch.signbit(got[both]), torch.signbit(expected[both]))


def run_both(op, ref, *args, exact=False, out=True, **kwargs):
    """op(*args) against ref(*args), then again into a poisoned out= tensor; returns torch's result."""
    expected = ref(*args, **kwargs)
    check(op(*args, **kwargs), expected, exact)
    if out:
        given = poisoned_like(expected)
        assert op(*args, out=given, **kwargs) is given
        check(given, expected, exact)
    return expected


# ---------------------------------------------------------------------------------------------
# arithmetic

DTYPES = [torch.float32, torch.float16, torch.int32]


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_broadcast(dtype):
    run_both(ops.add, torch.add, rand(3, 5, dtype=dtype), rand(5, dtype=dtype), exact=not dtype.is_floating_point)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_add_alpha_noncontiguous(dtype):
    x, y = rand(5, 3, dtype=dtype).t(), rand(3, 1, dtype=dtype)
    run_both(ops.add, torch.add, x, y, alpha=3)


def test_add_mixed_dtypes_and_scalars():
    h, i = rand(3, 4, dtype=torch.float16), rand(3, 4, dtype=torch.int32)
    run_both(ops.add, torch.add, h, rand(4))  # fp16 + fp32 -> fp32
    run_both(ops.add, torch.add, i, h)  # int32 + fp16 -> fp16
    run_both(ops.add, torch.add, h, 2.5)  # weak float scalar keeps fp16
    run_both(ops.add, torch.add, i, 2.5, alpha=2)  # int tensor + float scalar -> float32
    run_both(ops.add, torch.add, 7, i, exact=True)  # scalar first, as torch.add accepts
    run_both(ops.add, torch.add, i, True, exact=True)


def test_add_float64_alpha_keeps_precision():
    x, y = rand(8, dtype=torch.float64), rand(8, dtype=torch.float64)
    got = ops.add(x, y, alpha=0.1)  # 0.1 rounded to float32 would be off by ~1.5e-9 * |y|
    torch.testing.assert_close(got, torch.add(x, y, alpha=0.1), rtol=1e-15, atol=1e-15)


def test_add_bool_is_logical_or():
    a, b = rand(4, 4, dtype=torch.bool), rand(4, dtype=torch.bool)
    run_both(ops.add, torch.add, a, b, exact=True)
    run_both(ops.add, torch.add, a, b, alpha=0, exact=True)
    run_both(ops.add, torch.add, a, True, exact=True)


def test_add_alpha_errors_as_torch():
    i = rand(3, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        ops.add(i, i, alpha=2.5)
    with pytest.raises(RuntimeError, match="Boolean alpha"):
        ops.add(rand(3), rand(3), alpha=True)
    with pytest.raises(TypeError, match="at least one tensor"):
        ops.add(2, 3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_sub_alpha_and_rsub(dtype):
    x, y = rand(3, 4, dtype=dtype), rand(4, dtype=dtype)
    exact = not dtype.is_floating_point
    run_both(ops.sub, torch.sub, x, y, exact=exact)
    run_both(ops.sub, torch.sub, x, y, alpha=2, exact=exact)
    run_both(ops.sub, torch.sub, 5, x, exact=exact)


def test_sub_bool_raises():
    b = rand(3, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="two bool tensors"):
        ops.sub(b, b)
    with pytest.raises(RuntimeError, match="with a bool tensor"):
        ops.sub(rand(3), b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.bool])
def test_mul(dtype):
    exact = not dtype.is_floating_point
    run_both(ops.mul, torch.mul, rand(2, 3, 4, dtype=dtype), rand(3, 1, dtype=dtype), exact=exact)


def test_mul_scalars():
    i = rand(6, dtype=torch.int32)
    run_both(ops.mul, torch.mul, i, 3, exact=True)
    run_both(ops.mul, torch.mul, 0.5, i)
    run_both(ops.mul, torch.mul, rand(6, dtype=torch.bool), 2, exact=True)  # bool * int -> int64


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.bool])
def test_true_div(dtype):
    y = nonzero(4, dtype=dtype) if dtype != torch.bool else torch.ones(4, dtype=torch.bool)
    run_both(ops.div, torch.div, rand(3, 4, dtype=dtype), y)


def test_true_div_scalars_and_ieee():
    i = nonzero(5, dtype=torch.int32)
    run_both(ops.div, torch.div, i, 4)  # int / int -> float32
    run_both(ops.div, torch.div, 3, i)
    x, y = torch.tensor([4.6875, 1.0, -0.0, 1.0]), torch.tensor([0.9375, 0.0, 2.0, -0.0])
    got = run_both(ops.div, torch.div, x, y, exact=True)
    same_signs(ops.div(x, y), got)


INT_A = torch.tensor([7, -7, 7, -7, 6, -6, 0, 1, -1, 49], dtype=torch.int32)
INT_B = torch.tensor([2, 2, -2, -2, 3, -3, 5, -50, 50, 7], dtype=torch.int32)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int8, torch.int64])
def test_rounded_div_integers(mode, dtype):
    a, b = INT_A.to(dtype), INT_B.to(dtype)
    run_both(ops.div, torch.div, a, b, rounding_mode=mode, exact=True)
    run_both(ops.div, torch.div, a, -3, rounding_mode=mode, exact=True, out=False)
    run_both(ops.div, torch.div, 17, b, rounding_mode=mode, exact=True, out=False)


FLOAT_A = torch.tensor([7.5, -7.5, 6.0, -6.0, 0.0, -0.0, 1.0, -1.0, INF, NAN, 5.0, 1e-30, 0.3, -2.0])
FLOAT_B = torch.tensor([2.0, 2.0, -3.0, 3.0, -2.0, 2.0, 0.0, 0.0, 2.0, 1.0, -INF, 1e30, 0.1, 0.0])


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_rounded_div_floats(mode, dtype):
    a, b = FLOAT_A.to(dtype), FLOAT_B.to(dtype)
    expected = run_both(ops.div, torch.div, a, b, rounding_mode=mode, exact=True)
    same_signs(ops.div(a, b, rounding_mode=mode), expected)


def test_rounded_div_promotion_and_errors():
    i = INT_A.reshape(2, 5)
    run_both(ops.div, torch.div, i, 2.5, rounding_mode="floor", exact=True)  # int, float scalar -> float32
    run_both(ops.div, torch.div, i.t(), rand(2, dtype=torch.float16), rounding_mode="trunc", exact=True)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ops.div(i, 0, rounding_mode="trunc")
    with pytest.raises(NotImplementedError, match="Bool"):
        ops.div(rand(3, dtype=torch.bool), True, rounding_mode="floor")
    with pytest.raises(RuntimeError, match="rounding_mode"):
        ops.div(i, 2, rounding_mode="round")


# ---------------------------------------------------------------------------------------------
# where and comparisons


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.bool])
def test_where_broadcast(dtype):
    cond = rand(3, 5, dtype=torch.bool)
    run_both(ops.where, torch.where, cond, rand(3, 1, dtype=dtype), rand(5, dtype=dtype), exact=True)


def test_where_scalars_and_mixed():
    cond, h, i = rand(4, 3, dtype=torch.bool), rand(4, 3, dtype=torch.float16), rand(3, dtype=torch.int32)
    run_both(ops.where, torch.where, cond, h, 2.5, exact=True)  # fp16 stays fp16
    run_both(ops.where, torch.where, cond, i, 2.5, exact=True)  # -> float32
    run_both(ops.where, torch.where, cond, 1, 0, exact=True)  # -> int64
    run_both(ops.where, torch.where, cond, 1.0, 0, exact=True)  # -> float32
    run_both(ops.where, torch.where, cond.t(), i[:, None], h.t(), exact=True)  # non-contiguous
    with pytest.raises(RuntimeError, match="boolean tensor"):
        ops.where(i, i, i)


@pytest.mark.parametrize("op,ref", [(ops.eq, torch.eq), (ops.lt, torch.lt)])
def test_compare(op, ref):
    x = torch.tensor([[1.0, NAN, -2.0, 3.0], [0.0, -0.0, INF, 2.0]])
    run_both(op, ref, x, torch.tensor([1.0, NAN, 0.0, 2.0]), exact=True)
    run_both(op, ref, x, 2.0, exact=True)
    i = rand(3, 4, dtype=torch.int32).clamp(-3, 3)
    run_both(op, ref, i, rand(4, dtype=torch.float16).round(), exact=True)  # compared as fp16
    run_both(op, ref, i, 2.5, exact=True)  # compared as float
    run_both(op, ref, i.t(), 1, exact=True)
    b = rand(5, dtype=torch.bool)
    run_both(op, ref, b, rand(3, 1, dtype=torch.bool), exact=True)  # False < True


def test_compare_needs_tensor_first():
    with pytest.raises(TypeError):
        ops.eq(2, rand(3))


# ---------------------------------------------------------------------------------------------
# clamp


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_clamp_scalar_bounds(dtype):
    x = rand(3, 4, dtype=dtype)
    run_both(ops.clamp, torch.clamp, x, -1, 2, exact=True)
    run_both(ops.clamp, torch.clamp, x, min=0, exact=True)
    run_both(ops.clamp, torch.clamp, x.t(), max=1, exact=True)
    run_both(ops.clamp, torch.clamp, x, min=3, max=-3, exact=True)  # max wins


def test_clamp_promotes_with_bounds():
    i = rand(3, 4, dtype=torch.int32)
    run_both(ops.clamp, torch.clamp, i, min=1.5, exact=True)  # -> float32
    run_both(ops.clamp, torch.clamp, i, min=-10, max=2.5, exact=True)
    run_both(ops.clamp, torch.clamp, rand(4, dtype=torch.bool), min=0, exact=True)  # -> int64
    run_both(ops.clamp, torch.clamp, rand(4, dtype=torch.float16), min=0.1, exact=True)


def test_clamp_tensor_bounds_and_nan():
    x = torch.tensor([1.5, -2.5, 3.0, NAN, 0.5, -0.5])
    low = torch.tensor([[0.0, NAN, 0.0, 0.0, 1.0, -1.0]])
    high = torch.tensor([[2.0], [NAN], [-1.0]])
    run_both(ops.clamp, torch.clamp, x, low, high, exact=True)
    run_both(ops.clamp, torch.clamp, x, min=low, exact=True)
    run_both(ops.clamp, torch.clamp, x, max=high, exact=True)
    h = rand(2, 6, dtype=torch.float16)
    # A tensor bound with a scalar one: torch.clamp refuses the mix; we take it (-> float32 here).
    check(ops.clamp(h, low, 1.0), torch.clamp(h, low, torch.tensor(1.0)), exact=True)


@pytest.mark.parametrize("bounds", [{"min": NAN}, {"max": NAN}, {"min": NAN, "max": 1.0}, {"min": 0.0, "max": NAN}])
def test_clamp_scalar_nan_bound_gives_nan_as_a_tensor_one_does(bounds):
    """A NaN bound gives NaN everywhere, as a NaN tensor bound does in every torch. torch up to
    2.10 ignored a lone scalar NaN bound (clamp(x, min=nan) gave x) and later releases give NaN:
    we keep one behaviour on every torch, the newer one, which agrees with tensor bounds."""
    x = torch.tensor([1.5, -2.5, 3.0, NAN, 0.5, -0.5])
    as_tensors = {name: torch.tensor(value) for name, value in bounds.items()}
    run_both(ops.clamp, lambda x, **_: torch.clamp(x, **as_tensors), x, exact=True, **bounds)
    scalar = torch.clamp(x, **bounds)
    if scalar.isnan().all():  # this torch gives NaN for scalar bounds too: compare directly
        run_both(ops.clamp, torch.clamp, x, exact=True, **bounds)


def test_clamp_errors():
    with pytest.raises(RuntimeError, match="At least one"):
        ops.clamp(rand(3))
    with pytest.raises(NotImplementedError, match="Bool"):
        ops.clamp(rand(3, dtype=torch.bool), min=True)


def test_clamp_of_bools_where_torch_clamps_them():
    """torch clamps bools against one tensor bound (as maximum or minimum) and refuses scalar
    bounds and two bounds."""
    x, bound = torch.tensor([True, False, True, False]), torch.tensor([False, True, True, False])
    run_both(ops.clamp, lambda x, min: torch.maximum(x, min), x, exact=True, min=bound)
    run_both(ops.clamp, lambda x, max: torch.minimum(x, max), x, exact=True, max=bound)
    for bounds in ({"min": True}, {"min": bound, "max": bound}):
        with pytest.raises(NotImplementedError, match="Bool"):
            ops.clamp(x, **bounds)
    with contextlib.suppress(NotImplementedError):  # torch clamps them in the releases we test
        check(ops.clamp(x, min=bound), torch.clamp(x, min=bound), exact=True)


# ---------------------------------------------------------------------------------------------
# unary math and activations


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.int8])
def test_abs_neg(dtype):
    x = rand(3, 4, dtype=dtype)
    if dtype == torch.int8:
        x[0, 0] = -128  # wraps, as in torch
    run_both(ops.abs, torch.abs, x, exact=True)
    run_both(ops.neg, torch.neg, x.t(), exact=True)


def test_abs_complex_and_bool():
    z = torch.tensor([3 + 4j, complex(INF, NAN), complex(NAN, 1), 0j, 1e30 + 1e30j, -1e-30j])
    run_both(ops.abs, torch.abs, z)  # complex64 -> float32
    run_both(ops.abs, torch.abs, z.conj().to(torch.complex128).reshape(2, 3).t())
    b = rand(3, dtype=torch.bool)
    with pytest.raises(NotImplementedError):
        ops.abs(b)
    with pytest.raises(RuntimeError, match="Negation"):
        ops.neg(b)


@pytest.mark.parametrize("op,ref", [(ops.sin, torch.sin), (ops.exp, torch.exp), (ops.sigmoid, torch.sigmoid)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.bool])
def test_int_to_float_unary(op, ref, dtype):
    x = rand(3, 4, dtype=dtype)
    if dtype == torch.int32:
        x = x.clamp(-10, 10)
    run_both(op, ref, x[:, ::2])


def test_unary_float64_and_extremes():
    x = torch.tensor([-100.0, -20.0, -1e-8, 0.0, 1e-8, 20.0, 100.0, INF, -INF, NAN], dtype=torch.float64)
    for op, ref in [(ops.sin, torch.sin), (ops.exp, torch.exp), (ops.sigmoid, torch.sigmoid)]:
        run_both(op, ref, x, out=False)
    run_both(ops.sigmoid, torch.sigmoid, x.float(), out=False)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_gelu(approximate, dtype):
    x = rand(4, 6, dtype=dtype)
    x[0, :4] = torch.tensor([-30.0, 30.0, 0.0, -0.0], dtype=dtype)
    run_both(ops.gelu, F.gelu, x.t(), approximate=approximate)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_silu(dtype):
    run_both(ops.silu, F.silu, rand(3, 4, dtype=dtype))


def test_activations_reject_integers():
    i = rand(3, dtype=torch.int32)
    with pytest.raises(NotImplementedError):
        ops.silu(i)
    with pytest.raises(NotImplementedError):
        ops.gelu(i)
    with pytest.raises(RuntimeError, match="approximate"):
        ops.gelu(rand(3), approximate="erf")


def test_out_dtype_rules():
    i = rand(4, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ops.sin(i, out=torch.empty(4, dtype=torch.int32))
    given = torch.full((4,), -1.0, dtype=torch.float64)  # float32 result, cast into float64
    ops.sin(i, out=given)
    check(given, torch.sin(i).double())
    x = rand(4)
    assert ops.exp(x, out=x) is x  # in place


# ---------------------------------------------------------------------------------------------
# polar


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_polar(dtype):
    r, theta = rand(3, 1, dtype=dtype).abs(), rand(4, dtype=dtype)
    run_both(ops.polar, torch.polar, r, theta)
    run_both(ops.polar, torch.polar, r.expand(3, 4).t(), theta[:, None])


def test_polar_errors():
    with pytest.raises(RuntimeError, match="scalar type"):
        ops.polar(rand(3), rand(3, dtype=torch.float64))
    with pytest.raises(NotImplementedError):
        ops.polar(rand(3, dtype=torch.float16), rand(3, dtype=torch.float16))
    with pytest.raises(RuntimeError, match="dtype"):
        ops.polar(rand(3), rand(3), out=torch.empty(3, dtype=torch.complex128))


# ---------------------------------------------------------------------------------------------
# layout: flip, contiguous, transpose_copy, permute_copy


@pytest.mark.parametrize("dims", [0, [2], (0, 2), [-1, 1, 0], []])
def test_flip_dims(dims):
    x = rand(3, 4, 5)
    expected = torch.flip(x, [dims] if isinstance(dims, int) else dims)
    check(ops.flip(x, dims), expected, exact=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.int32, torch.bool, torch.complex64])
def test_flip_dtypes_and_layouts(dtype):
    x = rand(4, 6).to(dtype) if dtype == torch.complex64 else rand(4, 6, dtype=dtype)
    for view in (x, x.t(), x[1:, ::2], x[:1].expand(3, 6)):
        got, expected = ops.flip(view, 0), torch.flip(view, [0])
        check(got, expected, exact=True)
        assert got.stride() == expected.stride()


def test_flip_of_negative_and_conjugate_views():
    """Views whose values are not what memory holds: the negative bit (z.conj().imag) and the
    conjugate bit."""
    z = torch.complex(rand(4, 6), rand(4, 6))
    for view in (z.conj().imag, z.conj().imag.t(), z.conj()):
        assert view.is_neg() or view.is_conj()
        check(ops.flip(view, [0]), torch.flip(view, [0]), exact=True)


def test_flip_errors():
    x = rand(3, 4)
    with pytest.raises(RuntimeError, match="multiple times"):
        ops.flip(x, [0, -2])
    with pytest.raises(IndexError):
        ops.flip(x, [2])
    check(ops.flip(rand(0, 3), 0), torch.empty(0, 3), exact=True)


def test_contiguous():
    x = rand(2, 3, 4)
    assert ops.contiguous(x) is x
    for view in (x.permute(2, 0, 1), x.transpose(0, 2), x[:, ::2, 1:], x[:1].expand(5, 3, 4)):
        got = ops.contiguous(view)
        check(got, view.contiguous(), exact=True)
        assert got.is_contiguous()
    z = torch.randn(3, 5, dtype=torch.complex64).t()
    check(ops.contiguous(z), z.contiguous(), exact=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8])
def test_transpose_and_permute_copy(dtype):
    x = rand(2, 5, 7, dtype=dtype)
    for got, expected in [
        (ops.transpose_copy(x, 1, 2), torch.transpose_copy(x, 1, 2)),
        (ops.transpose_copy(x, 0, -1), torch.transpose_copy(x, 0, -1)),
        (ops.permute_copy(x, (2, 0, 1)), torch.permute_copy(x, (2, 0, 1))),
    ]:
        check(got, expected, exact=True)
        assert got.stride() == expected.stride()


def test_strided_buffer_operand():
    """Any op reads a StridedBuffer: here x read backwards along dim 0."""
    x = rand(4, 5)
    backwards = StridedBuffer(x, strides=(-x.stride(0), x.stride(1)), offset=3 * x.stride(0))
    check(ops.neg(backwards), torch.neg(x.flip(0)), exact=True)
    check(ops.add(backwards, 1.0), x.flip(0) + 1.0, exact=True)


# ---------------------------------------------------------------------------------------------
# 0-d tensors


def test_zero_dim_inputs():
    s, h = torch.tensor(0.5), rand(3, dtype=torch.float16)
    check(ops.sin(s), torch.sin(s))
    check(ops.add(h, s), h + s)  # a 0-d float32 tensor does not promote fp16
    check(ops.where(torch.tensor(True), s, 2.0), torch.where(torch.tensor(True), s, 2.0), exact=True)


def test_zero_dim_out():
    s = torch.tensor(0.5)
    given = poisoned_like(s)
    assert ops.sin(s, out=given) is given
    check(given, torch.sin(s))


def test_flip_zero_dim():
    s = torch.tensor(3.0)
    check(ops.flip(s, [0]), torch.flip(s, [0]), exact=True)


# ---------------------------------------------------------------------------------------------
# GPU: every payload compiled by Triton (the tests above run them in the interpreter)


def _gpu_cases():
    x, y, i, j = rand(33, 65), rand(65), rand(33, 65, dtype=torch.int32), nonzero(65, dtype=torch.int32)
    h, b, z = rand(33, 65, dtype=torch.float16), rand(33, 65, dtype=torch.bool), torch.randn(33, 65, dtype=torch.complex64)
    fa, fb = FLOAT_A.repeat(5), FLOAT_B.repeat(5)
    return {
        "add_alpha": (ops.add, torch.add, (x, y), {"alpha": 0.5}),
        "add_bool": (ops.add, torch.add, (b, b[0]), {}),
        "sub_scalar_first": (ops.sub, torch.sub, (3, i.t()), {}),
        "mul_mixed": (ops.mul, torch.mul, (h, y), {}),
        "true_div_ieee": (ops.div, torch.div, (torch.tensor([4.6875] * 9), torch.tensor([0.9375] * 9)), {}),
        "trunc_div_int": (ops.div, torch.div, (i, j), {"rounding_mode": "trunc"}),
        "floor_div_int": (ops.div, torch.div, (i, j), {"rounding_mode": "floor"}),
        "trunc_div_float": (ops.div, torch.div, (fa, fb), {"rounding_mode": "trunc"}),
        "floor_div_float": (ops.div, torch.div, (fa, fb), {"rounding_mode": "floor"}),
        "where_scalar": (ops.where, torch.where, (b, h, 2.5), {}),
        "eq_int_float": (ops.eq, torch.eq, (i, 2.5), {}),
        "lt_bool": (ops.lt, torch.lt, (b, b[:, :1]), {}),
        "clamp_scalars": (ops.clamp, torch.clamp, (x, -0.5, 0.5), {}),
        "clamp_tensor_nan": (ops.clamp, torch.clamp, (fa, fb, None), {}),
        "abs_int": (ops.abs, torch.abs, (i,), {}),
        "abs_complex": (ops.abs, torch.abs, (z,), {}),
        "neg_half": (ops.neg, torch.neg, (h,), {}),
        "sin_int": (ops.sin, torch.sin, (i,), {}),
        "exp_half": (ops.exp, torch.exp, (h,), {}),
        "sigmoid": (ops.sigmoid, torch.sigmoid, (x,), {}),
        "silu_half": (ops.silu, F.silu, (h,), {}),
        "gelu": (ops.gelu, F.gelu, (x,), {}),
        "gelu_tanh": (ops.gelu, F.gelu, (h,), {"approximate": "tanh"}),
        "polar": (ops.polar, torch.polar, (x.abs(), y), {}),
        "flip": (ops.flip, torch.flip, (x.t(), [0, 1]), {}),
        "transpose_copy": (ops.transpose_copy, torch.transpose_copy, (x, 0, 1), {}),
    }


_GPU_INEXACT = {"add_alpha", "mul_mixed", "abs_complex", "sin_int", "exp_half", "sigmoid", "silu_half", "gelu", "gelu_tanh", "polar"}


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(_gpu_cases()))
def test_ops_on_gpu(name):
    op, ref, args, kwargs = _gpu_cases()[name]
    args = tuple(a.cuda() if isinstance(a, torch.Tensor) else a for a in args)
    expected = ref(*args, **kwargs)
    check(op(*args, **kwargs), expected, exact=name not in _GPU_INEXACT)
    if name.endswith("div_float"):
        same_signs(op(*args, **kwargs), expected)
