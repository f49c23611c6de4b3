"""A given output whose dtype differs from its promotion's result (FlagGems' frexp), and payload
arity checked at decoration. torch is the oracle."""

import pytest
import torch
import triton
import triton.language as tl

from tritonwise import SchemaError, pointwise_dynamic

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT"), (0, "DEFAULT")])
@triton.jit
def mantissa_exponent(x):
    """frexp for normal finite non-zero values, the exponent as int32 (as FlagGems' frexp declares
    both outputs DEFAULT and gives out1 as an int32 tensor)."""
    exponent = tl.floor(tl.log2(tl.abs(x))) + 1.0
    return x / tl.exp2(exponent), exponent.to(tl.int32)


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add(x, y):
    return x + y


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def is_positive(x):
    return x > 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_int32_exponent_output_beside_a_float_promotion(device, dtype):
    x = torch.tensor([1.0, -3.5, 1e-30, 7e20, 0.3, -1024.0], dtype=dtype, device=device).reshape(2, 3).t()
    mantissa = torch.full_like(x, float("nan"))
    exponent = torch.full(x.shape, 77, dtype=torch.int32, device=device)
    got = mantissa_exponent(x, out0=mantissa, out1=exponent)
    assert got[0] is mantissa and got[1] is exponent
    expected_m, expected_e = torch.frexp(x)
    torch.testing.assert_close(mantissa, expected_m)
    assert torch.equal(exponent, expected_e)


def test_the_exponent_is_not_rounded_through_the_promotion_dtype():
    """int64 out receives the payload's int value directly, not through float32 (2**24 + 1)."""

    @pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
    @triton.jit
    def plus_big(x):
        return x.to(tl.int64) + 16777217

    x = torch.zeros(3)
    out = torch.zeros(3, dtype=torch.int64)
    plus_big(x, out0=out)
    assert out.tolist() == [16777217] * 3


def test_bool_output_for_a_comparison_under_default_promotion():
    x = torch.randn(6)
    out = torch.ones(6, dtype=torch.bool) & (torch.arange(6) % 2 == 0)
    is_positive(x, out0=out)
    assert torch.equal(out, x > 0)


@pytest.mark.parametrize(
    "inputs, out_dtype, result",
    [
        ((torch.float32, torch.float32), torch.int32, "float32"),
        ((torch.int32, torch.int32), torch.bool, "int32"),
        ((torch.float16, torch.float16), torch.int64, "float16"),
    ],
    ids=str,
)
def test_torch_casting_rule_still_holds_when_the_payload_value_cannot_be_cast(inputs, out_dtype, result):
    a, b = (torch.ones(4, dtype=d) for d in inputs)
    pattern = rf"add: result type torch.{result} can't be cast to the desired output type {out_dtype} \(out0\)"
    with pytest.raises(RuntimeError, match=pattern):
        add(a, b, out0=torch.empty(4, dtype=out_dtype))
    with pytest.raises(RuntimeError, match=pattern):
        add.explain(a, b, out0=torch.empty(4, dtype=out_dtype))


def test_allocated_outputs_keep_the_promotion_dtype():
    m, e = mantissa_exponent(torch.tensor([3.0]))
    assert m.dtype == e.dtype == torch.float32
    assert e.item() == 2.0


# ---------------------------------------------------------------------------------------------
# Payload arity against num_inputs / is_tensor / dtypes: an error at decoration.


@triton.jit
def two_args(x, y):
    return x + y


@triton.jit
def with_default(x, y, scale=2.0):
    return (x + y) * scale


@pytest.mark.parametrize(
    "payload, kwargs, pattern",
    [
        (
            two_args,
            dict(is_tensor=[True, True, False]),
            r"payload two_args takes 2 positional arguments, but is_tensor=\[True, True, False\] gives it 3 inputs",
        ),
        (two_args, dict(num_inputs=1), r"takes 2 positional arguments, but num_inputs=1 gives it 1 input$"),
        (two_args, dict(dtypes=[None, float, None]), r"dtypes=\[None, <class 'float'>, None\] gives it 3 inputs"),
        (with_default, dict(num_inputs=1), r"payload with_default takes 2 to 3 positional arguments"),
    ],
    ids=["is_tensor", "num_inputs", "dtypes", "defaults"],
)
def test_payload_arity_is_checked_at_decoration(payload, kwargs, pattern):
    with pytest.raises(SchemaError, match=pattern):
        pointwise_dynamic(payload, promotion_methods=[(0, "DEFAULT")], **kwargs)


def test_payload_with_a_default_may_be_given_fewer_inputs():
    f = pointwise_dynamic(with_default, num_inputs=2, promotion_methods=[(0, 1, "DEFAULT")])
    x, y = torch.randn(4), torch.randn(4)
    torch.testing.assert_close(f(x, y), (x + y) * 2.0)


UNPROMOTABLE = [torch.uint16, torch.uint32, torch.uint64, torch.float8_e4m3fn, torch.float8_e5m2]
PARTNERS = [torch.uint32, torch.float8_e5m2, torch.bool, torch.uint8, torch.int64, torch.float16, torch.float32]


@pytest.mark.parametrize("dtype", UNPROMOTABLE, ids=str)
def test_dtypes_torch_does_not_promote_are_refused_as_torch_refuses_them(dtype):
    """torch promotes uint16/32/64 and float8 with no other dtype among tensors of one kind (sized
    or 0-d), nor across kinds where the result would need it; where it does promote, the dtype is
    its. Meta tensors: the promotion alone, nothing runs."""
    checked = 0
    for other in PARTNERS:
        for x_dims, y_dims in ((1, 1), (1, 0), (0, 1)):
            x, y = (torch.empty((2,) * n, dtype=d, device="meta") for d, n in ((dtype, x_dims), (other, y_dims)))
            try:
                want = torch.result_type(x, y)
            except RuntimeError:
                with pytest.raises(RuntimeError, match="inputs 0, 1: Promotion for"):
                    add(x, y)
                checked += 1
            else:
                assert add(x, y).dtype == want
    assert checked >= len(PARTNERS) - 1


def test_the_refusal_replays_torch_over_tensors_0d_tensors_and_python_numbers():
    """elementwise_dtypes against torch.result_type for every pair with a dtype torch does not
    promote: sized and 0-d tensors and python numbers, complex ones too, either order."""
    from tritonwise.frontend.promotion import KIND, elementwise_dtypes

    others = [torch.bool, torch.uint8, torch.int64, torch.float16, torch.float64, torch.complex64]
    for dtype in UNPROMOTABLE:
        for other in [*UNPROMOTABLE, *others, 2, 2.5, True, 1j]:
            for a_dims, b_dims in ((1, 1), (1, 0), (0, 1)):
                a = torch.empty((2,) * a_dims, dtype=dtype, device="meta")
                b = torch.empty((2,) * b_dims, dtype=other, device="meta") if isinstance(other, torch.dtype) else other
                for pair in ((a, b), (b, a)):
                    try:
                        want = torch.result_type(*pair)
                    except RuntimeError:
                        with pytest.raises(RuntimeError):
                            elementwise_dtypes(pair, KIND.NO_OPMATH)
                    else:
                        assert elementwise_dtypes(pair, KIND.NO_OPMATH)[1] == want, pair
