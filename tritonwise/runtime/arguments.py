"""What the runtime reads of a call's arguments: the plan-cache key, dense extents and the
partial-overlap check (validation is frontend/validation.py's).
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import torch

from ..strided_buffer import TENSOR_TYPES, StridedBuffer, is_tensor_like  # noqa: F401 (used here and by importers)

Tensor = torch.Tensor


def call_signature(args: Sequence, outs: Sequence = ()) -> tuple:
    """What a launch plan depends on, built every call: per operand dtype, shape, strides, device,
    16-byte alignment (and requires_grad); per scalar type and int class; given outputs."""
    key = [_tensor_key(a) if type(a) is Tensor else _other_key(a) for a in args]
    if outs and any(o is not None for o in outs):
        key += [_other_key(o) for o in outs]
    return tuple(key)


def _tensor_key(a) -> tuple:
    """A tensor's part of the signature; launch.c calls it back, and aten.cpp reads the same fields."""
    return (a.dtype, a.shape, a.stride(), a.device, not a.data_ptr() & 15, a.is_neg(), a.requires_grad)


def _other_key(a):
    if isinstance(a, Tensor):  # a subclass (DTensor, Parameter, ...): never shares a plain tensor's plan
        return (type(a), *_tensor_key(a))
    if isinstance(a, StridedBuffer):
        return (StridedBuffer, a.dtype, a.shape, a.stride(), a.device, not a.data_ptr() & 15, a.is_neg(), False)
    if type(a) is int:
        return int_class(a)
    return type(a)


INT32_RANGE = (-0x80000000, 0x7FFFFFFF)  # ints Triton passes as i32 (launch.c's hit() reads it too)


def int_class(value: int):
    """Triton passes an int as i32 when it fits, else i64 (u64 from 2**63); values beyond 64 bits
    get a class of their own, so they never reach a cached plan."""
    if INT32_RANGE[0] <= value <= INT32_RANGE[1]:
        return int
    if -(2**63) <= value < 2**63:
        return "i64"
    return "u64" if 2**63 <= value < 2**64 else "beyond 64 bits"


_FIELDS = ("dtype", "shape", "strides", "device", "16-byte alignment", "negative bit", "requires_grad")


def describe_values(values: Sequence) -> str:
    """Operands as a readable signature: `float32[5, 3] strides (3, 1)`, or a scalar's type name."""
    return ", ".join(
        f"{str(v.dtype).removeprefix('torch.')}[{', '.join(map(str, v.shape))}] strides {tuple(v.stride())}"
        if is_tensor_like(v)
        else type(v).__name__
        for v in values
    )


def miss_reason(key: tuple, previous) -> str:
    """Why `key` missed the plan cache, compared with the most recent plan's key."""
    if previous is None:
        return "first call"
    for position, (new, old) in enumerate(zip(key, previous)):
        if new == old:
            continue
        if isinstance(new, tuple) and isinstance(old, tuple) and len(new) == len(old):
            new, old = new[-len(_FIELDS) :], old[-len(_FIELDS) :]
            changed = [f for f, a, b in zip(_FIELDS, new, old) if a != b]
            return f"operand {position}: {', '.join(changed)} changed ({old} -> {new})"
        return f"operand {position}: {old} -> {new}"
    return "outputs given differently" if len(key) != len(previous) else "new signature"


def dense_extent(shape, strides) -> Optional[tuple]:
    """(lowest, highest) element offset of a non-overlapping dense layout, None otherwise."""
    dims = sorted((abs(s), n) for n, s in zip(shape, strides) if n != 1)
    expected = 1
    for stride, size in dims:
        if stride != expected:
            return None
        expected *= size
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    return lo, lo + max(math.prod(shape), 1) - 1


def check_partial_overlap(name: str, k: int, out, out_extent, inputs: Sequence, extents: Sequence) -> None:
    """torch's rule: an output sharing memory with an input must be exactly that input."""
    if out_extent is None:
        return
    size = out.element_size()
    o_lo = out.data_ptr() + out_extent[0] * size
    o_hi = out.data_ptr() + (out_extent[1] + 1) * size
    for i, (inp, extent) in enumerate(zip(inputs, extents)):
        if extent is None or inp is out:
            continue
        isize = inp.element_size()
        i_lo = inp.data_ptr() + extent[0] * isize
        i_hi = inp.data_ptr() + (extent[1] + 1) * isize
        if i_lo >= o_hi or o_lo >= i_hi:
            continue
        if (i_lo, i_hi, inp.stride(), inp.dtype) == (o_lo, o_hi, out.stride(), out.dtype) and inp.shape == out.shape:
            continue
        raise RuntimeError(
            f"{name}: out{k} partially overlaps input {i}: unsupported operation (the output must be the "
            "input itself or not share its memory)"
        )
