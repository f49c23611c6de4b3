"""StridedBuffer: a view of a tensor's storage with any strides (negative too) and an offset."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import torch


class StridedBuffer:
    """A strided view that torch cannot express (negative strides), for manual instantiation.
    `offset` counts elements of `dtype` from `base`'s first element (as FlagGems' `offset`, kept as
    given); `start` is that element's index in the storage, and `data_ptr()` its address: the
    element at index (0, ..., 0)."""

    def __init__(
        self,
        base: torch.Tensor,
        shape: Optional[Sequence[int]] = None,
        strides: Optional[Sequence[int]] = None,
        dtype: Optional[torch.dtype] = None,
        offset: int = 0,
    ):
        if isinstance(base, StridedBuffer):
            base = base.unwrap()
        if not isinstance(base, torch.Tensor):
            raise TypeError(f"StridedBuffer: base must be a torch.Tensor, got {type(base).__name__}")
        self._base = base
        self.dtype = dtype or base.dtype
        self.shape = tuple(base.shape if shape is None else shape)
        self._strides = tuple(base.stride() if strides is None else strides)
        if len(self._strides) != len(self.shape):
            raise ValueError(f"StridedBuffer: {len(self.shape)}-d shape {self.shape} with strides {self._strides}")
        self.device = base.device
        self.ndim = len(self.shape)
        self.offset = offset
        self.start = self._base_offset() + offset
        lo = self.start + sum((n - 1) * s for n, s in zip(self.shape, self._strides) if s < 0)
        hi = self.start + sum((n - 1) * s for n, s in zip(self.shape, self._strides) if s > 0)
        capacity = base.untyped_storage().nbytes() // self.element_size()
        if self.numel() and (lo < 0 or hi >= capacity):
            raise ValueError(
                f"StridedBuffer: shape {self.shape}, strides {self._strides}, offset {offset} reach elements "
                f"[{lo}, {hi}] outside the storage of {capacity} {self.dtype} elements"
            )

    def stride(self, dim: Optional[int] = None):
        return self._strides if dim is None else self._strides[dim]

    def size(self, dim: Optional[int] = None):
        return torch.Size(self.shape) if dim is None else self.shape[dim]

    def numel(self) -> int:
        return math.prod(self.shape)

    def dim(self) -> int:
        return self.ndim

    def element_size(self) -> int:
        return self.dtype.itemsize

    def unwrap(self) -> torch.Tensor:
        return self._base

    def untyped_storage(self):
        return self._base.untyped_storage()

    def is_neg(self) -> bool:
        """Always False: a StridedBuffer views raw storage, and its values are what memory holds."""
        return False

    def data_ptr(self) -> int:
        return self._base.untyped_storage().data_ptr() + self.start * self.element_size()

    def storage_view(self) -> torch.Tensor:
        """A one-element tensor at this buffer's first element: the pointer the kernels take."""
        flat = torch.empty(0, dtype=self.dtype, device=self.device)
        return flat.set_(self._base.untyped_storage(), self.start, (1,), (1,))

    def clone(self) -> "StridedBuffer":
        """An independent buffer over a copy of the whole storage, with the same view of it."""
        storage = self._base.untyped_storage().clone()
        base = torch.empty(0, dtype=self._base.dtype, device=self.device)
        base.set_(storage, self._base.storage_offset(), self._base.shape, self._base.stride())
        return StridedBuffer(base, self.shape, self._strides, self.dtype, self.offset)

    def _base_offset(self) -> int:
        return self._base.storage_offset() * self._base.element_size() // self.element_size()

    def copy_(self, src) -> "StridedBuffer":
        """Copy `src` into this buffer with torch's dtype conversion, by plain indexing (no pointwise call)."""
        if tuple(src.shape) != self.shape:
            raise ValueError(f"copy_: source shape {tuple(src.shape)} differs from destination shape {self.shape}")
        values = src.values() if isinstance(src, StridedBuffer) else src
        self._flat()[self.element_offsets()] = values.to(device=self.device, dtype=self.dtype)
        return self

    def values(self) -> torch.Tensor:
        """A new tensor (contiguous) holding this buffer's elements."""
        return self._flat()[self.element_offsets()]

    def element_offsets(self) -> torch.Tensor:
        """Each element's offset in the storage, counted in elements of `dtype`, as an int64 tensor."""
        offsets = torch.full((), self.start, dtype=torch.int64, device=self.device)
        for d, (n, s) in enumerate(zip(self.shape, self._strides)):
            along = torch.arange(n, dtype=torch.int64, device=self.device) * s
            offsets = offsets + along.view([n if k == d else 1 for k in range(self.ndim)])
        return offsets.expand(self.shape)

    def _flat(self) -> torch.Tensor:
        """The whole storage as a 1-d tensor of `dtype`."""
        count = self._base.untyped_storage().nbytes() // self.element_size()
        flat = torch.empty(0, dtype=self.dtype, device=self.device)
        return flat.set_(self._base.untyped_storage(), 0, (count,), (1,))

    def __repr__(self) -> str:
        return f"StridedBuffer(shape={self.shape}, strides={self._strides}, dtype={self.dtype}, offset={self.offset})"


TENSOR_TYPES = (torch.Tensor, StridedBuffer)  # what a pointwise function takes as a tensor operand


def is_tensor_like(x) -> bool:
    return isinstance(x, TENSOR_TYPES)
