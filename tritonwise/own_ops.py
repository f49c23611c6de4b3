"""The tensor operations a call needs while preparing itself, done by tritonwise's own kernels.

FlagGems registers functions built on tritonwise as aten kernels (`neg`, `resolve_neg`,
`resolve_conj`, `copy_`, `fill_`, `zero_`, ...; its `resolve_neg(A)` is `neg_func(A)`). A call
that dispatched to one of them while preparing itself could re-enter itself, so what tritonwise
needs done to operands before a launch it does with its own pointwise functions over raw memory
(StridedBuffers, which have no bits), never through those aten ops. Views (`view_as_real`,
indexing) and allocation (`torch.empty`) are the only aten calls left on the way.

torch's negative and conjugate bits: a view with the negative bit (`z.conj().imag`) or the
conjugate bit (`z.conj()`) holds in memory the negation (of the imaginary part) of its value.
Kernels read memory, so such an input is first resolved into a new tensor holding its value, as
torch's own kernels see it. docs/flaggems_semantics.md states the rule.
"""

from __future__ import annotations

from typing import Optional

import torch

from .runtime.strided_buffer import StridedBuffer

_kernels: dict = {}  # "same", "negated", "filled": the pointwise functions of this module


def _kernel(name: str):
    """The pointwise function `name`, built on first use (the decorator imports the function hub)."""
    if not _kernels:
        import triton

        from .frontend.decorator import pointwise_dynamic

        @pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
        @triton.jit
        def copy_raw(x):
            return x

        @pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
        @triton.jit
        def negate_raw(x):
            return -x

        @pointwise_dynamic(is_tensor=[False], promotion_methods=[(0, "DEFAULT")])
        @triton.jit
        def fill_with(value):
            return value

        _kernels.update(same=copy_raw, negated=negate_raw, filled=fill_with)
    return _kernels[name]


def has_bits(a) -> bool:
    return isinstance(a, torch.Tensor) and (a.is_neg() or a.is_conj())


def resolved(a):
    """`a` itself, or for a tensor with the negative or conjugate bit a new C-contiguous tensor
    holding its value."""
    if not has_bits(a):
        return a
    if not a.dtype.is_complex:
        out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
        return _kernel("negated")(_raw(a, a.dtype, a.stride(), 0), out0=out)
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    pairs = torch.view_as_real(out)
    real = a.dtype.to_real()
    strides = tuple(2 * s for s in a.stride())
    for part, negated in ((0, a.is_neg()), (1, a.is_neg() != a.is_conj())):
        _kernel("negated" if negated else "same")(_raw(a, real, strides, part), out0=pairs[..., part])
    return out


def _raw(a: torch.Tensor, dtype, strides: tuple, part: int) -> StridedBuffer:
    """The memory of `a` (of its real or imaginary parts: `part`), as it is, bits ignored."""
    return StridedBuffer(a, a.shape, strides, dtype=dtype, offset=part)


def resolve_negative_views(name: str, args: tuple, outs: tuple) -> Optional[tuple]:
    """`args` with every negative view resolved (see `resolved`); None when there is none. A
    given output with the bit is refused: a kernel writing its memory would write the negation."""
    for k, out in enumerate(outs):
        if isinstance(out, torch.Tensor) and out.is_neg():
            raise RuntimeError(f"{name}: out{k} is a negative view (is_neg()); pass out{k}.resolve_neg() instead")
    if not any(isinstance(a, torch.Tensor) and a.is_neg() for a in args):
        return None
    return tuple(resolved(a) if isinstance(a, torch.Tensor) and a.is_neg() else a for a in args)


def zero_(out) -> None:
    """Write zeros into `out` (a tensor or strided view of any real dtype): `out.zero_()`."""
    _kernel("filled")(0, out0=out)
