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


# ---------------------------------------------------------------------------------------------
# Python scalars: tensorize_scalars + fallback_target (FlagGems' form), and each mode on its own.

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
SCALARS = [1.5 + 2.0j, -0.25j, 2.0, 3, True]


@pointwise_dynamic(is_tensor=[True, False, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add_ts(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(is_tensor=[False, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add_st(x, y, alpha):
    return x + y * alpha


add_ts.register_complex(mode=ComplexMode.ELEMENTWISE, tensorize_scalars=True, fallback_target=add_alpha)
add_st.register_complex(mode=ComplexMode.ELEMENTWISE, tensorize_scalars=True, fallback_target=add_alpha)


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def mul_ts(x, y):
    return x * y


@pointwise_dynamic(is_tensor=[False, True], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def mul_st(x, y):
    return x * y


mul_ts.register_complex(mode=ComplexMode.CROSS, tensorize_scalars=True, fallback_target=mul)
mul_st.register_complex(mode=ComplexMode.CROSS, tensorize_scalars=True, fallback_target=mul)


def _own_handlers():
    """The same tensor-scalar functions handling scalars themselves (no fallback_target)."""

    @pointwise_dynamic(is_tensor=[True, False, False], promotion_methods=[(0, 1, "DEFAULT")])
    @triton.jit
    def add_ts_own(x, y, alpha):
        return x + y * alpha

    @pointwise_dynamic(is_tensor=[False, True], promotion_methods=[(0, 1, "DEFAULT")])
    @triton.jit
    def mul_st_own(x, y):
        return x * y

    add_ts_own.register_complex(ComplexMode.ELEMENTWISE)
    mul_st_own.register_complex(ComplexMode.CROSS, cross_kernel=complex_product)
    return add_ts_own, mul_st_own


add_ts_own, mul_st_own = _own_handlers()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_tensor_scalar_and_scalar_tensor_through_the_fallback(device, dtype, scalar):
    a = torch.randn((3, 5), dtype=dtype, device=device)
    for got, expected in [
        (add_ts(a, scalar, 0.5), a + scalar * 0.5),
        (add_st(scalar, a, 0.5), scalar + a * 0.5),
        (mul_ts(a, scalar), a * scalar),
        (mul_st(scalar, a), scalar * a),
    ]:
        assert got.dtype == expected.dtype == dtype
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_scalars_handled_by_the_mode_itself(device, dtype, scalar):
    """ELEMENTWISE runs the real and the imaginary parts (a real scalar adds to the real part
    only); CROSS gives the cross kernel the scalar's parts (complex x python float included)."""
    a = torch.randn((4, 3), dtype=dtype, device=device).t()
    torch.testing.assert_close(add_ts_own(a, scalar, 2.0), a + scalar * 2.0)
    torch.testing.assert_close(mul_st_own(scalar, a), scalar * a)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32])
def test_real_tensor_with_a_complex_scalar(dtype):
    """The result dtype is torch's: float64 with a complex scalar is complex128, ints give complex64."""
    r = torch.arange(-3, 3, dtype=dtype)
    for got, expected in [
        (add_ts(r, 1.5 - 2j, 1), r + (1.5 - 2j)),
        (add_ts_own(r, 1.5 - 2j, 1), r + (1.5 - 2j)),
        (mul_ts(r, 0.5 + 1j), r * (0.5 + 1j)),
        (mul_st_own(0.5 + 1j, r), (0.5 + 1j) * r),
    ]:
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_given_output_of_a_scalar_call_is_written_and_returned(dtype):
    a = _c((6,), dtype)
    for fn, expected in [(mul_ts, a * (2 - 1j)), (mul_st_own, a * (2 - 1j))]:
        out = torch.full((6,), complex(float("nan"), float("nan")), dtype=dtype)
        args = (a, 2 - 1j) if fn is mul_ts else (2 - 1j, a)
        assert fn(*args, out0=out) is out
        torch.testing.assert_close(out, expected)


# ---------------------------------------------------------------------------------------------
# Conjugate and negative views are resolved; complex outputs of real calls.


@pytest.mark.parametrize("dtype", DTYPES)
def test_conjugate_views(dtype):
    a, b = _c((4, 3), dtype), _c((3,), dtype)
    assert a.conj().is_conj()
    torch.testing.assert_close(mul(a.conj(), b), a.conj() * b)
    torch.testing.assert_close(mul(a, b.conj()), a * b.conj())
    torch.testing.assert_close(add_alpha(a.conj(), b.conj(), 2.0), a.conj() + b.conj() * 2.0)
    torch.testing.assert_close(add_ts(a.conj(), 1j, 1.0), a.conj() + 1j)
    torch.testing.assert_close(add_alpha(a, b.conj().imag, 1.0), a + b.conj().imag)  # a negative view


def test_conjugate_output_is_refused():
    a = _c((3,), torch.complex64)
    out = torch.zeros(3, dtype=torch.complex64).conj()
    with pytest.raises(RuntimeError, match="out0 is a conjugate view"):
        mul(a, a, out0=out)


def test_real_inputs_into_a_complex_output():
    x, y = torch.randn(5), torch.randn(5)
    out = torch.full((5,), complex(float("nan"), float("nan")), dtype=torch.complex64)
    assert mul(x, y, out0=out) is out
    torch.testing.assert_close(out, (x * y).to(torch.complex64))


# ---------------------------------------------------------------------------------------------
# Without register_complex: an error that says to call it.


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def plain_scale(x, s):
    return x * s


@pytest.mark.parametrize(
    "args, kwargs, what",
    [
        ((_c((3,), torch.complex64), 2.0), {}, r"argument 0 is complex \(torch.complex64\)"),
        ((torch.randn(3), 1j), {}, r"argument 1 is complex \(a python complex\)"),
        ((torch.randn(3), 2.0), {"out0": torch.empty(3, dtype=torch.complex64)}, r"out0 is complex"),
    ],
    ids=["tensor", "scalar", "output"],
)
def test_complex_without_register_complex_says_to_call_it(args, kwargs, what):
    with pytest.raises(TypeError, match=what + r".*call plain_scale.register_complex\(ComplexMode.ELEMENTWISE\)"):
        plain_scale(*args, **kwargs)


def test_complex_argument_that_no_promotion_names():
    a = _c((3,), torch.complex64)
    with pytest.raises(TypeError, match=r"add_alpha: argument 2 is complex, but no promotion method names it"):
        add_alpha(a, a, 1j)


# ---------------------------------------------------------------------------------------------
# Registration mistakes are reported when registering, not at the first call.


def _fresh_mul():
    @pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
    @triton.jit
    def fresh_mul(x, y):
        return x * y

    return fresh_mul


@triton.jit
def bare_cross(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


@pointwise_dynamic(promotion_methods=[((0, 1, 2), "DEFAULT"), ((0, 1, 2), "DEFAULT")])
@triton.jit
def three_in_cross(ar, ai, b):
    return ar * b, ai * b


@pytest.mark.parametrize(
    "kwargs, error, pattern",
    [
        (
            dict(mode=ComplexMode.CROSS, cross_kernel=bare_cross),
            TypeError,
            r"cross_kernel must be a PointwiseDynamicFunction.*"
            r"bare @triton.jit function: wrap it with pointwise_dynamic",
        ),
        (
            dict(mode=ComplexMode.CROSS, cross_kernel=three_in_cross),
            ValueError,
            r"cross_kernel must take 4 inputs \(real, imag of each of the 2 operands.*three_in_cross takes 3",
        ),
        (dict(mode=ComplexMode.CROSS), ValueError, r"ComplexMode.CROSS needs cross_kernel="),
        (dict(mode=ComplexMode.ELEMENTWISE, cross_kernel=complex_product), ValueError, r"ComplexMode.CROSS only"),
        (dict(mode=ComplexMode.ELEMENTWISE, fallback_target=mul), ValueError, r"only with tensorize_scalars=True"),
        (
            dict(mode=ComplexMode.ELEMENTWISE, tensorize_scalars=True, fallback_target=add_alpha),
            ValueError,
            r"fallback_target must take the same 2 inputs and 1 outputs; add_alpha takes 3",
        ),
        (
            dict(mode=ComplexMode.ELEMENTWISE, tensorize_scalars=True, fallback_target=bare_cross),
            TypeError,
            r"fallback_target must be a PointwiseDynamicFunction",
        ),
        (dict(mode="sideways"), ValueError, r"mode must be a ComplexMode"),
    ],
    ids=[
        "bare-jit",
        "cross-arity",
        "no-cross",
        "cross-elementwise",
        "fallback-alone",
        "fallback-arity",
        "fallback-jit",
        "mode",
    ],
)
def test_registration_mistakes(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        _fresh_mul().register_complex(**kwargs)


def test_fallback_that_takes_the_operand_as_a_scalar():
    with pytest.raises(ValueError, match=r"mul_ts takes argument 1 as a scalar"):
        mul_ts.register_complex(ComplexMode.CROSS, tensorize_scalars=True, fallback_target=mul_ts)


def test_cross_needs_one_output():
    with pytest.raises(ValueError, match="exactly one output, got 2"):
        complex_product.register_complex(ComplexMode.CROSS, cross_kernel=complex_product)


def test_mode_none_unregisters_and_names_are_accepted():
    f = _fresh_mul()
    a = _c((3,), torch.complex128)
    f.register_complex("cross", cross_kernel=complex_product)
    torch.testing.assert_close(f(a, a), a * a)
    f.register_complex(ComplexMode.NONE)
    with pytest.raises(TypeError, match="register_complex"):
        f(a, a)


def test_explain_of_a_complex_call_says_what_runs():
    a = _c((3,), torch.complex64)
    with pytest.raises(TypeError, match=r"mul.explain: a complex call runs the real kernel over view_as_real data"):
        mul.explain(a, a)


def test_negative_views_of_real_tensors_are_read_as_torch_reads_them():
    z = torch.randn(6, dtype=torch.complex64)
    imag = z.conj().imag  # a real tensor with torch's negative bit: values are -z.imag
    assert imag.is_neg()
    base = torch.randn(6)
    for _ in range(2):  # the second call must not hit a plan of the unflagged signature
        torch.testing.assert_close(mul(base, imag), base * imag)
    torch.testing.assert_close(mul(base, imag.resolve_neg()), base * imag)
    with pytest.raises(RuntimeError, match="out0 is a negative view"):
        mul(base, base, out0=imag)
