"""Full reductions of an output: which ones exist and their dtypes.

An output declared `"sum"`, `"max"` or `"min"` is reduced over every element in the same pass
that computes it, and returned as a 0-d tensor. Result dtypes follow torch (`sum` of bool or
integers is int64, otherwise the elementwise result dtype); accumulation is fp32 for fp16 and
bf16, fp64 for fp64, int64 for integer sums and at least int32 for integer max/min (the widths
Triton's atomics support). max/min ignore NaN (Triton's tl.max semantics), unlike torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch

KINDS = ("sum", "max", "min")


@dataclass(frozen=True)
class Reduction:
    kind: str
    result: torch.dtype  # dtype of the returned 0-d tensor
    acc: torch.dtype  # dtype the kernel accumulates in

    @property
    def identity(self) -> str:
        """The neutral element, as Triton source."""
        if self.kind == "sum":
            return "0"
        if self.acc.is_floating_point:
            return 'float("-inf")' if self.kind == "max" else 'float("inf")'
        info = torch.iinfo(self.acc)
        return str(info.min if self.kind == "max" else info.max)

    @property
    def identity_value(self):
        return {"0": 0, 'float("-inf")': float("-inf"), 'float("inf")': float("inf")}.get(self.identity) or int(
            self.identity
        )


def parse_reductions(reductions: Optional[Sequence], num_outputs: int) -> tuple:
    """One entry per output: None for an elementwise output, else one of KINDS."""
    if reductions is None:
        return (None,) * num_outputs
    reductions = tuple(reductions)
    if len(reductions) != num_outputs:
        raise ValueError(
            f"reductions: {len(reductions)} entries for {num_outputs} outputs (use None for plain outputs)"
        )
    for k, r in enumerate(reductions):
        if r is not None and r not in KINDS:
            raise ValueError(f"reductions[{k}]: {r!r} is not one of {', '.join(KINDS)} or None")
    return reductions


def reduction_of(kind: str, elementwise: torch.dtype) -> Reduction:
    if elementwise.is_complex:
        raise TypeError(f"a {kind} reduction of complex values is not supported")
    floating = elementwise.is_floating_point
    if kind == "sum":
        result = elementwise if floating else torch.int64
        acc = torch.float64 if elementwise == torch.float64 else torch.float32 if floating else torch.int64
    else:
        result = elementwise
        acc = (
            torch.float64
            if elementwise == torch.float64
            else torch.float32
            if floating
            else (torch.int64 if elementwise == torch.int64 else torch.int32)
        )
    return Reduction(kind, result, acc)
