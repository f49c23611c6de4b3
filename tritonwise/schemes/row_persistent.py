"""row_persistent: a reduction along dims whose reduced extent fits one block. A tile is BLOCK_M
rows (kept dims, i{d}) by BLOCK_N >= the reduced extent (j{d}), reduced to one value per row by the
program that owns it: no buffer, no atomics, deterministic.
"""

from __future__ import annotations

from .base import Scheme, blocks_of_area, ceil_div, pow2_floor, prod
from .nd import decompose

ROW_BLOCK_N = (16, 64, 128, 256, 512, 1024)  # the narrowest covering the row
# BLOCK_M makes the block ROW_BLOCK_AREA elements, on 4 warps (8 a thread): smaller programs read
# 0-5% faster than 2048 on 8 warps; docs/decisions/row-persistent-widths.md.
ROW_BLOCK_AREA = 1024


class RowPersistent(Scheme):
    name = "row_persistent"
    column_index = "cols"
    count_names = ("num_rows", "num_cols", "num_tiles")
    block_widths = ROW_BLOCK_N  # BLOCK_N choices; BLOCK_M makes the block block_area elements
    block_area = ROW_BLOCK_AREA
    aligned_counts = ("num_cols",)  # the product of the reduced extents, the last one aligned

    def applies(self, task_shape, strides, split, config) -> bool:
        """A reduced extent one block covers; row_looped takes longer ones."""
        return split is not None and prod(task_shape[split:]) <= min(ROW_BLOCK_N[-1], pow2_floor(config.max_tile_size))

    def block_choices(self, rank, itemsize, aligned, config) -> tuple:
        return blocks_of_area(self.block_area, self.block_widths, pow2_floor(config.max_tile_size))

    def pick_block(self, task_shape, m_dim, choices, itemsize) -> tuple:
        cols = prod(task_shape[m_dim:])
        return next((b for b in choices if b[1] >= cols), choices[-1])

    def counts(self, task_shape, m_dim, block) -> dict:
        rows = prod(task_shape[:m_dim])
        return {"num_rows": rows, "num_cols": prod(task_shape[m_dim:]), "num_tiles": ceil_div(rows, block[0])}

    def aligned_dims(self, rank, m_dim) -> list:
        """The innermost reduced dim alone: the masks run along the rows and the columns (num_rows,
        num_cols), not along dim m_dim, and its runs keep a column's split indices in runs of 16
        (docs/decisions/column-split.md); num_cols, a multiple of it, is specialized too."""
        return [rank - 1]

    def aligned_operands(self, operands, outputs) -> list:
        """The inputs alone: a row's value is stored by itself, at the rows' strides, so no output
        stride makes an access wider (a split's partial buffer, (parts, rows), has the row count
        for a stride). column_looped, whose rows lie along unit stride, counts its outputs too."""
        return operands[: len(operands) - outputs]

    def size_dims(self, rank, m_dim) -> list:
        return list(range(1, m_dim)) + list(range(m_dim + 1, rank))

    def index_names(self, rank, m_dim) -> list:
        return [f"i{d}" for d in range(m_dim)] + [f"j{d}" for d in range(m_dim, rank)]

    def row_vector_names(self, rank, m_dim) -> set:
        return {f"i{d}" for d in range(m_dim)}

    def column_names(self, rank, m_dim) -> set:
        return {f"j{d}" for d in range(m_dim, rank)}

    def column_lines(self, rank, m_dim, index_bits) -> list:
        """The reduced dims' indices of a block's columns, by unsigned division (nd.decompose); the
        innermost by INNER_EXTENT where the file takes it (row_looped) and it is compiled in."""
        extent = "INNER_EXTENT" if "INNER_EXTENT" in self.row_constexpr_names(rank, m_dim) else ""
        return decompose(list(range(m_dim, rank)), "cols", prefix="j", temp="cols_rest", unsigned_bits=index_bits,
                         extent=extent)

    def decompose_lines(self, rank, m_dim, index_bits) -> list:
        """The rows' indices, then the columns' unless they go inside a column loop (loops_columns)."""
        rows = decompose(list(range(m_dim)), "rows")
        return rows if self.loops_columns else rows + self.column_lines(rank, m_dim, index_bits)
