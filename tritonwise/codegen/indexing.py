"""Symbolic index expressions (sympy) for each operand, printed into the kernel templates.

An operand's offset is sum(index_d * stride_d) over the task dims. Strides of class '1' and
'0' enter as the numbers 1 and 0, so unit-stride and broadcast terms simplify away before
printing. The expression is split by where its index symbols live in the tile: a row part
(one value per tile row, or a per-program scalar) and a column part (along the innermost dim).
sympy runs only when a kernel is generated, never per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import sympy


def stride_symbol(operand: str, dim: int, cls: str):
    if cls in ("0", "1"):
        return sympy.Integer(int(cls))
    return sympy.Symbol(f"{operand}_stride{dim}", integer=True)


def index_symbols(rank: int, scheme: str, m_dim: Optional[int]) -> list:
    """The name standing for the index along each task dim inside the kernel body."""
    if scheme == "flat":
        return [sympy.Symbol("offs", integer=True)] if rank else []
    names = [f"i{d}" for d in range(rank)]
    names[-1] = "offs_n"
    if scheme == "tile2d":
        names[m_dim] = "offs_m"
    return [sympy.Symbol(n, integer=True) for n in names]


def row_vector_names(rank: int, scheme: str, m_dim: Optional[int]) -> set:
    """Index names that are vectors along the tile's first axis (the rest are per-program scalars)."""
    if scheme == "nd":
        return {f"i{d}" for d in range(rank - 1)}
    if scheme == "tile2d":
        return {"offs_m"}
    return set()


@dataclass(frozen=True)
class Access:
    """How one operand is addressed in the body: a pointer expression and the mask it needs."""

    pointer: str
    mask: Optional[str]
    stride_params: tuple  # the run-time stride parameters the expression uses


def operand_access(name: str, classes: str, scheme: str, m_dim: Optional[int]) -> Access:
    rank = len(classes)
    indices = index_symbols(rank, scheme, m_dim)
    strides = [stride_symbol(name, d, c) for d, c in enumerate(classes)]
    offset = sympy.Add(*[i * s for i, s in zip(indices, strides)])
    used = tuple(sorted(str(s) for s in offset.free_symbols if str(s).startswith(f"{name}_stride")))
    ptr = f"{name}_ptr"
    if scheme == "flat":
        return Access(ptr if offset == 0 else f"{ptr} + {offset}", None if offset == 0 else "mask", used)
    column = offset.coeff(sympy.Symbol("offs_n", integer=True)) * sympy.Symbol("offs_n", integer=True)
    row = sympy.expand(offset - column)
    vector_rows = {str(s) for s in row.free_symbols} & row_vector_names(rank, scheme, m_dim)
    parts, masks = [ptr], []
    if vector_rows:
        parts.append(f"({row})[:, None]")
        masks.append("m")
    elif row != 0:
        parts.append(str(row))
    if column != 0:
        parts.append(f"({column})[None, :]")
        masks.append("n")
    mask = {("m", "n"): "mask", ("m",): "mask_m[:, None]", ("n",): "mask_n[None, :]"}.get(tuple(masks))
    return Access(" + ".join(parts), mask, used)
