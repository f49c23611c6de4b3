"""flip, contiguous, transpose_copy, permute_copy: copies that change the layout, all with the
identity payload. flip reads through a StridedBuffer with negative strides and runs the
`instantiate`d function; the others write a permuted view C-contiguous (tiled so both sides stay
coalesced). Complex tensors are copied as their `view_as_real` pairs.
"""

from __future__ import annotations

import torch
import triton

from tritonwise import StridedBuffer, pointwise_dynamic

from ._pointwise import require_tensor


@triton.jit
def _copy(x):
    return x


COPY = pointwise_dynamic(_copy, promotion_methods=[(0, "NO_OPMATH")])


def _real(t: torch.Tensor) -> torch.Tensor:
    """The tensor itself, or for a complex one its (..., 2) real view."""
    return torch.view_as_real(t.resolve_conj()) if t.dtype.is_complex else t


def _wrap_dims(dims, ndim: int) -> list:
    dims = [dims] if isinstance(dims, int) else list(dims)
    bound = max(ndim, 1)
    for d in dims:
        if not -bound <= d < bound:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], but got {d})"
            )
    wrapped = [d % bound for d in dims]
    for d in wrapped:
        if wrapped.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return [d for d in wrapped if d < ndim]


def _reversed(t: torch.Tensor, dims: list) -> StridedBuffer:
    """`t` read backwards along `dims`: negated strides, starting at the last element of each."""
    strides = [-s if d in dims else s for d, s in enumerate(t.stride())]
    offset = sum((t.shape[d] - 1) * t.stride(d) for d in dims)
    return StridedBuffer(t, strides=strides, offset=offset)


def flip(input, dims):
    """torch.flip: `input` reversed along `dims`, keeping a dense input's layout, else C-contiguous."""
    require_tensor("flip", "input", input)
    dims = _wrap_dims(dims, input.ndim)
    out = torch.empty_like(input)
    if out.numel():
        # the StridedBuffer reads raw storage: a negative view's values are resolved first
        src, dst = _real(input.resolve_neg()), _real(out)
        COPY.instantiate(dst.ndim)(_reversed(src, dims), out0=dst)
    return out


def _copy_contiguous(view: torch.Tensor) -> torch.Tensor:
    out = torch.empty(view.shape, dtype=view.dtype, device=view.device)
    COPY(_real(view), out0=_real(out))
    return out


def contiguous(input):
    """Tensor.contiguous(): `input` itself when C-contiguous, else a C-contiguous copy."""
    require_tensor("contiguous", "input", input)
    if input.is_contiguous():
        return input
    return _copy_contiguous(input)


def transpose_copy(input, dim0: int, dim1: int):
    """torch.transpose_copy: a C-contiguous copy of input.transpose(dim0, dim1)."""
    require_tensor("transpose_copy", "input", input)
    return _copy_contiguous(input.transpose(dim0, dim1))


def permute_copy(input, dims):
    """torch.permute_copy: a C-contiguous copy of input.permute(dims)."""
    require_tensor("permute_copy", "input", input)
    return _copy_contiguous(input.permute(*dims))
