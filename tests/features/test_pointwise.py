"""Behaviour of pointwise_dynamic functions, with torch as the oracle.

Each test runs one expression through torch and through tritonwise (CPU tensors run the
generated kernels in Triton's interpreter) and compares values, dtypes and shapes exactly.
Given outputs are poisoned first, so an element the kernel fails to write shows up.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import triton
import triton.language as tl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch._prims_common import elementwise_dtypes

from tests.support import payload_helpers
from tests.support import payload_no_tl
import tritonwise
from tests.support.poison import poisoned_like
from tritonwise import ELEMENTWISE_TYPE_PROMOTION_KIND as KIND
from tritonwise import CodeGenConfig, pointwise_dynamic


# ---------------------------------------------------------------------------------------------
# Bodies written once: called directly on torch tensors, and wrapped with triton.jit as payloads.


def add_body(x, y):
    return x + y


def mul_body(x, y):
    return x * y


def fma_body(x, y, z):
    return x * y + z


def add_sub_body(x, y):
    return (x + y) - y


def twin(body, **schema):
    """A tritonwise function whose payload is `body` itself."""
    return pointwise_dynamic(triton.jit(body), **schema)


ADD = twin(add_body, promotion_methods=[(0, 1, "DEFAULT")])
ADD_SCALAR = twin(add_body, is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
MUL_SCALAR = twin(mul_body, is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])


def assert_same(got, expected, exact=True):
    """Same dtype, same shape and the same values (bit for bit unless `exact=False`)."""
    assert isinstance(got, torch.Tensor), f"expected a tensor, got {type(got).__name__}"
    assert got.dtype == expected.dtype, f"dtype {got.dtype}, torch gives {expected.dtype}"
    assert got.shape == expected.shape, f"shape {tuple(got.shape)}, torch gives {tuple(expected.shape)}"
    if exact:
        torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=False)
    else:
        torch.testing.assert_close(got, expected)


def run_both(fn, body, *args, exact=True):
    """fn(*args) against body(*args) evaluated by torch; returns tritonwise's result."""
    expected = body(*args)
    got = fn(*args)
    assert_same(got, expected, exact=exact)
    return got


def randn(*shape, dtype=torch.float32):
    return torch.randn(shape).to(dtype)


def randint(*shape, dtype=torch.int32, low=-50, high=50):
    return torch.randint(low, high, shape, dtype=dtype)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# ---------------------------------------------------------------------------------------------
# Payloads used through the decorator form (stacked on @triton.jit).


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add(x, y):
    return x + y


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT"), (0, 1, "DEFAULT")])
@triton.jit
def polar(r, theta):
    return r * tl.cos(theta), r * tl.sin(theta)


@pointwise_dynamic(promotion_methods=[(0, "NO_OPMATH")])
@triton.jit
def copy(x):
    return x


@pointwise_dynamic(promotion_methods=[(0, "INT_TO_FLOAT")])
@triton.jit
def sin(x):
    return tl.sin(x)


@pointwise_dynamic(promotion_methods=[(0, 1, "ALWAYS_BOOL")])
@triton.jit
def eq(x, y):
    return x == y


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "ALWAYS_BOOL")])
@triton.jit
def eq_scalar(x, y):
    return x == y


@pointwise_dynamic(promotion_methods=[(0, "COMPLEX_TO_FLOAT")])
@triton.jit
def absolute(x):
    return tl.abs(x)


@pointwise_dynamic(promotion_methods=[(0, "BOOL_TO_LONG")])
@triton.jit
def as_long_if_bool(x):
    return x


@pointwise_dynamic(promotion_methods=[(1, 2, "NO_OPMATH")])
@triton.jit
def where(condition, x, y):
    return tl.where(condition, x, y)


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(1, 2, "NO_OPMATH")])
@triton.jit
def where_scalar(condition, x, y):
    return tl.where(condition, x, y)


@triton.jit
def square(x):
    return x * x


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def square_plus(x, y):
    return square(x) + y


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def twice_plus_one(x):
    return payload_helpers.twice(x) + 1


# ---------------------------------------------------------------------------------------------
# Decorator forms and the schema defaults.


def test_decorator_form_returns_a_pointwise_function():
    assert isinstance(add, tritonwise.PointwiseDynamicFunction)
    assert add.__name__ == "add"
    a, b = randn(3, 4), randn(3, 4)
    assert_same(add(a, b), a + b)


def test_call_form_with_payload_argument():
    fn = pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
    assert isinstance(fn, tritonwise.PointwiseDynamicFunction)
    a, b = randn(7), randn(7)
    assert_same(fn(a, b), a + b)


def test_num_inputs_defaults_to_the_payload_argument_count():
    fn = twin(fma_body, promotion_methods=[(0, 1, 2, "DEFAULT")])
    assert fn.schema.num_inputs() == 3
    assert fn.schema.num_input_tensors() == 3
    run_both(fn, fma_body, randn(2, 3), randn(3), randn(2, 1), exact=False)


def test_num_outputs_defaults_to_number_of_methods():
    assert polar.schema.num_outputs() == 2
    assert add.schema.num_outputs() == 1


# ---------------------------------------------------------------------------------------------
# Broadcasting and layouts.

BROADCAST = {
    "row": ((4, 5), (5,)),
    "column": ((4, 5), (4, 1)),
    "0-d": ((4, 5), ()),
    "0-d first": ((), (4, 5)),
    "leading dims": ((2, 3, 4), (4,)),
    "both sides": ((4, 1), (1, 5)),
    "rank 3": ((2, 1, 4), (3, 1)),
    "rank 4": ((2, 3, 4, 5), (3, 1, 5)),
    "rank 4 interleaved": ((1, 3, 1, 5), (2, 1, 4, 1)),
    "size-1 everywhere": ((1, 1, 6), (1, 1)),
}


@pytest.mark.parametrize("shapes", list(BROADCAST.values()), ids=list(BROADCAST))
def test_broadcasting(shapes):
    a, b = randn(*shapes[0]), randn(*shapes[1])
    run_both(ADD, add_body, a, b)


NON_CONTIGUOUS = {
    "transposed": lambda: (randn(5, 4).t(), randn(4, 5)),
    "both transposed": lambda: (randn(5, 4).t(), randn(5, 4).t()),
    "second transposed": lambda: (randn(4, 5), randn(5, 4).t()),
    "permuted 3-d": lambda: (randn(4, 5, 3).permute(2, 0, 1), randn(3, 4, 5)),
    "permuted 4-d": lambda: (randn(2, 5, 3, 4).permute(0, 2, 3, 1), randn(5)),
    "sliced with steps": lambda: (randn(8, 12)[::2, 1::3], randn(4, 4)),
    "sliced both": lambda: (randn(12, 10)[1::3, ::2], randn(10, 6)[::3, 1:]),
    "expanded": lambda: (randn(4, 1).expand(4, 5), randn(4, 5)),
    "expanded both": lambda: (randn(1, 5).expand(3, 5), randn(3, 1).expand(3, 5)),
    "storage offset": lambda: (randn(40)[7:27].view(4, 5), randn(4, 5)),
    "transposed + row": lambda: (randn(6, 4).t(), randn(6)),
    "channels_last + contiguous": lambda: (
        randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
        randn(2, 3, 4, 5),
    ),
    "transposed 3-d inner": lambda: (randn(2, 3, 4).transpose(1, 2), randn(2, 4, 3)),
}


@pytest.mark.parametrize("make", list(NON_CONTIGUOUS.values()), ids=list(NON_CONTIGUOUS))
def test_non_contiguous_inputs(make):
    a, b = make()
    run_both(ADD, add_body, a, b)


@pytest.mark.parametrize("make", list(NON_CONTIGUOUS.values())[:6], ids=list(NON_CONTIGUOUS)[:6])
def test_non_contiguous_inputs_into_given_output(make):
    a, b = make()
    expected = a + b
    out = poisoned_like(expected.contiguous())
    assert ADD(a, b, out0=out) is out
    assert_same(out, expected)


# ---------------------------------------------------------------------------------------------
# Scalars.


def test_scalar_first():
    fn = twin(fma_body, is_tensor=[False, True, True], promotion_methods=[(0, 1, 2, "DEFAULT")])
    run_both(fn, fma_body, 2.5, randn(3, 4), randn(4), exact=False)


def test_scalar_in_the_middle():
    fn = twin(fma_body, is_tensor=[True, False, True], promotion_methods=[(0, 1, 2, "DEFAULT")])
    run_both(fn, fma_body, randn(3, 4), -3, randn(3, 1), exact=False)
    run_both(fn, fma_body, randint(3, 4), 1.5, randint(4), exact=False)


def test_scalar_last():
    fn = twin(fma_body, is_tensor=[True, True, False], promotion_methods=[(0, 1, 2, "DEFAULT")])
    run_both(fn, fma_body, randn(3, 4), randn(4), 0.25, exact=False)


def test_scalars_given_by_dtypes():
    fn = twin(fma_body, dtypes=[None, float, None], promotion_methods=[(0, 1, 2, "DEFAULT")])
    assert [fn.schema.is_tensor(i) for i in range(3)] == [True, False, True]
    run_both(fn, fma_body, randn(5), 0.5, randn(2, 5), exact=False)


def test_bool_scalar():
    fn = twin(fma_body, is_tensor=[True, False, True], promotion_methods=[(0, 1, 2, "DEFAULT")])
    run_both(fn, fma_body, randn(6), True, randn(6), exact=False)


def test_only_scalars_but_one_tensor_broadcast():
    fn = twin(fma_body, is_tensor=[False, False, True], promotion_methods=[(0, 1, 2, "DEFAULT")])
    run_both(fn, fma_body, 2, 3, randint(2, 3), exact=True)


def test_new_scalar_values_reuse_the_plan():
    a = randn(5)
    ADD_SCALAR(a, 1.0)
    hits, misses = ADD_SCALAR.plan_cache.hits, ADD_SCALAR.plan_cache.misses
    for value in (2.0, -7.25, 1e10):
        assert_same(ADD_SCALAR(a, value), a + value)
    assert ADD_SCALAR.plan_cache.misses == misses
    assert ADD_SCALAR.plan_cache.hits == hits + 3


# ---------------------------------------------------------------------------------------------
# Result dtypes: torch-exact for every promotion kind, python scalars and 0-d tensors.

DEFAULT_CASES = {
    "int32 + 2.5 -> float32": (ADD_SCALAR, lambda: (randint(6), 2.5)),
    "fp16 + 2.5 -> fp16": (ADD_SCALAR, lambda: (randn(6, dtype=torch.float16), 2.5)),
    "int64 + 2**40 exact": (ADD_SCALAR, lambda: (randint(6, dtype=torch.int64) + 2**35, 2**40 + 1)),
    "int64 * -2**62 exact": (MUL_SCALAR, lambda: (randint(6, dtype=torch.int64, low=-2, high=3), -(2**62))),
    "fp64 + 0.1 keeps fp64": (ADD_SCALAR, lambda: (randn(6, dtype=torch.float64), 0.1)),
    "fp64 * 0.1 keeps fp64": (MUL_SCALAR, lambda: (randn(6, dtype=torch.float64), 0.1)),
    "fp64 + 2**53+1": (ADD_SCALAR, lambda: (randn(6, dtype=torch.float64), 2**53 + 1)),
    "fp32 * 0.1": (MUL_SCALAR, lambda: (randn(6), 0.1)),
    "int32 + 2**40 wraps like torch": (ADD_SCALAR, lambda: (randint(6), 2**40 + 3)),
    "uint8 + -1 wraps like torch": (ADD_SCALAR, lambda: (torch.arange(6, dtype=torch.uint8), -1)),
    "int8 + 100": (ADD_SCALAR, lambda: (randint(6, dtype=torch.int8), 100)),
    "bool + 1 -> int64": (ADD_SCALAR, lambda: (torch.tensor([True, False, True]), 1)),
    "bool + 2.5 -> float32": (ADD_SCALAR, lambda: (torch.tensor([True, False, True]), 2.5)),
    "int32 + True -> int32": (ADD_SCALAR, lambda: (randint(6), True)),
    "int32 + 0-d float64 -> float64": (ADD, lambda: (randint(6), torch.tensor(2.5, dtype=torch.float64))),
    "fp16 + 0-d float32 -> fp16": (ADD, lambda: (randn(6, dtype=torch.float16), torch.tensor(2.5))),
    "int8 + 0-d int64 -> int8": (ADD, lambda: (randint(6, dtype=torch.int8), torch.tensor(3))),
    "0-d int64 + fp16 -> fp16": (ADD, lambda: (torch.tensor(3), randn(6, dtype=torch.float16))),
    "0-d int + 0-d float": (ADD, lambda: (torch.tensor(3), torch.tensor(0.5))),
    "int32 + int64": (ADD, lambda: (randint(6), randint(6, dtype=torch.int64))),
    "fp16 + fp32": (ADD, lambda: (randn(6, dtype=torch.float16), randn(6))),
    "int16 + uint8 -> int16": (ADD, lambda: (randint(6, dtype=torch.int16), torch.arange(6, dtype=torch.uint8))),
    "fp64 + fp16": (ADD, lambda: (randn(6, dtype=torch.float64), randn(6, dtype=torch.float16))),
    "bool + int8": (ADD, lambda: (torch.tensor([True, False, True]), randint(3, dtype=torch.int8))),
}


@pytest.mark.parametrize("fn, make", list(DEFAULT_CASES.values()), ids=list(DEFAULT_CASES))
def test_default_promotion_matches_torch(fn, make):
    args = make()
    body = mul_body if fn is MUL_SCALAR else add_body
    run_both(fn, body, *args)


def test_fp64_with_python_float_is_not_rounded_through_fp32():
    x = torch.tensor([1.0, 3.0, 1e-3], dtype=torch.float64)
    got = MUL_SCALAR(x, 0.1)
    assert_same(got, x * 0.1)
    assert not torch.equal(got, (x.float() * 0.1).double())


def test_fp16_times_python_float_uses_the_full_scalar():
    x = torch.randn(300).half()
    got = MUL_SCALAR(x, 0.1234567)
    assert_same(got, x * 0.1234567)  # torch's mul: fp32 opmath with the scalar's own value
    assert not torch.equal(got, x * torch.tensor(0.1234567).half())


def test_fp16_is_computed_in_fp32():
    fn = twin(add_sub_body, promotion_methods=[(0, 1, "DEFAULT")])
    x = torch.full((8,), 1.0, dtype=torch.float16)
    y = torch.full((8,), 2048.0, dtype=torch.float16)  # 2049 is not an fp16 number
    got = fn(x, y)
    expected = add_sub_body(x.float(), y.float()).half()  # torch's opmath: fp32 inside, fp16 out
    assert_same(got, expected)
    assert torch.all(got == 1.0)
    assert not torch.equal(got, add_sub_body(x, y))  # fp16 all the way would give 0


def test_no_opmath_computes_in_fp16():
    fn = twin(add_sub_body, promotion_methods=[(0, 1, "NO_OPMATH")])
    x = torch.full((8,), 1.0, dtype=torch.float16)
    y = torch.full((8,), 2048.0, dtype=torch.float16)
    assert_same(fn(x, y), add_sub_body(x, y))


@pytest.mark.parametrize(
    "x",
    [randint(7), torch.tensor([True, False]), randn(7, dtype=torch.float16), randint(3, 4, dtype=torch.int8)],
    ids=["int32", "bool", "fp16", "int8"],
)
def test_no_opmath_copy_keeps_dtype(x):
    assert_same(copy(x), x.clone())


def test_no_opmath_where_like():
    c = randn(3, 4) > 0
    x, y = randn(3, 4, dtype=torch.float16), randn(4)
    assert_same(where(c, x, y), torch.where(c, x, y))
    xi, yi = randint(3, 4), randint(3, 1, dtype=torch.int64)
    assert_same(where(c, xi, yi), torch.where(c, xi, yi))


def test_no_opmath_where_with_scalar():
    c = torch.tensor([True, False, True, False])
    x = randn(4, dtype=torch.float16)
    assert_same(where_scalar(c, x, 2.5), torch.where(c, x, 2.5))
    xi = randint(4)
    assert_same(where_scalar(c, xi, 7), torch.where(c, xi, 7))


@pytest.mark.parametrize(
    "x",
    [
        torch.arange(-5, 5, dtype=torch.int32),
        torch.arange(-5, 5, dtype=torch.int64),
        torch.tensor([True, False, True]),
        torch.linspace(-3, 3, 9).half(),
        torch.linspace(-3, 3, 9, dtype=torch.float64),
    ],
    ids=["int32", "int64", "bool", "fp16", "fp64"],
)
def test_int_to_float(x):
    assert_same(sin(x), torch.sin(x), exact=False)


@pytest.mark.parametrize(
    "x, y",
    [
        (torch.arange(-3, 3, dtype=torch.int32), torch.arange(-3, 3).float() * 0.5),
        (torch.arange(4), torch.tensor(2.0)),
        (randn(5, dtype=torch.float16), randn(5, dtype=torch.float16)),
        (torch.tensor([True, False]), torch.tensor([1, 1])),
    ],
    ids=["int32 vs float", "int64 vs 0-d float", "fp16", "bool vs int"],
)
def test_always_bool(x, y):
    expected = torch.eq(x, y)
    assert_same(eq(x, y), expected)
    out = poisoned_like(expected, fill=False) if expected.all() else torch.logical_not(expected)
    assert eq(x, y, out0=out) is out
    assert_same(out, expected)


@pytest.mark.parametrize("value", [2, 2.5, 1.5], ids=["int", "float", "exact float"])
def test_always_bool_with_scalar(value):
    x = torch.arange(6, dtype=torch.int32)
    xf = torch.arange(6) * 0.5
    assert_same(eq_scalar(x, value), torch.eq(x, value))
    assert_same(eq_scalar(xf, value), torch.eq(xf, value))


@pytest.mark.parametrize(
    "x",
    [randint(7), randn(7), randn(7, dtype=torch.float16), randn(7, dtype=torch.float64), randint(7, dtype=torch.int8)],
    ids=["int32", "fp32", "fp16", "fp64", "int8"],
)
def test_complex_to_float_on_real_tensors(x):
    assert_same(absolute(x), torch.abs(x))


@pytest.mark.parametrize(
    "x",
    [torch.tensor([True, False, True]), randint(5), randn(5, dtype=torch.float16)],
    ids=["bool", "int32", "fp16"],
)
def test_bool_to_long(x):
    _, result = elementwise_dtypes(x, type_promotion_kind=KIND.BOOL_TO_LONG)
    assert_same(as_long_if_bool(x), x.to(result))
    if x.dtype == torch.bool:
        assert as_long_if_bool(x).dtype == torch.int64


# ---------------------------------------------------------------------------------------------
# Outputs.


def test_two_outputs_allocated():
    r, theta = torch.rand(3, 5), randn(5)
    x, y = polar(r, theta)
    assert_same(x, r * torch.cos(theta), exact=False)
    assert_same(y, r * torch.sin(theta), exact=False)


def test_two_outputs_given():
    r, theta = torch.rand(3, 5), randn(3, 5)
    out0, out1 = poisoned_like(r), poisoned_like(r)
    result = polar(r, theta, out0=out0, out1=out1)
    assert isinstance(result, tuple) and len(result) == 2
    assert result[0] is out0 and result[1] is out1
    assert_same(out0, r * torch.cos(theta), exact=False)
    assert_same(out1, r * torch.sin(theta), exact=False)


@pytest.mark.parametrize("given", ["out0", "out1"])
def test_two_outputs_one_given(given):
    r, theta = torch.rand(8), randn(8)
    out = poisoned_like(r)
    result = polar(r, theta, **{given: out})
    k = int(given[-1])
    assert result[k] is out
    assert_same(result[0], r * torch.cos(theta), exact=False)
    assert_same(result[1], r * torch.sin(theta), exact=False)


@pointwise_dynamic(promotion_methods=[(0, "INT_TO_FLOAT"), (0, "DEFAULT")])
@triton.jit
def halve_and_identity(x):
    return x / 2, x


@pointwise_dynamic(promotion_methods=[(0, "INT_TO_FLOAT"), (0, "DEFAULT")])
@triton.jit
def sin_and_identity(x):
    return tl.sin(x), x


def test_two_outputs_with_different_kinds_over_one_input():
    x = torch.tensor([-3, 0, 7], dtype=torch.int32)
    half, same = halve_and_identity(x)
    assert_same(half, x / 2)
    assert_same(same, x.clone())


def test_input_shared_by_float_and_int_outputs_keeps_int_precision():
    """Each output computes in its own dtype, as torch would for each alone (frontend/dtypes.py):
    the payload is called once with the float32 input for out0 and once with the int32 input for
    out1, so the int output is exact and the float one rounds where torch rounds."""
    x = torch.tensor([2**24 + 1, 2**30 + 3, -(2**25) - 1], dtype=torch.int32)
    half, same = halve_and_identity(x)
    assert_same(half, x / 2)
    assert_same(same, x.clone())


def test_each_output_runs_only_the_statements_it_needs():
    """`tl.sin` of int32 is no Triton program: the int output's call runs a variant of the payload
    without it (autodiff/variants.py), so both outputs compute as torch's ops do."""
    x = torch.tensor([1, -2, 7], dtype=torch.int32)
    s, same = sin_and_identity(x)
    assert_same(s, torch.sin(x), exact=False)
    assert_same(same, x)
    s, same = sin_and_identity(torch.tensor([1.0, 2.0]))  # one dtype, one call
    assert_same(s, torch.sin(torch.tensor([1.0, 2.0])), exact=False)


def test_in_place_returns_the_input_object():
    a, b = randn(4, 5), randn(4, 5)
    expected = a + b
    assert ADD(a, b, out0=a) is a
    assert_same(a, expected)


def test_in_place_on_second_input_with_broadcast_first():
    a, b = randn(5), randn(4, 5)
    expected = a + b
    assert ADD(a, b, out0=b) is b
    assert_same(b, expected)


def test_in_place_transposed():
    a, b = randn(5, 4).t(), randn(4, 5)
    expected = a + b
    assert ADD(a, b, out0=a) is a
    assert_same(a, expected)


@pytest.mark.parametrize(
    "x, out_dtype",
    [
        (randn(3, 4), torch.float64),
        (randint(3, 4), torch.float32),
        (randint(3, 4), torch.int64),
        (randn(3, 4), torch.float16),
    ],
    ids=["fp32->fp64", "int32->fp32", "int32->int64", "fp32->fp16"],
)
def test_given_output_with_castable_dtype(x, out_dtype):
    y = x.flip(0)
    expected = torch.empty(3, 4, dtype=out_dtype)
    torch.add(x, y, out=expected)
    out = poisoned_like(expected)
    assert ADD(x, y, out0=out) is out
    assert_same(out, expected)


def test_given_non_contiguous_output():
    a, b = randn(4, 5), randn(5)
    base = torch.full((5, 8), float("nan"))
    out = base[:, ::2].t()  # (4, 5) with strides (2, 8)
    assert not out.is_contiguous()
    assert ADD(a, b, out0=out) is out
    assert_same(out, a + b)
    assert torch.isnan(base[:, 1::2]).all(), "wrote outside the output view"


def test_given_output_as_transposed_view_with_transposed_input():
    a = randn(6, 4).t()
    base = poisoned_like(torch.empty(6, 4))
    out = base.t()
    assert ADD(a, a, out0=out) is out
    assert_same(out, a + a)


def stride_cases():
    cl = lambda: randn(2, 3, 4, 5).to(memory_format=torch.channels_last)  # noqa: E731
    return {
        "channels_last + channels_last": lambda: (cl(), cl()),
        "channels_last + bias": lambda: (cl(), randn(3, 1, 1)),
        "channels_last + row": lambda: (cl(), randn(5)),
        "contiguous + channels_last": lambda: (randn(2, 3, 4, 5), cl()),
        "two transposed": lambda: (randn(5, 4).t(), randn(5, 4).t()),
        "transposed + contiguous": lambda: (randn(5, 4).t(), randn(4, 5)),
        "contiguous + transposed": lambda: (randn(4, 5), randn(5, 4).t()),
        "two permuted 3-d": lambda: (randn(4, 5, 3).permute(2, 0, 1), randn(4, 5, 3).permute(2, 0, 1)),
        "transposed + column": lambda: (randn(5, 4).t(), randn(4, 1)),
        "0-d + transposed": lambda: (torch.tensor(1.5), randn(5, 4).t()),
        "sliced": lambda: (randn(8, 12)[::2, 1::3], randn(4, 4)),
    }


@pytest.mark.parametrize("make", list(stride_cases().values()), ids=list(stride_cases()))
def test_allocated_output_has_torchs_strides(make):
    a, b = make()
    expected = a + b
    got = run_both(ADD, add_body, a, b)
    assert got.stride() == expected.stride()


@pytest.mark.parametrize(
    "make",
    [
        lambda: (randn(2, 3, 4, 1).to(memory_format=torch.channels_last),) * 2,
        lambda: (randn(7, 5, 3)[:, :1, :1], randn(4, 7).t().unsqueeze(1)),
    ],
    ids=["channels_last with W=1", "slice + unsqueezed transpose"],
)
def test_allocated_output_strides_with_size_one_dims(make):
    a, b = make()
    expected = a + b
    got = run_both(ADD, add_body, a, b)
    assert got.stride() == expected.stride()


def test_channels_last_in_channels_last_out():
    x = randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    got = ADD(x, x)
    assert got.is_contiguous(memory_format=torch.channels_last)
    assert_same(got, x + x)


@pytest.mark.parametrize("shapes", [((0, 3), (3,)), ((2, 0), (2, 1)), ((0,), ()), ((3, 0, 2), (0, 1))])
def test_numel_zero(shapes):
    a, b = randn(*shapes[0]), randn(*shapes[1])
    run_both(ADD, add_body, a, b)
    out = torch.empty(torch.broadcast_shapes(a.shape, b.shape))
    assert ADD(a, b, out0=out) is out


def test_numel_zero_launches_nothing():
    explanation = ADD.explain(randn(0, 3), randn(3))
    assert explanation.path is None


def test_zero_dim_operands():
    a, b = torch.tensor(1.25), torch.tensor(-3.5)
    got = run_both(ADD, add_body, a, b)
    assert got.dim() == 0
    assert ADD.explain(a, b).task_shape == ()


def test_zero_dim_operands_into_given_zero_dim_output():
    a, b = torch.tensor(1.25), torch.tensor(-3.5)
    out = poisoned_like(torch.tensor(0.0))
    assert ADD(a, b, out0=out) is out
    assert_same(out, a + b)


def test_zero_dim_with_scalar():
    a = torch.tensor(3, dtype=torch.int32)
    run_both(ADD_SCALAR, add_body, a, 2.5)


def test_repeated_identical_call_hits_the_plan_cache():
    a, b = randn(3, 4), randn(4)
    ADD(a, b)
    hits, misses = ADD.plan_cache.hits, ADD.plan_cache.misses
    assert_same(ADD(a, b), a + b)
    assert ADD.plan_cache.hits == hits + 1
    assert ADD.plan_cache.misses == misses


def test_plan_hit_with_new_data_gives_new_results():
    a, b = randn(3, 4), randn(4)
    ADD(a, b)
    for _ in range(2):
        a2, b2 = randn(3, 4), randn(4)
        assert_same(ADD(a2, b2), a2 + b2)


# ---------------------------------------------------------------------------------------------
# Errors.


def test_unknown_keyword_is_a_type_error_naming_it():
    a = randn(3)
    with pytest.raises(TypeError, match="out_tensor"):
        ADD(a, a, out_tensor=torch.empty(3))
    with pytest.raises(TypeError, match="out1"):
        ADD(a, a, out1=torch.empty(3))


@pytest.mark.parametrize("count", [1, 3])
def test_wrong_number_of_positional_arguments(count):
    with pytest.raises(TypeError, match="add"):
        add(*[randn(3)] * count)


def test_non_broadcastable_shapes_name_the_shapes():
    with pytest.raises(RuntimeError, match=r"\(3, 4\).*\(5,\)"):
        ADD(randn(3, 4), randn(5))


def test_output_of_wrong_shape():
    with pytest.raises(RuntimeError, match="shape"):
        ADD(randn(3, 4), randn(4), out0=torch.empty(4, 3))
    with pytest.raises(RuntimeError, match="shape"):
        ADD(randn(4), randn(4), out0=torch.empty(2, 4))


def test_output_dtype_not_castable():
    with pytest.raises(RuntimeError, match="cast"):
        ADD(randn(3), randn(3), out0=torch.empty(3, dtype=torch.int32))
    with pytest.raises(RuntimeError, match="cast"):
        ADD_SCALAR(randint(3), 0.5, out0=torch.empty(3, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="cast"):
        ADD(randint(3), randint(3), out0=torch.empty(3, dtype=torch.bool))


def test_output_with_internal_overlap():
    out = torch.empty(4, 1).expand(4, 5)
    with pytest.raises(RuntimeError, match="overlap"):
        ADD(randn(4, 5), randn(5), out0=out)


@pytest.mark.parametrize("shift", [1, 5, 19])
def test_output_partially_overlapping_an_input(shift):
    storage = randn(40)
    a = storage[:20].view(4, 5)
    out = storage[shift:shift + 20].view(4, 5)
    with pytest.raises(RuntimeError, match="overlap"):
        ADD(a, randn(4, 5), out0=out)


def test_output_overlapping_a_broadcast_input_row():
    out = randn(4, 5)
    with pytest.raises(RuntimeError, match="overlap"):
        ADD(out[0], randn(4, 5), out0=out)


def test_disjoint_views_of_one_storage_are_fine():
    storage = randn(40)
    a, out = storage[:20].view(4, 5), storage[20:].view(4, 5)
    expected = a + 1.0
    assert ADD(a, torch.ones(5), out0=out) is out
    assert_same(out, expected)


def test_tensor_given_for_a_scalar_argument():
    with pytest.raises(TypeError, match="argument 1"):
        ADD_SCALAR(randn(3), torch.tensor(2.0))


def test_scalar_given_for_a_tensor_argument():
    with pytest.raises(TypeError, match="argument 0"):
        ADD_SCALAR(2.0, 3.0)
    with pytest.raises(TypeError, match="argument 1"):
        ADD(randn(3), 2.0)


def test_non_number_for_a_scalar_argument():
    with pytest.raises(TypeError):
        ADD_SCALAR(randn(3), "2")


def test_output_that_is_not_a_tensor():
    with pytest.raises(TypeError, match="out0"):
        ADD(randn(3), randn(3), out0=[0.0, 0.0, 0.0])


def plain_python_add(x, y):
    return x + y


@pytest.mark.parametrize(
    "make",
    [
        lambda: pointwise_dynamic(plain_python_add, promotion_methods=[(0, 1, "DEFAULT")]),
        lambda: pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])(plain_python_add),
        lambda: pointwise_dynamic(plain_python_add, num_inputs=2, promotion_methods=[(0, 1, "DEFAULT")]),
        lambda: pointwise_dynamic(lambda x: x, num_inputs=1, promotion_methods=[(0, "DEFAULT")]),
    ],
    ids=["call form", "decorator form", "num_inputs given", "lambda"],
)
def test_payload_must_be_triton_jit(make):
    with pytest.raises(TypeError, match="triton.jit"):
        make()


# ---------------------------------------------------------------------------------------------
# Payloads wherever they live.


def test_payload_from_module_without_triton_language():
    assert not hasattr(payload_no_tl, "tl")
    fn = pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
    a, b = randn(3, 4), randn(4)
    assert_same(fn(a, b), a + b)
    x, y = randint(5), randint(5)
    assert_same(fn(x, y), x + y)


def test_payload_calling_a_jit_helper():
    x, y = randn(3, 4), randn(4)
    assert_same(square_plus(x, y), x * x + y)


def test_payload_calling_a_helper_through_a_module_attribute():
    x = randn(6)
    assert_same(twice_plus_one(x), x * 2 + 1)


def test_grid_stride_loop_with_small_config():
    config = CodeGenConfig(max_tile_size=16, max_grid_size=(2, 1, 1))
    before = dataclasses.asdict(config)
    fn = pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")], config=config)
    cases = [
        (randn(300), randn(300)),  # flat
        (randn(13, 23), randn(23)),  # rows x innermost
        (randn(13, 23), randn(23, 13).t()),  # transposing tile
        (randn(5, 7, 9).permute(2, 0, 1), randn(9, 5, 7)),  # permuted 3-d
    ]
    for a, b in cases:
        plan = fn.explain(a, b)
        assert plan.grid[0] <= 2
        assert 1 <= len(plan.block) and int(torch.tensor(plan.block).prod()) <= 16
        assert_same(fn(a, b), a + b)
    assert dataclasses.asdict(config) == before


def test_config_shared_between_functions_is_not_mutated():
    config = CodeGenConfig(max_tile_size=32, max_grid_size=(3, 1, 1))
    before = dataclasses.asdict(config)
    first = pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")], config=config)
    second = twin(mul_body, promotion_methods=[(0, 1, "DEFAULT")], config=config)
    a, b = randn(100), randn(100)
    assert_same(first(a, b), a + b)
    assert_same(second(a, b), a * b)
    assert dataclasses.asdict(config) == before
    assert first.explain(a, b).grid[0] <= 3


def test_config_accepts_flaggems_keywords():
    config = CodeGenConfig(
        max_tile_size=64, max_grid_size=(4, 4, 1), max_num_warps_per_cta=4, prefer_block_pointer=True, prefer_1d_tile=True
    )
    fn = pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")], config=config)
    a, b = randn(5, 40), randn(40)
    assert fn.explain(a, b).num_warps <= 4
    assert_same(fn(a, b), a + b)


# ---------------------------------------------------------------------------------------------
# Property test: random shapes, strides (permuted, stepped, expanded) and dtypes.

PROPERTY_DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.float32, torch.float64]


@st.composite
def strided_operand(draw, shape, dtype, generator):
    """A tensor of `shape` viewed through a random permutation and random steps of a bigger base."""
    rank = len(shape)
    perm = draw(st.permutations(range(rank))) if rank else []
    steps = [draw(st.sampled_from([1, 1, 2, 3])) for _ in range(rank)]
    base_shape = [shape[p] * steps[p] for p in perm]
    if dtype.is_floating_point:
        base = torch.randn(base_shape, generator=generator).to(dtype)
    else:
        base = torch.randint(0, 100, base_shape, generator=generator).to(dtype)
    view = base[tuple(slice(None, None, steps[p]) for p in perm)]
    return view.permute([perm.index(d) for d in range(rank)]) if rank else view


@st.composite
def broadcast_pair(draw):
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    rank = draw(st.integers(0, 4))
    shape = [draw(st.integers(1, 5)) for _ in range(rank)]
    operands = []
    for _ in range(2):
        own = [1 if draw(st.booleans()) and draw(st.booleans()) else n for n in shape]
        own = own[draw(st.integers(0, rank)):] if draw(st.booleans()) else own
        dtype = draw(st.sampled_from(PROPERTY_DTYPES))
        t = draw(strided_operand(tuple(own), dtype, generator))
        if own and draw(st.integers(0, 4)) == 0:
            t = t.expand(*[n if m == 1 else m for n, m in zip(shape[len(shape) - len(own):], own)])
        operands.append(t)
    return operands


def opmath_add(a, b):
    """torch's rule written out: both operands to the computation dtype, add, round to the result."""
    compute, result = elementwise_dtypes(a, b, type_promotion_kind=KIND.DEFAULT)
    return (a.to(compute) + b.to(compute)).to(result)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(broadcast_pair(), st.booleans())
def test_property_add_matches_torch(pair, give_output):
    a, b = pair
    expected = opmath_add(a, b)
    assert expected.dtype == (a + b).dtype
    if give_output:
        out = poisoned_like(expected.contiguous())
        assert ADD(a, b, out0=out) is out
        assert_same(out, expected)
    else:
        assert_same(ADD(a, b), expected)
