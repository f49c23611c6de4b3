"""The tensor operations a call needs while preparing itself, done by tritonwise's own kernels.

FlagGems registers functions built on tritonwise as aten kernels (`neg`, `resolve_neg`, `copy_`,
...), so a call preparing its operands through those aten ops could re-enter itself: what it needs
done before a launch (resolving negative and conjugate views into their values) runs on its own
pointwise functions over raw memory. docs/flaggems_semantics.md.

A split reduction's partial values are combined by its own reductions along dim 0 too
(`combine_partials`): one kernel into the output, where torch's reduce over a few kept columns
is slow and an output narrower than the partials would take a second kernel for the copy.
"""

from __future__ import annotations

import torch

from ..frontend.schema import FunctionSchema
from ..runtime import dispatch
from ..strided_buffer import StridedBuffer

_kernels: dict = {}  # "same", "negated", "filled"; "sum", "max", "min" along dim 0: this module's functions
_function_class = None  # the class pointwise functions are made of (make_functions_with)


def make_functions_with(cls) -> None:
    """Build this module's functions as `cls(payload, schema)` (the function class registers itself)."""
    global _function_class
    _function_class = cls


def _kernel(name: str):
    """The pointwise function `name`, built on first use."""
    if not _kernels:
        import triton

        copying = FunctionSchema(num_inputs=1, promotion_methods=[(0, "DEFAULT")])

        @triton.jit
        def copy_raw(x):
            return x

        @triton.jit
        def negate_raw(x):
            return -x

        @triton.jit
        def fill_with(value):
            return value

        @triton.jit
        def sum_of_partials(x):
            return x

        @triton.jit
        def max_of_partials(x):
            return x

        @triton.jit
        def min_of_partials(x):
            return x

        filling = FunctionSchema(is_tensor=[False], promotion_methods=[(0, "DEFAULT")])
        make = _function_class
        built = dict(same=make(copy_raw, copying), negated=make(negate_raw, copying), filled=make(fill_with, filling))
        for kind, payload in (("sum", sum_of_partials), ("max", max_of_partials), ("min", min_of_partials)):
            built[kind] = make(payload, copying, reductions=[(kind, 0)])
        _kernels.update(built)  # at once: another thread finds all of them or none
    return _kernels[name]


def combine_partials(kind: str, partials: torch.Tensor, rows) -> None:
    """Reduce `partials` (parts, *rows) along dim 0 by `kind` into `rows` (the output's rows, of
    the result dtype, or of any where the result's is the partials'): reduced in the partials'
    dtype, rounded once as it is stored."""
    _kernel(kind)(partials, out0=rows)


def generate_combines(split, outs: tuple, targets=()) -> None:
    """Write the files (and compile the kernels for `targets`) that combine the partials of
    `split` (a SplitLaunch) into `outs`, the given outputs (None: one it allocates)."""
    for k, out in enumerate(outs):
        device = "cpu" if out is None else out.device
        if out is None:
            out = torch.empty_strided(split.rows, split.out_row_strides[k], dtype=split.results[k], device=device)
        if split.own_combine(k, out.dtype):
            rows = split.rows_of(out, k)
            _kernel(split.kinds[k]).generate(split.buffers(device)[k], targets=targets, out0=rows)


dispatch.combine_partials_with(combine_partials)


def resolved(a):
    """`a` itself, or for a tensor with the negative or conjugate bit a new C-contiguous tensor of its value."""
    if not (isinstance(a, torch.Tensor) and (a.is_neg() or a.is_conj())):
        return a
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    # the kernels read the memory of `a` (of its real or imaginary parts) through StridedBuffers: bits ignored
    if not a.dtype.is_complex:
        return _kernel("negated")(StridedBuffer(a, a.shape, a.stride()), out0=out)
    pairs = torch.view_as_real(out)
    strides = tuple(2 * s for s in a.stride())
    for part, negated in ((0, a.is_neg()), (1, a.is_neg() != a.is_conj())):
        raw = StridedBuffer(a, a.shape, strides, dtype=a.dtype.to_real(), offset=part)
        _kernel("negated" if negated else "same")(raw, out0=pairs[..., part])
    return out


def has_negative_views(name: str, args: tuple, outs: tuple) -> bool:
    """Whether an argument is a negative view. A given output with the bit is refused: a kernel
    writing its memory would write the negation."""
    for k, out in enumerate(outs):
        if isinstance(out, torch.Tensor) and out.is_neg():
            raise RuntimeError(f"{name}: out{k} is a negative view (is_neg()); pass out{k}.resolve_neg() instead")
    return any(isinstance(a, torch.Tensor) and a.is_neg() for a in args)


def zero_(out) -> None:
    """Write zeros into `out` (a tensor or strided view of any real dtype): `out.zero_()`."""
    _kernel("filled")(0, out0=out)
