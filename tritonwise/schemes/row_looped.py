"""row_looped: a reduction along dims whose reduced extent exceeds one block. As row_persistent
(rows of kept dims, one program per row tile, no atomics), but each program loops over the
reduced extent BLOCK_N columns at a time, folding each block into a BLOCK_M x BLOCK_N
accumulator that is reduced to one value per row after the loop."""

from __future__ import annotations

from .base import prod
from .row_persistent import RowPersistent

LOOP_BLOCK_NS = (2048, 1024, 512, 256, 128)  # every block a file offers (BLOCK_M x BLOCK_N = 2048)
# Rows of at least LONG_ROW columns take one row of 2048 per program on 16 warps, shorter ones two
# rows of 1024 on 8. On the H100: sum of squares over the last dim of 8192x8192 fp32 read 2718-2739
# GB/s with (1, 2048) on 16 warps, 2660 with (2, 1024) on 8; but the (0, 2) sum of 64x4096x64
# (rows of 4096 in 64 runs of 64) read 1851 with (1, 2048), 1954 with (2, 1024).
LONG_ROW = 8192
# At most 256 rows take one row of 4096 per program on 8 warps, and only blocks that wide pipeline
# their column loop (3 stages: tl.range's num_stages); the others loop plainly. On the H100 (GB/s
# read under do_bench, .gpu/exp38.py and exp39.py at d170487), with loads evicting first: rows of
# 16384 fp32, 3 stages on (1, 4096) / plain (1, 2048): 128 rows 859 / 767, 256 rows 1247 / 1316, 512
# rows 1605 / 1810, 1024 rows 1930 / 2163, 2048 rows 2343 / 2477; bf16 128 rows 520 / 432, 256 rows
# 879 / 774, 1024 rows 1600 / 1743. Many rows: the (0, 2) sum of 64x4096x64 2149 plain / 1885
# pipelined, the 8192x8192 sum of squares 2769 / 2726, 4096x4096 bf16 1719 / 1623. (Before the loads
# evicted first, pipelining had won or tied on all of these: RESULTS.md, seventh session.)
LOOP_STAGES = 3
# (at most this many rows, at least this many reduced elements, the pipelined block's width):
# the steps of few rows' block, a later step overriding an earlier one. Few very long rows take
# one row of 8192 per program on 8 warps: on the H100 (GB/s read, do_bench / back to back in a
# CUDA graph, .gpu/exp47.py at 041bb4b), (1, 8192) against (1, 4096): bf16 128x65536 1237-1307
# / 1099-1147 and 2068 / 1815; 64x65536 785 / 716 and 1380 / 1122; fp32 64x65536 1200-1266 /
# 1140 and 1981 / 1748; 128x32768 bf16 848 / 802-868 and 1551 / 1433. With 256 rows it tied or
# lost (fp32 256x32768 1589-1649 / 1672, 256x65536 1893-1933 / 1956), and with rows of 16384 it
# tied (128x16384 bf16 504-544 / 491-516, exp46).
PIPELINED_BLOCKS = ((256, 4096, 4096), (128, 32768, 8192))
PIPELINED_WIDTH = min(width for _, _, width in PIPELINED_BLOCKS)  # blocks this wide or wider pipeline
# Loads evict first, as Inductor's looped reductions load (each element is read once). H100, GB/s
# under do_bench, two alternating rounds (.gpu/exp31.py at 838a302), evict_first / plain: sum over
# the last dim of 128x16384 bf16 498-500 / 460-466, over (0, 2) of 64x4096x64 fp32 1936-1938 /
# 1888-1900; level on the 8192x8192 row sum (2725-2726 / 2713-2727) and column max (2689-2705 /
# 2704-2709); but row_persistent's 16384x128 bf16 lost (542-560 / 596-607), so only the loops.
LOAD_EVICTION = "evict_first"


class RowLooped(RowPersistent):
    name = "row_looped"
    loops_columns = True
    block_widths = LOOP_BLOCK_NS
    loop_stages = LOOP_STAGES  # software pipelining of the column loop (tl.range's num_stages)
    pipelined_width = PIPELINED_WIDTH  # blocks at least this wide pipeline; None: every block does
    load_eviction = LOAD_EVICTION

    def applies_to_rows(self, task_shape, split, config, strides=()) -> bool:
        return True

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

    def decompose_lines(self, rank, m_dim) -> list:
        return self.row_lines(rank, m_dim)  # the column lines go inside the column loop
