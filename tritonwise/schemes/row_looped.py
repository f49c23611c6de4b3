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
# The column loop is software-pipelined in 3 stages (tl.range's num_stages). On the H100 (GB/s
# read under do_bench, two rounds each, .gpu/exp26.py at 46cdefe), 3 stages against a plain range:
# sum over the last dim of 128x16384 bf16 495-504 / 424-426, of 1024x16384 fp32 1945-1949 /
# 1853-1854, of 4096x4096 bf16 1613-1675 / 1531-1591, of 256x65536 fp32 1616-1647 / 1559-1588;
# level on the 8192x8192 sum of squares (2717-2724 / 2726-2734) and the (0, 2) sum of 64x4096x64
# (1900-1907 / 1915-1917). 2 stages lost on most (2634-2642 on the 8192x8192).
LOOP_STAGES = 3
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
    loop_stages = LOOP_STAGES  # software pipelining of the column loop (tl.range's num_stages); None: plain range
    load_eviction = LOAD_EVICTION

    def applies_to_rows(self, task_shape, split, config, strides=()) -> bool:
        return True

    def pick_block(self, task_shape, m_dim, choices) -> tuple:
        width = 2048 if prod(task_shape[m_dim:]) >= LONG_ROW else 1024
        return next((b for b in choices if b[1] == width), choices[0])

    def warps(self, block) -> int:
        return 16 if block[1] >= 2048 else super().warps(block)

    def decompose_lines(self, rank, m_dim) -> list:
        return self.row_lines(rank, m_dim)  # the column lines go inside the column loop
