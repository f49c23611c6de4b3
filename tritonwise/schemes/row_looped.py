"""row_looped: a reduction along dims whose reduced extent exceeds one block. As row_persistent
(rows of kept dims, one program per row tile, no atomics), but each program loops over the
reduced extent BLOCK_N columns at a time, folding each block into a BLOCK_M x BLOCK_N
accumulator that is reduced to one value per row after the loop."""

from __future__ import annotations

from .base import prod
from .row_persistent import RowPersistent

LOOP_BLOCK_NS = (2048, 1024, 512, 256, 128)  # every block a file offers (BLOCK_M x BLOCK_N = 2048)
# Rows this long take one row of 2048 on 16 warps (longer runs), shorter ones two rows of 1024
# on 8 (more programs); docs/decisions/row-looped-blocks.md.
LONG_ROW = 8192
# Only few rows' wide blocks pipeline: few programs need loads in flight, many lose more to the
# pipeline's buffers than they gain; docs/decisions/row-looped-pipelining.md.
LOOP_STAGES = 3
# (at most this many rows, at least this many reduced elements, the pipelined block's width),
# a later step overriding an earlier one.
PIPELINED_BLOCKS = ((256, 4096, 4096), (128, 32768, 8192))
PIPELINED_WIDTH = min(width for _, _, width in PIPELINED_BLOCKS)  # blocks this wide or wider pipeline
# Each element is read once, so its line leaves L2 first; docs/decisions/evict-first.md.
LOAD_EVICTION = "evict_first"


class RowLooped(RowPersistent):
    name = "row_looped"
    template = "row_looped.py.j2"  # by name: column_looped inherits the loop
    loops_columns = True
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
        width = 2048 if cols >= LONG_ROW else 1024
        for max_rows, min_cols, wide in PIPELINED_BLOCKS:
            if rows <= max_rows and cols >= min_cols and any(b[1] == wide for b in choices):
                width = wide
        return next((b for b in choices if b[1] == width), choices[0])

    def warps(self, block) -> int:
        return 16 if block[1] == 2048 else super().warps(block)

    def loop_num_stages(self) -> str:
        """tl.range's num_stages in the generated column loop: a constant, or where only wide
        blocks pipeline, a compile-time expression of BLOCK_N (1: a plain loop)."""
        if self.pipelined_width is None:
            return str(self.loop_stages)
        return f"{self.loop_stages} if BLOCK_N >= {self.pipelined_width} else 1"
