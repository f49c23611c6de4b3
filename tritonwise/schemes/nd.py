"""nd: rows x innermost dim, for tasks every operand reads along the innermost dim (stride 0
or 1 there, or strided everywhere). A tile is BLOCK_M flattened rows by BLOCK_N columns; the
row index is split into the outer dims' indices inside the kernel."""

from __future__ import annotations

from .base import SMALL_TASK_TILES, Scheme, blocks_of_area, ceil_div, fit, pow2_floor, prod, unique

ND_BLOCK_N = (16, 64, 256, 1024)  # BLOCK_M * BLOCK_N = 2048
# A task of fewer than SMALL_TASK_TILES such tiles takes SHORT_BLOCK_M rows instead (where that is
# shorter): more programs of fewer warps finish it sooner; docs/decisions/small-task-tiles.md.
SHORT_BLOCK_M = 16


class Nd(Scheme):
    name = "nd"
    count_names = ("num_rows", "tiles_n", "num_tiles")

    def applies(self, task_shape, strides, split, config) -> bool:
        return split is None and len(task_shape) >= 2

    def block_choices(self, rank, itemsize, aligned, config) -> tuple:
        cap = pow2_floor(config.max_tile_size)
        full = blocks_of_area(2048, ND_BLOCK_N, cap)
        return full + unique((SHORT_BLOCK_M, bn) for bm, bn in full if bm > SHORT_BLOCK_M and SHORT_BLOCK_M * bn <= cap)

    def pick_block(self, task_shape, m_dim, choices, itemsize) -> tuple:
        bn = fit(task_shape[-1], [b[1] for b in choices])
        block = next(b for b in choices if b[1] == bn)
        if self.num_tiles(task_shape, m_dim, block) < SMALL_TASK_TILES:
            return min((b for b in choices if b[1] == bn), key=lambda b: b[0])
        return block

    def counts(self, task_shape, m_dim, block) -> dict:
        bm, bn = block
        rows, tiles_n = prod(task_shape[:-1]), ceil_div(task_shape[-1], bn)
        return {"num_rows": rows, "tiles_n": tiles_n, "num_tiles": ceil_div(rows, bm) * tiles_n}

    def size_dims(self, rank, m_dim) -> list:
        return list(range(1, rank))

    def index_names(self, rank, m_dim) -> list:
        return [f"i{d}" for d in range(rank - 1)] + ["offs_n"]

    def row_vector_names(self, rank, m_dim) -> set:
        return {f"i{d}" for d in range(rank - 1)}

    def decompose_lines(self, rank, m_dim, index_bits) -> list:
        return decompose(list(range(rank - 1)), "rows")


def decompose(dims: list, source: str, prefix: str = "i", temp: str = "rest", unsigned_bits: int = 0,
              extent: str = "") -> list:
    """Lines splitting `source` into per-dim indices ({prefix}{d}), innermost of `dims` fastest.

    With `unsigned_bits` (the index width), each quotient is an unsigned division and each
    remainder is taken from it by a multiply and a subtract: indices and extents are never
    negative, and the signed division and remainder cost more (docs/decisions/column-split.md).
    Quotients then get a name per level ({temp}{d}: the index over the dims before d), since the
    remainder reads the source after the quotient is written. `extent` (with `unsigned_bits`)
    names a constexpr holding the innermost extent where that is compiled in, 0 where it is not:
    the innermost split then divides by a constant (docs/decisions/inner-extent.md)."""
    lines = []
    for pos in range(len(dims) - 1, 0, -1):
        d = dims[pos]
        if pos == 1:
            quotient = f"{prefix}{dims[0]}"
        else:
            quotient = f"{temp}{d}" if unsigned_bits else temp
        if unsigned_bits:
            unsigned = f"tl.uint{unsigned_bits}"
            divided = f"({source}.to({unsigned}) // size{d}.to({unsigned})).to(tl.int{unsigned_bits})"
            taken = f"{quotient} * size{d}"
            if extent and pos == len(dims) - 1:  # the innermost split
                divided = f"({source}.to({unsigned}) // {extent}).to(tl.int{unsigned_bits}) if {extent} else {divided}"
                taken = f"{quotient} * ({extent} if {extent} else size{d})"
            lines.append(f"{quotient} = {divided}")
            lines.append(f"{prefix}{d} = {source} - {taken}")
        else:
            lines.append(f"{prefix}{d} = {source} % size{d}")
            lines.append(f"{quotient} = {source} // size{d}")
        source = quotient
    if len(dims) == 1:
        lines.append(f"{prefix}{dims[0]} = {source}")
    return lines
