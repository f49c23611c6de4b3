"""The error catalog: one test per class of invalid input.

Each test asserts the exception type and that the message names what is wrong: the argument
(`argument 1`, `out0`), the shapes or devices involved, or the payload. Where tritonwise gives
an unclear error, the test states the error it should give and is a strict xfail, so it turns
red the day the error is fixed (then drop the marker). None is left today: the payload, device
and broadcast errors below were such xfails until tritonwise fixed them.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from tests.support.poison import poisoned_like
from tritonwise import PayloadError, StridedBuffer, pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add(x, y):
    return x + y


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def scale(x, factor):
    return x * factor


@pointwise_dynamic(num_outputs=2, promotion_methods=[(0, "DEFAULT"), (0, "DEFAULT")])
@triton.jit
def returns_one_of_two(x):
    return x + 1


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def returns_two_of_one(x):
    return x, x


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def calls_an_undefined_name(x):
    return undefined_helper(x)  # noqa: F821 -- the error under test


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def uses_a_missing_attribute(x):
    return tl.no_such_function(x)


def x4():
    return torch.arange(4.0)


# ---------------------------------------------------------------------------------------------
# Arguments


@pytest.mark.parametrize("count", [0, 1, 3])
def test_wrong_arity(count):
    args = [x4() for _ in range(count)]
    with pytest.raises(TypeError, match=rf"add\(\) takes 2 positional inputs but {count} were given"):
        add(*args)


def test_tensor_where_a_scalar_is_declared():
    with pytest.raises(TypeError, match=r"scale: argument 1 must be a python scalar .*got Tensor"):
        scale(x4(), torch.tensor(2.0))


def test_scalar_where_a_tensor_is_declared():
    """Every input is a tensor unless declared otherwise: the message says how to declare it."""
    expected = r"add: argument 0 must be a Tensor or StridedBuffer, got float; .*declare is_tensor=\[False, True\]"
    with pytest.raises(TypeError, match=expected):
        add(2.0, x4())


def test_non_number_where_a_scalar_is_declared():
    with pytest.raises(TypeError, match=r"scale: argument 1 must be a python scalar .*got str"):
        scale(x4(), "2")


def test_complex_tensor():
    with pytest.raises(TypeError, match=r"add: argument 1 is complex \(torch.complex64\)"):
        add(x4(), torch.zeros(4, dtype=torch.complex64))


def test_unknown_keyword():
    with pytest.raises(TypeError, match=r"add\(\) got an unexpected keyword argument 'out1' \(outputs: out0\)"):
        add(x4(), x4(), out1=x4())


def test_unknown_keyword_given_none_is_ignored():
    """FlagGems' op wrappers pass `out=None` through to the function; it asks for nothing."""
    a, b = torch.arange(4.0), torch.ones(4)
    torch.testing.assert_close(add(a, b, out=None), a + b)


@pytest.mark.parametrize("shapes", [[(2, 3), (4,)], [(3, 2), (2, 1, 3)], [(0,), (2,)]], ids=str)
def test_shapes_that_do_not_broadcast(shapes):
    a, b = (torch.zeros(s) for s in shapes)
    pattern = r".*".join(_escaped(s) for s in shapes) + r" cannot be broadcast"
    with pytest.raises(RuntimeError, match=pattern):
        add(a, b)


def test_shapes_that_do_not_broadcast_name_the_payload():
    with pytest.raises(RuntimeError, match=r"^add: "):
        add(torch.zeros(2, 3), torch.zeros(4))


def test_operands_on_two_devices():
    pattern = r"add: expected all tensors to be on the same device.*cpu and meta.*argument 0 is on cpu, argument 1 on meta"
    with pytest.raises(RuntimeError, match=pattern):
        add(x4(), torch.zeros(4, device="meta"))


def _escaped(shape) -> str:
    return str(tuple(shape)).replace("(", r"\(").replace(")", r"\)")


# ---------------------------------------------------------------------------------------------
# Given outputs


def test_output_of_the_wrong_shape():
    with pytest.raises(RuntimeError, match=r"add: out0 has shape \(5,\), but the result has shape \(4,\)"):
        add(x4(), x4(), out0=torch.empty(5))


def test_output_on_another_device_names_both_devices():
    with pytest.raises(RuntimeError, match=r"add: .*cpu and meta"):
        add(x4(), x4(), out0=torch.empty(4, device="meta"))


def test_output_on_another_device_names_the_output():
    with pytest.raises(RuntimeError, match=r"argument 0 is on cpu, out0 on meta"):
        add(x4(), x4(), out0=torch.empty(4, device="meta"))


@pytest.mark.parametrize(
    "inputs, out_dtype, result",
    [
        ((torch.float32, torch.float32), torch.int32, "float32"),
        ((torch.int32, torch.int32), torch.bool, "int32"),
        ((torch.float16, torch.float16), torch.int64, "float16"),
    ],
    ids=str,
)
def test_output_dtype_the_result_cannot_be_cast_to(inputs, out_dtype, result):
    a, b = (torch.ones(4, dtype=d) for d in inputs)
    pattern = rf"add: result type torch.{result} can't be cast to the desired output type {out_dtype} \(out0\)"
    with pytest.raises(RuntimeError, match=pattern):
        add(a, b, out0=torch.empty(4, dtype=out_dtype))


@pytest.mark.parametrize("make", [lambda: torch.empty(1).expand(4), lambda: torch.empty(2, 1).expand(2, 3)[0]], ids=["expand", "row"])
def test_output_with_internal_overlap(make):
    out = make()
    with pytest.raises(RuntimeError, match=r"add: out0 .*has internal overlap"):
        add(torch.zeros(out.shape), torch.zeros(out.shape), out0=out)


@pytest.mark.parametrize("shift", [1, 2, 3])
def test_output_partially_overlapping_an_input(shift):
    storage = torch.arange(8.0)
    x = storage[:4]
    with pytest.raises(RuntimeError, match=r"add: out0 partially overlaps input 0"):
        add(x, x4(), out0=storage[shift : shift + 4])
    assert torch.equal(storage, torch.arange(8.0)), "nothing may be written before the error"


def test_partial_overlap_is_caught_on_a_plan_cache_hit():
    """Overlap depends on addresses, not on the call signature the launch plan is cached under."""
    storage = torch.zeros(12)
    x, y = storage[0:4], x4()
    add(x, y, out0=storage[8:12])  # disjoint: the plan for this signature is cached
    hits = add.plan_cache.hits
    with pytest.raises(RuntimeError, match=r"add: out0 partially overlaps input 0"):
        add(x, y, out0=storage[2:6])  # same shapes, strides, dtypes and alignment class
    assert add.plan_cache.hits == hits + 1


def test_output_that_is_not_a_tensor():
    with pytest.raises(TypeError, match=r"add: out0 must be a Tensor or StridedBuffer, got list"):
        add(x4(), x4(), out0=[0.0] * 4)


# ---------------------------------------------------------------------------------------------
# instantiate(rank)


@pytest.mark.parametrize("rank", [-1, 1.0, "2"])
def test_instantiate_invalid_rank(rank):
    with pytest.raises(ValueError, match=r"add.instantiate: rank must be a non-negative int"):
        add.instantiate(rank)


def test_instantiate_input_of_the_wrong_rank():
    with pytest.raises(ValueError, match=r"add_rank2: argument 0 has 1 dims, expected exactly 2"):
        add.instantiate(2)(x4(), torch.zeros(1, 4), out0=torch.zeros(1, 4))


def test_instantiate_output_of_the_wrong_rank():
    with pytest.raises(ValueError, match=r"add_rank1: out0 has 2 dims, expected exactly 1"):
        add.instantiate(1)(x4(), x4(), out0=torch.zeros(1, 4))


def test_instantiate_shapes_differ():
    with pytest.raises(ValueError, match=r"add_rank2: argument 1 has shape \(1, 4\), expected \(2, 4\) \(no broadcasting\)"):
        add.instantiate(2)(torch.zeros(2, 4), torch.zeros(1, 4), out0=torch.zeros(2, 4))


def test_instantiate_missing_outputs():
    with pytest.raises(TypeError, match=r"add_rank1: outputs out0 must be given"):
        add.instantiate(1)(x4(), x4())


def test_strided_buffer_outside_its_storage():
    with pytest.raises(ValueError, match=r"StridedBuffer: shape \(4,\), strides \(-1,\), offset 2 reach elements"):
        StridedBuffer(x4(), (4,), (-1,), offset=2)


# ---------------------------------------------------------------------------------------------
# Payloads


def plain_function(x):
    return x


@pytest.mark.parametrize("payload", [plain_function, lambda x: x], ids=["function", "lambda"])
def test_payload_that_is_not_triton_jit(payload):
    with pytest.raises(TypeError, match=r"pointwise_dynamic expects a @triton.jit function as its payload, got <function .*(plain_function|lambda)"):
        pointwise_dynamic(payload, promotion_methods=[(0, "DEFAULT")])


def payload_error(name: str, detail: str) -> str:
    """The PayloadError message: the function, the payload, its generated file, what went wrong."""
    return rf"^{name}: payload \S*{name} failed to run in its generated kernel \S*{name}_r1_flat_i32_\w+\.py .*{detail}"


def test_payload_returning_fewer_values_than_outputs():
    with pytest.raises(PayloadError, match=payload_error("returns_one_of_two", r"must return 2 values")):
        returns_one_of_two(x4())


def test_payload_returning_more_values_than_outputs():
    with pytest.raises(PayloadError, match=payload_error("returns_two_of_one", r"must return 1 value\b")):
        returns_two_of_one(x4())


def test_payload_calling_an_undefined_name():
    with pytest.raises(PayloadError, match=payload_error("calls_an_undefined_name", r"undefined_helper")):
        calls_an_undefined_name(x4())


def test_payload_using_a_missing_attribute():
    with pytest.raises(PayloadError, match=payload_error("uses_a_missing_attribute", r"no_such_function")):
        uses_a_missing_attribute(x4())


@pytest.mark.parametrize("broken", [returns_one_of_two, returns_two_of_one, calls_an_undefined_name])
def test_a_payload_error_is_raised_every_call_and_leaves_the_interpreter_usable(broken):
    for _ in range(2):  # the second call hits the cached plan and must fail the same way
        with pytest.raises(PayloadError, match=rf"^{broken.__name__}: payload "):
            broken(x4())
    x, y = torch.randn(3, 5), torch.randn(5)
    out = poisoned_like(x)
    add(x, y, out0=out)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# explain() validates like a call.


@pytest.mark.parametrize(
    "args, kwargs, error, pattern",
    [
        ((torch.zeros(2, 3), torch.zeros(4)), {}, RuntimeError, r"cannot be broadcast"),
        ((torch.zeros(4),), {}, TypeError, r"add\(\) takes 2 positional inputs but 1 were given"),
        ((torch.zeros(4), torch.zeros(4)), {"out0": torch.empty(5)}, RuntimeError, r"add: out0 has shape"),
        ((torch.zeros(4), torch.zeros(4)), {"out0": torch.empty(4, dtype=torch.int8)}, RuntimeError, r"can't be cast"),
        ((torch.zeros(4), torch.zeros(4)), {"out0": torch.empty(1).expand(4)}, RuntimeError, r"internal overlap"),
        ((torch.zeros(4), torch.zeros(4)), {"outx": torch.empty(4)}, TypeError, r"unexpected keyword argument 'outx'"),
    ],
    ids=["broadcast", "arity", "out-shape", "out-dtype", "out-overlap", "keyword"],
)
def test_explain_raises_what_a_call_raises(args, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        add.explain(*args, **kwargs)
    with pytest.raises(error, match=pattern):
        add(*args, **kwargs)
