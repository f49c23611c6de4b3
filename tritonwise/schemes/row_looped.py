"""row_looped: a reduction along dims whose reduced extent exceeds one block. As row_persistent
(rows of kept dims, one program per row tile, no atomics), but each program loops over the
reduced extent BLOCK_N columns at a time, folding each block into a BLOCK_M x BLOCK_N
accumulator that is reduced to one value per row after the loop."""

from __future__ import annotations

from .base import prod
from .row_persistent import RowPersistent

LOOP_BLOCK_NS = (2048, 1024, 512, 256, 128)  # every block a file offers (BLOCK_M x BLOCK_N = 2048)
# Rows this long, or few rows (FEW_ROWS: at most this many, at least this long), take one row of
# 2048 on 16 warps; shorter ones two rows of 1024 on 8 (more programs); docs/decisions/row-looped-blocks.md.
LONG_ROW = 8192
FEW_ROWS = (256, 4096)
# Rows reduced over several dims divide each column index by a runtime extent; a taller tile
# shares that among more rows: this block on MULTI_DIM_WARPS where two rows of 1024 would be taken.
MULTI_DIM_BLOCK = (4, 512)
MULTI_DIM_WARPS = 4
# Only few, very long rows' wide blocks pipeline; docs/decisions/row-looped-pipelining.md.
LOOP_STAGES = 3
# (at most this many rows, at least this many reduced elements, the pipelined block's width),
# a later step overriding an earlier one.
PIPELINED_BLOCKS = ((128, 65536, 8192),)
PIPELINED_WIDTH = min(width for _, _, width in PIPELINED_BLOCKS)  # blocks this wide or wider pipeline
# Each element is read once, so its line leaves L2 first; docs/decisions/evict-first.md.
LOAD_EVICTION = "evict_first"


class RowLooped(RowPersistent):
    name = "row_looped"
    template = "row_looped.py.j2"  # by name: column_looped inherits the loop
    loops_columns = True
    clamps_rows = True  # whole blocks load unmasked; docs/decisions/row-looped-whole-blocks.md
    block_widths = LOOP_BLOCK_NS
    loop_stages = LOOP_STAGES  # software pipelining of the column loop (tl.range's num_stages)
    pipelined_width = PIPELINED_WIDTH  # blocks at least this wide pipeline; None: every block does
    load_eviction = LOAD_EVICTION

    def applies(self, task_shape, strides, split, config) -> bool:
        return split is not None

    def block_choices(self, rank, itemsize, aligned, config) -> tuple:
        widths = dict.fromkeys(width for _, _, width in PIPELINED_BLOCKS if width <= config.max_tile_size)
        return super().block_choices(rank, itemsize, aligned, config) + tuple((1, width) for width in widths)

    def pick_block(self, task_shape, m_dim, choices) -> tuple:
        rows, cols = prod(task_shape[:m_dim]), prod(task_shape[m_dim:])
        few_rows = rows <= FEW_ROWS[0] and cols >= FEW_ROWS[1]
        width = 2048 if cols >= LONG_ROW or few_rows else 1024
        if width == 1024 and len(task_shape) - m_dim > 1 and MULTI_DIM_BLOCK in choices:
            return MULTI_DIM_BLOCK
        for max_rows, min_cols, wide in PIPELINED_BLOCKS:
            if rows <= max_rows and cols >= min_cols and any(b[1] == wide for b in choices):
                width = wide
        return next((b for b in choices if b[1] == width), choices[0])

    def warps(self, block) -> int:
        if block == MULTI_DIM_BLOCK:
            return MULTI_DIM_WARPS
        return 16 if block[1] == 2048 else super().warps(block)

    def loop_num_stages(self) -> str:
        """tl.range's num_stages in the generated column loop: a constant, or where only wide
        blocks pipeline, a compile-time expression of BLOCK_N (1: a plain loop)."""
        if self.pipelined_width is None:
            return str(self.loop_stages)
        return f"{self.loop_stages} if BLOCK_N >= {self.pipelined_width} else 1"
