"""Complex tensors through register_complex, against torch (complex64 and complex128)."""

import pytest
import torch
import triton

from tritonwise import ComplexMode, pointwise_dynamic


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add_alpha(x, y, alpha):
    return x + y * alpha


add_alpha.register_complex(ComplexMode.ELEMENTWISE)


@pointwise_dynamic(promotion_methods=[((0, 1, 2, 3), "DEFAULT"), ((0, 1, 2, 3), "DEFAULT")])
@triton.jit
def complex_product(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def mul(x, y):
    return x * y


mul.register_complex(ComplexMode.CROSS, cross_kernel=complex_product)

DTYPES = [torch.complex64, torch.complex128]


def _c(shape, dtype):
    return torch.randn(shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_with_broadcasting(dtype):
    a, b = _c((4, 5), dtype), _c((5,), dtype)
    got = add_alpha(a, b, 0.5)
    assert got.dtype == dtype
    torch.testing.assert_close(got, a + b * 0.5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mul_with_broadcasting_and_a_transposed_operand(dtype):
    a, b = _c((6, 3), dtype), _c((3, 6), dtype).t()
    got = mul(a, b)
    assert got.dtype == dtype
    torch.testing.assert_close(got, a * b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_complex_with_real(dtype):
    a = _c((3, 4), dtype)
    r = torch.randn(4, dtype=torch.float64 if dtype == torch.complex128 else torch.float32)
    torch.testing.assert_close(add_alpha(a, r, 2.0), a + r * 2.0)
    torch.testing.assert_close(add_alpha(r, a, 2.0), r + a * 2.0)
    torch.testing.assert_close(mul(a, r), a * r)
    torch.testing.assert_close(mul(r, a), r * a)


def test_given_complex_output_is_written_and_returned():
    a, b = _c((7,), torch.complex64), _c((7,), torch.complex64)
    out = torch.full((7,), complex(float("nan"), float("nan")), dtype=torch.complex64)
    assert mul(a, b, out0=out) is out
    torch.testing.assert_close(out, a * b)


def test_real_calls_still_take_the_ordinary_path():
    x, y = torch.randn(5), torch.randn(5)
    torch.testing.assert_close(mul(x, y), x * y)


def test_complex_scalar_needs_tensorize_scalars():
    a = _c((3,), torch.complex64)
    with pytest.raises(TypeError, match="complex"):
        add_alpha(a, a, 1j)
