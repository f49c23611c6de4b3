"""fn.instantiate(rank) over Tensors and StridedBuffers, and the StridedBuffer class itself."""

from __future__ import annotations

import pytest
import torch
import triton

import tritonwise
from tests.support.poison import poisoned_like
from tritonwise import StridedBuffer, pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, "NO_OPMATH")])
@triton.jit
def copy(x):
    return x


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add(x, y):
    return x + y


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add_scalar(x, y):
    return x + y


def flipped(t: torch.Tensor, dims) -> StridedBuffer:
    """A StridedBuffer reading contiguous `t` flipped along `dims`: negative strides and an offset."""
    strides = list(t.stride())
    offset = 0
    for d in dims:
        offset += (t.shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    return StridedBuffer(t, t.shape, strides, offset=offset)


def assert_same(got, expected):
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# Flips through negative strides.

FLIPS = [(0,), (1,), (0, 1)]


@pytest.mark.parametrize("dims", FLIPS, ids=str)
def test_flip_input_via_negative_strides(dims):
    x = torch.arange(20.0).view(4, 5)
    out = poisoned_like(x)
    result = copy.instantiate(2)(flipped(x, dims), out0=out)
    assert result is out
    assert_same(out, torch.flip(x, dims))


@pytest.mark.parametrize("dims", FLIPS, ids=str)
def test_flip_output_via_negative_strides(dims):
    x = torch.randn(4, 5)
    target = poisoned_like(x)
    out = flipped(target, dims)
    result = copy.instantiate(2)(x, out0=out)
    assert result is out
    assert_same(target, torch.flip(x, dims))


@pytest.mark.parametrize("dims", [(0,), (2,), (0, 2), (0, 1, 2)], ids=str)
def test_flip_rank3(dims):
    x = torch.randn(3, 4, 5)
    out = poisoned_like(x)
    copy.instantiate(3)(flipped(x, dims), out0=out)
    assert_same(out, torch.flip(x, dims))


def test_flip_with_two_inputs_and_a_transposed_tensor():
    x = torch.randn(5, 5)
    y = torch.randn(5, 5).t()
    out = poisoned_like(x)
    assert add.instantiate(2)(flipped(x, (0, 1)), y, out0=out) is out
    assert_same(out, torch.flip(x, (0, 1)) + y)


def test_instantiate_with_scalar_argument():
    x = torch.randint(-5, 5, (3, 4), dtype=torch.int32)
    out = poisoned_like(torch.empty(3, 4))
    assert add_scalar.instantiate(2)(flipped(x, (1,)), 0.5, out0=out) is out
    assert_same(out, torch.flip(x, (1,)) + 0.5)


def test_instantiate_rank0():
    out = poisoned_like(torch.tensor(0.0))
    assert add.instantiate(0)(torch.tensor(1.5), torch.tensor(2.0), out0=out) is out
    assert out.item() == 3.5


def test_instantiate_rank1_reversed_slice_of_offset_base():
    storage = torch.arange(30.0)
    base = storage[10:]  # storage offset 10
    buf = StridedBuffer(base, (4,), (-1,), offset=3)  # base[3], base[2], base[1], base[0]
    out = poisoned_like(torch.empty(4))
    copy.instantiate(1)(buf, out0=out)
    assert_same(out, base[:4].flip(0))


def test_instantiate_does_not_collapse_or_reorder_but_computes_right():
    x = torch.randn(2, 3, 4).permute(2, 0, 1)
    out = poisoned_like(torch.empty(4, 2, 3))
    explanation = copy.instantiate(3).explain(x, out0=out)
    assert len(explanation.task_shape) == 3
    copy.instantiate(3)(x, out0=out)
    assert_same(out, x.contiguous())


def test_in_place_instantiated():
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    expected = a + b
    assert add.instantiate(2)(a, b, out0=a) is a
    assert_same(a, expected)


def test_strided_buffer_output_of_plain_call_is_returned_as_given():
    target = poisoned_like(torch.empty(20))
    out = StridedBuffer(target, (4, 5), (-5, -1), offset=19)
    a = torch.randn(4, 5)
    assert add(a, torch.ones(5), out0=out) is out
    assert_same(target.view(4, 5), torch.flip(a + 1, (0, 1)))


def test_strided_buffer_input_of_plain_call_broadcasts():
    x = torch.arange(5.0)
    row = StridedBuffer(x, (1, 5), (5, -1), offset=4)
    result = add(row, torch.zeros(3, 5))
    assert_same(result, x.flip(0).expand(3, 5))


# ---------------------------------------------------------------------------------------------
# Errors.


def test_missing_outputs_are_an_error():
    with pytest.raises((TypeError, ValueError), match="out0"):
        copy.instantiate(2)(torch.randn(2, 3))


def test_an_output_passed_by_position_is_named_as_such():
    x = torch.randn(2, 3)
    with pytest.raises(TypeError, match=r"takes 1 input but 2 were given; outputs are keyword arguments \(out0=\)"):
        copy.instantiate(2)(x, torch.empty(2, 3))


@pytest.mark.parametrize(
    "args, out",
    [
        ((torch.randn(6),), torch.empty(2, 3)),
        ((torch.randn(2, 3),), torch.empty(6)),
        ((torch.randn(1, 2, 3),), torch.empty(1, 2, 3)),
    ],
    ids=["input rank 1", "output rank 1", "both rank 3"],
)
def test_wrong_rank_is_a_value_error(args, out):
    with pytest.raises(ValueError, match="dims"):
        copy.instantiate(2)(*args, out0=out)


@pytest.mark.parametrize(
    "a, b, out",
    [
        (torch.randn(2, 3), torch.randn(2, 3), torch.empty(3, 2)),
        (torch.randn(2, 3), torch.randn(1, 3), torch.empty(2, 3)),
        (torch.randn(1, 3), torch.randn(2, 3), torch.empty(2, 3)),
    ],
    ids=["output differs", "no broadcasting of an input", "first input differs"],
)
def test_shapes_differ_is_a_value_error(a, b, out):
    with pytest.raises(ValueError, match="shape"):
        add.instantiate(2)(a, b, out0=out)


@pytest.mark.parametrize("rank", [-1, 1.5, "2"])
def test_invalid_rank(rank):
    with pytest.raises(ValueError):
        copy.instantiate(rank)


def test_instantiated_output_dtype_not_castable():
    with pytest.raises(RuntimeError, match="cast"):
        add.instantiate(1)(torch.randn(3), torch.randn(3), out0=torch.empty(3, dtype=torch.int32))


def test_instantiated_output_partially_overlapping_flipped_input():
    storage = torch.arange(20.0)
    with pytest.raises(RuntimeError, match="overlap"):
        copy.instantiate(1)(StridedBuffer(storage, (20,), (-1,), offset=19), out0=storage)


# ---------------------------------------------------------------------------------------------
# StridedBuffer.


def test_strided_buffer_offset_counts_from_its_base_as_flaggems_does():
    """`offset` is kept as given, from the base's first element, so a buffer rebuilt from its own
    fields (as FlagGems' clone does) views the same elements; `start` counts from the storage."""
    storage = torch.arange(10.0)
    buf = StridedBuffer(storage[2:], (3,), (1,), offset=1)
    assert (buf.offset, buf.start) == (1, 3) and buf.data_ptr() == storage.data_ptr() + 3 * 4
    again = StridedBuffer(buf.unwrap(), buf.shape, buf.stride(), buf.dtype, buf.offset)
    for view in (buf, again, buf.clone()):
        out = torch.full((3,), float("nan"))
        copy.instantiate(1)(view, out0=out)
        assert out.tolist() == [3.0, 4.0, 5.0]


def test_strided_buffer_attributes():
    x = torch.arange(20.0)
    buf = StridedBuffer(x, (4, 5), (-5, 1), offset=15)
    assert buf.shape == (4, 5)
    assert buf.dtype == torch.float32
    assert buf.device == x.device
    assert buf.ndim == 2
    assert buf.offset == 15
    assert tuple(buf.stride()) == (-5, 1)
    assert buf.stride(0) == -5 and buf.stride(1) == 1
    assert tuple(buf.size()) == (4, 5)
    assert buf.size(0) == 4 and buf.size(1) == 5
    assert buf.numel() == 20
    assert buf.dim() == 2
    assert buf.element_size() == 4
    assert buf.data_ptr() == x.data_ptr() + 15 * 4
    assert buf.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert buf.unwrap() is x


def test_strided_buffer_defaults_to_the_base_view():
    x = torch.randn(3, 4).t()
    buf = StridedBuffer(x)
    assert buf.shape == (4, 3)
    assert tuple(buf.stride()) == x.stride()
    assert buf.dtype == x.dtype
    assert buf.data_ptr() == x.data_ptr()


def test_strided_buffer_offset_counts_from_the_base_first_element():
    storage = torch.arange(30.0)
    base = storage[10:]
    buf = StridedBuffer(base, (5,), (1,), offset=2)
    assert buf.data_ptr() == base.data_ptr() + 2 * base.element_size()


def test_strided_buffer_with_other_dtype():
    x = torch.zeros(10, dtype=torch.int64)
    buf = StridedBuffer(x, (20,), (1,), dtype=torch.int32)
    assert buf.dtype == torch.int32
    assert buf.element_size() == 4
    assert buf.numel() == 20


@pytest.mark.parametrize(
    "shape, strides, offset",
    [
        ((4, 5), (-5, 1), 14),  # first row would start before the storage
        ((4, 5), (5, 1), 1),  # last element one past the end
        ((21,), (1,), 0),  # too many elements
        ((3,), (10,), 0),  # stride runs past the end
        ((2,), (1,), -1),  # negative offset
    ],
    ids=["below", "past end", "too long", "stride", "negative offset"],
)
def test_strided_buffer_bounds_check(shape, strides, offset):
    with pytest.raises(ValueError, match="outside"):
        StridedBuffer(torch.zeros(20), shape, strides, offset=offset)


def test_strided_buffer_bounds_edges_are_accepted():
    x = torch.zeros(20)
    StridedBuffer(x, (4, 5), (5, 1), offset=0)
    StridedBuffer(x, (4, 5), (-5, -1), offset=19)
    StridedBuffer(x, (0, 5), (5, 1), offset=100)  # empty: nothing is reached


def test_strided_buffer_rejects_rank_mismatch_and_non_tensors():
    with pytest.raises(ValueError):
        StridedBuffer(torch.zeros(20), (4, 5), (5,))
    with pytest.raises(TypeError):
        StridedBuffer([1.0, 2.0])


def test_strided_buffer_clone_is_independent_and_equal():
    x = torch.arange(20.0)
    buf = StridedBuffer(x, (4, 5), (-5, 1), offset=15)
    twin = buf.clone()
    assert isinstance(twin, StridedBuffer)
    assert twin.shape == buf.shape and tuple(twin.stride()) == tuple(buf.stride()) and twin.dtype == buf.dtype
    assert twin.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    out = poisoned_like(torch.empty(4, 5))
    copy.instantiate(2)(twin, out0=out)
    assert_same(out, torch.flip(x.view(4, 5), (0,)))
    x.zero_()
    copy.instantiate(2)(twin, out0=out)
    assert_same(out, torch.flip(torch.arange(20.0).view(4, 5), (0,)))


def test_strided_buffer_clone_of_a_stepped_base():
    base = torch.arange(20.0)[::2]  # 10 elements, stride 2
    buf = StridedBuffer(base)
    twin = buf.clone()
    out = poisoned_like(torch.empty(10))
    copy.instantiate(1)(twin, out0=out)
    assert_same(out, base.clone())


def test_strided_buffer_copy_from_tensor():
    x = torch.randn(4, 5)
    target = poisoned_like(torch.empty(20))
    buf = StridedBuffer(target, (4, 5), (-5, 1), offset=15)
    assert buf.copy_(x) is buf
    assert_same(target.view(4, 5), torch.flip(x, (0,)))


def test_strided_buffer_copy_from_strided_buffer():
    x = torch.arange(20.0)
    src = StridedBuffer(x, (4, 5), (-5, -1), offset=19)
    target = poisoned_like(torch.empty(4, 5))
    dst = StridedBuffer(target)
    dst.copy_(src)
    assert_same(target, torch.flip(x.view(4, 5), (0, 1)))


def test_strided_buffer_copy_shape_mismatch():
    buf = StridedBuffer(torch.zeros(20), (4, 5), (5, 1))
    with pytest.raises(ValueError, match="shape"):
        buf.copy_(torch.zeros(5, 4))


def test_strided_buffer_is_exported():
    assert tritonwise.StridedBuffer is StridedBuffer
