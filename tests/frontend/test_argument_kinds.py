"""Every kind of argument a PyTorch user passes by habit gets torch's behaviour or a clear error:
NumPy arrays, Python lists, tuples and None (torch refuses them: so do we, naming the argument
and the fix), python and NumPy scalars where a tensor is declared and tensors where a scalar is
(torch converts them; the schema says otherwise, and the error says how to declare them), 0-d
tensors, tensors of every real dtype, meta tensors, Parameters and tensor subclasses (computed
as torch computes them)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton

from tests.support.poison import poisoned_like
from tritonwise import pointwise_dynamic


@triton.jit
def add(x, y):
    return x + y


@triton.jit
def add_alpha(x, y, alpha):
    return x + y * alpha


ADD = pointwise_dynamic(add, promotion_methods=[(0, 1, "DEFAULT")])
ADD_ALPHA = pointwise_dynamic(add_alpha, is_tensor=[True, True, False], promotion_methods=[(0, 1, 2, "DEFAULT")])


def t3():
    return torch.arange(3.0)


# ---------------------------------------------------------------------------------------------
# Refused by torch and by us: (our call, torch's call, what our message says)

REFUSED = {
    "numpy array as input 0 (issue 28)": (
        lambda: ADD_ALPHA(np.zeros(3, dtype=np.float32), torch.zeros(3), 1.0),
        lambda: torch.add(np.zeros(3, dtype=np.float32), torch.zeros(3), alpha=1.0),
        r"add_alpha: argument 0 must be a Tensor or StridedBuffer, got numpy.ndarray .*torch.from_numpy",
    ),
    "numpy array as input 1": (
        lambda: ADD(t3(), np.ones(3)),
        lambda: torch.add(t3(), np.ones(3)),
        r"add: argument 1 must be a Tensor or StridedBuffer, got numpy.ndarray .*torch.from_numpy",
    ),
    "0-d numpy array as input": (
        lambda: ADD(t3(), np.array(2.0)),
        lambda: torch.add(t3(), np.array(2.0)),
        r"add: argument 1 must be a Tensor or StridedBuffer, got numpy.ndarray",
    ),
    "numpy array as scalar": (
        lambda: ADD_ALPHA(t3(), t3(), np.ones(3)),
        lambda: torch.add(t3(), t3(), alpha=np.ones(3)),
        r"add_alpha: argument 2 must be a python scalar .*got numpy.ndarray .*not NumPy arrays",
    ),
    "0-d numpy array as scalar": (
        lambda: ADD_ALPHA(t3(), t3(), np.array(2.0)),
        lambda: torch.add(t3(), t3(), alpha=np.array(2.0)),
        r"add_alpha: argument 2 must be a python scalar .*got numpy.ndarray",
    ),
    "numpy string as scalar": (
        lambda: ADD_ALPHA(t3(), t3(), np.str_("2")),
        lambda: torch.add(t3(), t3(), alpha=np.str_("2")),
        r"add_alpha: argument 2 must be a python scalar \(bool, int, float\), got numpy.str_",
    ),
    "list as input": (
        lambda: ADD([0.0, 1.0, 2.0], t3()),
        lambda: torch.add([0.0, 1.0, 2.0], t3()),
        r"add: argument 0 must be a Tensor or StridedBuffer, got list .*torch.tensor\(values\)",
    ),
    "tuple as input": (
        lambda: ADD(t3(), (0.0, 1.0, 2.0)),
        lambda: torch.add(t3(), (0.0, 1.0, 2.0)),
        r"add: argument 1 must be a Tensor or StridedBuffer, got tuple",
    ),
    "list as scalar": (
        lambda: ADD_ALPHA(t3(), t3(), [2.0]),
        lambda: torch.add(t3(), t3(), alpha=[2.0]),
        r"add_alpha: argument 2 must be a python scalar \(bool, int, float\), got list",
    ),
    "None as input": (
        lambda: ADD(t3(), None),
        lambda: torch.add(t3(), None),
        r"add: argument 1 must be a Tensor or StridedBuffer, got NoneType",
    ),
    "None as scalar": (
        lambda: ADD_ALPHA(t3(), t3(), None),
        lambda: torch.add(t3(), t3(), alpha=None),
        r"add_alpha: argument 2 must be a python scalar \(bool, int, float\), got NoneType",
    ),
    "numpy array as output": (
        lambda: ADD(t3(), t3(), out0=np.empty(3, dtype=np.float32)),
        lambda: torch.add(t3(), t3(), out=np.empty(3, dtype=np.float32)),
        r"add: out0 must be a Tensor or StridedBuffer, got ndarray",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_refused_as_torch_refuses_it(case):
    ours, theirs, message = REFUSED[case]
    with pytest.raises(TypeError):
        theirs()
    with pytest.raises(TypeError, match=message):
        ours()


@pytest.mark.parametrize("entry", ["instantiate", "explain", "output_meta"])
def test_numpy_array_refused_by_every_entry(entry):
    calls = {
        "instantiate": lambda: ADD.instantiate(1)(np.zeros(3), t3(), out0=torch.empty(3)),
        "explain": lambda: ADD.explain(np.zeros(3), t3()),
        "output_meta": lambda: ADD.output_meta(np.zeros(3), t3()),
    }
    with pytest.raises(TypeError, match=r"argument 0 must be a Tensor or StridedBuffer, got numpy.ndarray"):
        calls[entry]()


# ---------------------------------------------------------------------------------------------
# Accepted by torch, refused by the schema: the message says how to declare the argument.


@pytest.mark.parametrize("scalar", [2.0, 3, True, np.float32(2.0), np.int64(3)], ids=repr)
def test_scalar_where_a_tensor_is_declared_says_how_to_declare_it(scalar):
    torch.add(t3(), scalar)  # torch reads it as a scalar
    with pytest.raises(TypeError, match=r"add: argument 1 must be a Tensor .*declare is_tensor=\[True, False\]"):
        ADD(t3(), scalar)


def test_tensor_where_a_scalar_is_declared_says_item_or_is_tensor():
    torch.add(t3(), t3(), alpha=torch.tensor(2.0))  # torch reads a 0-d tensor's value
    with pytest.raises(TypeError, match=r"argument 2 must be a python scalar .*got Tensor; .*\.item\(\).*is_tensor"):
        ADD_ALPHA(t3(), t3(), torch.tensor(2.0))


# ---------------------------------------------------------------------------------------------
# Accepted: computed as torch computes them.


def assert_same(got, expected):
    assert type(got) is type(expected)
    assert (got.dtype, got.shape, got.device) == (expected.dtype, expected.shape, expected.device)
    if got.device.type != "meta":
        torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize(
    "a, b",
    [
        (torch.tensor(1.5), torch.tensor(2, dtype=torch.int32)),
        (torch.tensor(1.5), torch.arange(4, dtype=torch.int64)),
        (torch.arange(4, dtype=torch.int16), torch.tensor(7, dtype=torch.int64)),
        (torch.tensor(True), torch.tensor(False)),
    ],
)
def test_zero_dim_tensors(a, b):
    assert_same(ADD(a, b), torch.add(a, b))


TORCH_COMPUTES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
]
# torch has no CPU add for these: compare with its add in a wider dtype, cast back (exact here)
TORCH_WIDENS = {
    torch.uint16: torch.int64,
    torch.uint32: torch.int64,
    torch.uint64: torch.int64,
    torch.float8_e4m3fn: torch.float32,
    torch.float8_e5m2: torch.float32,
}


@pytest.mark.parametrize("dtype", TORCH_COMPUTES + list(TORCH_WIDENS), ids=str)
def test_tensors_of_every_real_dtype(dtype):
    x = torch.tensor([0, 1, 3, 7], dtype=torch.int64).to(dtype)
    y = torch.tensor([1, 0, 2, 4], dtype=torch.int64).to(dtype)
    out = poisoned_like(x, fill=0 if dtype in TORCH_WIDENS else None)
    if dtype in TORCH_WIDENS:
        wide = TORCH_WIDENS[dtype]
        expected = torch.add(x.to(wide), y.to(wide)).to(dtype)
    else:
        expected = torch.add(x, y)
    assert ADD(x, y, out0=out) is out
    assert_same(out, expected)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_tensors_ask_for_register_complex(dtype):
    with pytest.raises(TypeError, match=rf"add: argument 1 is complex \({dtype}\).*register_complex"):
        ADD(t3(), torch.ones(3, dtype=dtype))


def test_meta_tensors():
    a, b = torch.empty(4, 1, device="meta"), torch.empty(3, dtype=torch.float16, device="meta")
    got, expected = ADD(a, b), torch.add(a, b)
    assert_same(got, expected)
    assert got.stride() == expected.stride()


class Trivial(torch.Tensor):
    """A subclass that keeps torch's default __torch_function__."""


class Unrelated(torch.Tensor):
    pass


def test_parameter_computes_and_differentiates_as_in_torch():
    weight, bias = torch.nn.Parameter(torch.arange(3.0)), torch.ones(3)
    got = ADD(weight, bias)
    got.sum().backward()
    ours = weight.grad.clone()
    weight.grad = None
    expected = torch.add(weight, bias)
    expected.sum().backward()
    assert_same(got.detach(), expected.detach())
    assert_same(ours, weight.grad)


def test_frozen_parameter_gives_a_plain_tensor():
    frozen = torch.nn.Parameter(torch.arange(3.0), requires_grad=False)
    assert_same(ADD(frozen, t3()), torch.add(frozen, t3()))


@pytest.mark.parametrize("position", [0, 1])
def test_trivial_subclass_result_is_the_subclass(position):
    args = [t3(), torch.ones(3)]
    args[position] = args[position].as_subclass(Trivial)
    assert_same(ADD(*args), torch.add(*args))


def test_trivial_subclass_output_is_returned_itself():
    out, expected = torch.empty(3).as_subclass(Trivial), torch.empty(3).as_subclass(Trivial)
    got = ADD(t3(), t3(), out0=out)
    assert got is out and torch.add(t3(), t3(), out=expected) is expected
    assert_same(got, expected)


def test_trivial_subclass_beside_a_parameter_differentiates():
    weight, x = torch.nn.Parameter(torch.arange(3.0)), torch.ones(3).as_subclass(Trivial)
    got = ADD(weight, x)
    got.sum().backward()
    ours, weight.grad = weight.grad.clone(), None
    expected = torch.add(weight, x)
    expected.sum().backward()
    assert_same(got.detach(), expected.detach())
    assert_same(ours, weight.grad)


def test_unrelated_subclasses_are_refused_as_in_torch():
    a, b = t3().as_subclass(Trivial), t3().as_subclass(Unrelated)
    with pytest.raises(TypeError):
        torch.add(a, b)
    with pytest.raises(TypeError, match=r"add: operands of unrelated tensor subclasses \(Trivial, Unrelated\)"):
        ADD(a, b)
