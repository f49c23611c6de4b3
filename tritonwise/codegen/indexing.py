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


@dataclass(frozen=True)
class Access:
    """How one operand is addressed in the body: a pointer expression and the mask it needs."""

    pointer: str
    mask: Optional[str]


def operand_access(name: str, classes: str, scheme, m_dim: Optional[int]) -> Access:
    """`scheme` (a schemes.Scheme) names the index along each dim and which are tile rows."""
    rank = len(classes)
    indices = [sympy.Symbol(n, integer=True) for n in scheme.index_names(rank, m_dim)]
    strides = [stride_symbol(name, d, c) for d, c in enumerate(classes)]
    offset = sympy.Add(*[i * s for i, s in zip(indices, strides)])
    ptr = f"{name}_ptr"
    if scheme.column_index is None:  # 1-D tiles: one pointer vector
        return Access(ptr if offset == 0 else f"{ptr} + {offset}", None if offset == 0 else "mask")
    column_symbols = [sympy.Symbol(n, integer=True) for n in sorted(scheme.column_names(rank, m_dim))]
    column = sympy.Add(*[offset.coeff(c) * c for c in column_symbols])
    row = sympy.expand(offset - column)
    vector_rows = {str(s) for s in row.free_symbols} & scheme.row_vector_names(rank, m_dim)
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
    return Access(" + ".join(parts), mask)
