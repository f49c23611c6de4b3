"""row_looped: a reduction along dims whose reduced extent exceeds one block. As row_persistent
(rows of kept dims, one program per row tile, no atomics), but each program loops over the
reduced extent BLOCK_N columns at a time, folding each block into a BLOCK_M x BLOCK_N
accumulator that is reduced to one value per row after the loop."""

from __future__ import annotations

from .row_persistent import RowPersistent

LOOP_BLOCK_N = 1024  # the block's columns a task takes
LOOP_BLOCK_NS = (1024, 512, 256, 128)  # every block a file offers (BLOCK_M x BLOCK_N = 2048)


class RowLooped(RowPersistent):
    name = "row_looped"
    loops_columns = True
    block_widths = LOOP_BLOCK_NS

    def applies_to_rows(self, task_shape, split, config, strides=()) -> bool:
        return True

    def pick_block(self, task_shape, m_dim, choices) -> tuple:
        return next((b for b in choices if b[1] == LOOP_BLOCK_N), choices[0])

    def decompose_lines(self, rank, m_dim) -> list:
        return self.row_lines(rank, m_dim)  # the column lines go inside the column loop
