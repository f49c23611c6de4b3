"""Reductions of an output: which ones exist and their dtypes.

`"sum"`, `"max"` or `"min"` reduce over every element in the pass that computes the output, returned
0-d. Result dtypes follow torch (an integer or bool sum is int64); accumulation is fp32 for 16-bit
floats, int64 for integer sums, at least int32 for integer max/min. max/min ignore NaN (tl.max),
unlike torch.

`(kind, dims)` or `(kind, dims, keepdim)` reduces along `dims` of the broadcast task shape, as
`x.sum(dims, keepdim)`: each row of kept indices is reduced by one program, with no atomics. All
axis entries of a function reduce the same dims and do not mix with other outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence

import torch

KINDS = ("sum", "max", "min")


@dataclass(frozen=True)
class AxisEntry:
    """A parsed `(kind, dims, keepdim)` entry; dims as given (resolved against a rank per call)."""

    kind: str
    dims: tuple
    keepdim: bool = False

    def resolve(self, rank: int, what: str) -> tuple:
        """The sorted non-negative dims for a task of `rank`, as torch resolves them."""
        if not self.dims:  # torch: an empty dim list reduces every dim
            return tuple(range(rank))
        bound = max(rank, 1)
        resolved = []
        for d in self.dims:
            if not -bound <= d < bound:
                raise IndexError(f"{what}: dim {d} is out of range for a task of rank {rank}")
            resolved.append(d % bound)
        if len(set(resolved)) != len(resolved):
            raise RuntimeError(f"{what}: dim {resolved} appears more than once in the dims to reduce")
        return tuple(sorted(resolved)) if rank else ()


@dataclass(frozen=True)
class Reduction:
    kind: str
    result: torch.dtype  # dtype of the returned tensor
    acc: torch.dtype  # dtype the kernel accumulates in
    dims: Optional[tuple] = None  # axis reductions: the reduced dims of the task shape (None: all, to 0-d)
    keepdim: bool = False

    @property
    def along_dims(self) -> bool:
        return self.dims is not None

    def result_shape(self, shape: tuple) -> tuple:
        if self.dims is None:
            return ()
        if self.keepdim:
            return tuple(1 if d in self.dims else n for d, n in enumerate(shape))
        return tuple(n for d, n in enumerate(shape) if d not in self.dims)

    @property
    def identity_value(self):
        """The neutral element."""
        if self.kind == "sum":
            return 0
        if self.acc.is_floating_point:
            return float("-inf") if self.kind == "max" else float("inf")
        info = torch.iinfo(self.acc)
        return info.min if self.kind == "max" else info.max

    @property
    def identity(self) -> str:
        """The neutral element, as Triton source."""
        value = self.identity_value
        return f'float("{value}")' if isinstance(value, float) else str(value)


def parse_reductions(reductions: Optional[Sequence], num_outputs: int) -> tuple:
    """One entry per output: None for an elementwise output, one of KINDS, or an AxisEntry."""
    if reductions is None:
        return (None,) * num_outputs
    reductions = tuple(reductions)
    if len(reductions) != num_outputs:
        raise ValueError(
            f"reductions: {len(reductions)} entries for {num_outputs} outputs (use None for plain outputs)"
        )
    reductions = tuple(_axis_entry(k, r) if isinstance(r, (tuple, list)) else r for k, r in enumerate(reductions))
    for k, r in enumerate(reductions):
        if r is not None and not isinstance(r, AxisEntry) and r not in KINDS:
            raise ValueError(
                f"reductions[{k}]: {r!r} is not one of {', '.join(KINDS)}, (kind, dims), (kind, dims, keepdim) or None"
            )
    axis = [r for r in reductions if isinstance(r, AxisEntry)]
    if axis and (len(axis) != num_outputs or len({(r.dims, r.keepdim) for r in axis}) != 1):
        raise ValueError(
            f"reductions: {reductions!r}: reductions along dims must cover every output, with the same dims "
            "and keepdim (elementwise outputs and full reductions beside them are not supported yet)"
        )
    return reductions


def _axis_entry(k: int, entry) -> AxisEntry:
    if len(entry) not in (2, 3) or entry[0] not in KINDS:
        raise ValueError(f"reductions[{k}]: {entry!r} is not (kind, dims) or (kind, dims, keepdim), kind in {KINDS}")
    dims = entry[1] if isinstance(entry[1], (tuple, list)) else (entry[1],)
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise ValueError(f"reductions[{k}]: dims must be an int or a tuple of ints, got {entry[1]!r}")
    keepdim = entry[2] if len(entry) == 3 else False
    if not isinstance(keepdim, bool):
        raise ValueError(f"reductions[{k}]: keepdim must be a bool, got {keepdim!r}")
    return AxisEntry(entry[0], tuple(dims), keepdim)


def kind_of(entry) -> Optional[str]:
    """The reduction kind of a parsed entry (None for an elementwise output)."""
    return entry.kind if isinstance(entry, AxisEntry) else entry


def reduction_of(entry, elementwise: torch.dtype, rank: int = 0, what: str = "reductions") -> Reduction:
    """The Reduction of a parsed entry for a task of `rank` whose result has dtype `elementwise`."""
    if isinstance(entry, AxisEntry):
        full = reduction_of(entry.kind, elementwise)
        return replace(full, dims=entry.resolve(rank, what), keepdim=entry.keepdim)
    kind = entry
    if elementwise.is_complex:
        raise TypeError(f"a {kind} reduction of complex values is not supported")
    if elementwise.is_floating_point:
        return Reduction(kind, elementwise, torch.float64 if elementwise == torch.float64 else torch.float32)
    if kind == "sum":
        return Reduction(kind, torch.int64, torch.int64)
    return Reduction(kind, elementwise, torch.int64 if elementwise == torch.int64 else torch.int32)
