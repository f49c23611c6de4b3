"""Index expressions for each operand, printed into the kernel templates.

An operand's offset is sum(index_d * stride_d); strides of class '1' and '0' enter as numbers, so
unit-stride terms are the bare index and broadcast terms vanish. The expression is split into a row
part (per tile row, or per program) and a column part (the innermost dim). Each term is a product of
one or two names with coefficient 1, so no algebra is needed: a term is the sorted tuple of its names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


def print_sum(terms: list) -> str:
    """The terms as Python source: `a*b + c`, greatest exponent vector first."""
    names = sorted({name for term in terms for name in term})
    exponents = {term: tuple(int(name in term) for name in names) for term in terms}
    ordered = sorted(terms, key=exponents.__getitem__, reverse=True)
    return " + ".join("*".join(term) for term in ordered)


@dataclass(frozen=True)
class Access:
    """How one operand is addressed in the body: a pointer expression, the mask it needs, and
    the mask's row part (what a block whose every column is in range still needs)."""

    pointer: str
    mask: Optional[str]
    row_mask: Optional[str] = None


def _terms(name: str, classes: str, scheme, m_dim: Optional[int]) -> list:
    """The offset's terms: the bare index for unit stride ('1'), none for broadcast ('0')."""
    return [
        (index,) if cls == "1" else tuple(sorted((index, f"{name}_stride{dim}")))
        for dim, (index, cls) in enumerate(zip(scheme.index_names(len(classes), m_dim), classes))
        if cls != "0"
    ]


def _split(terms: list, scheme, rank: int, m_dim: Optional[int]) -> tuple:
    """(row terms, column terms) of an offset."""
    columns = scheme.column_names(rank, m_dim)
    return [t for t in terms if not columns.intersection(t)], [t for t in terms if columns.intersection(t)]


def row_offset(name: str, classes: str, scheme, m_dim: Optional[int]) -> str:
    """The row part of an operand's offset, as text ("0" where every row dim is broadcast)."""
    row, _ = _split(_terms(name, classes, scheme, m_dim), scheme, len(classes), m_dim)
    return print_sum(row) if row else "0"


def peeled_access(name: str) -> Access:
    """The access of the operand whose whole blocks start at its row's first 16-byte boundary
    (`{name}_row`, row_looped.py.j2), `offs` columns further: the load of a whole block, unmasked."""
    return Access(f"{name}_ptr + ({name}_row)[:, None] + (offs)[None, :]", "mask", "mask_m[:, None]")


def operand_access(name: str, classes: str, scheme, m_dim: Optional[int]) -> Access:
    """`scheme` (a schemes.Scheme) names the index along each dim and which are tile rows."""
    rank = len(classes)
    terms = _terms(name, classes, scheme, m_dim)
    ptr = f"{name}_ptr"
    if scheme.column_index is None:  # 1-D tiles: one pointer vector, one mask, no row part
        return Access(f"{ptr} + {print_sum(terms)}" if terms else ptr, "mask" if terms else None)
    row, column = _split(terms, scheme, rank, m_dim)
    vector_rows = {n for t in row for n in t} & scheme.row_vector_names(rank, m_dim)
    parts, masks = [ptr], []
    if vector_rows:
        parts.append(f"({print_sum(row)})[:, None]")
        masks.append("m")
    elif row:
        parts.append(print_sum(row))
    if column:
        parts.append(f"({print_sum(column)})[None, :]")
        masks.append("n")
    names = {("m", "n"): "mask", ("m",): "mask_m[:, None]", ("n",): "mask_n[None, :]"}
    return Access(" + ".join(parts), names.get(tuple(masks)), names[("m",)] if "m" in masks else None)
