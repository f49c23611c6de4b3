"""column_looped: a reduction along dims whose kept dims, not the reduced ones, are walked with unit
stride (a column max of a row-major matrix): row_looped's kernel with a tall tile of BLOCK_M
adjacent kept elements, so every load reads whole lines.
"""

from __future__ import annotations

from .base import blocks_of_area, ceil_div, pow2_floor, prod
from .row_looped import RowLooped

COLUMN_BLOCK_M = (128, 64, 32, 16)  # BLOCK_M choices; BLOCK_N makes the block 8192 elements
WIDE_BLOCK_M = COLUMN_BLOCK_M[-1]  # the narrowest wide tile
WIDEST_BLOCK_M = COLUMN_BLOCK_M[0]
# Kept runs of 8 elements or fewer (a column sum of a narrow matrix) take a narrow tile, no wider
# than the run: a wider one masks lanes off, and with a run of 8 read half as fast. Files of the
# aligned class pipeline their loop (LOOP_STAGES, inherited) so that few programs keep loads in
# flight; unaligned ones (narrow tiles among them) run a plain loop. The widest tile that still
# makes MIN_PROGRAMS programs; docs/decisions/column-looped-tile.md.
NARROW_BLOCK_M = (8, 4, 2)
MIN_PROGRAMS = 128
# A tile of 2-byte elements (the widest of the call's tensors and results) holds half the bytes of
# a 4-byte one: where the widest (128 kept) makes fewer than TWO_BYTE_MIN_PROGRAMS programs (about
# one an SM), it halves to 64, which still reads whole 128-byte lines, for twice the programs and
# loads in flight.
TWO_BYTE_MIN_PROGRAMS = 192
LOOP_WARPS = 4


def kept_per_program(run) -> int:
    """BLOCK_M of the narrowest tile a kept run of `run` adjacent elements takes: the narrowest of
    NARROW_BLOCK_M covering it, else WIDE_BLOCK_M (wider where programs are many)."""
    return min((m for m in NARROW_BLOCK_M if m >= run), default=WIDE_BLOCK_M)


class ColumnLooped(RowLooped):
    name = "column_looped"
    clamps_rows = False  # its rows run along unit stride: a clamped index would lose the wide loads
    pipelined_from = None  # every tile, in a file of the aligned class
    pipelines_unaligned = False  # pipelined, 4-byte loads read slower than in a plain loop (column-looped-tile.md)
    peels_rows = False  # its loads run along the kept dim, not along rows
    aligned_counts = ("num_rows",)

    def aligned_dims(self, rank, m_dim) -> list:
        """The kept dim the loads run along alone: the reduced extents (3 in a max over dim 0 of
        3x2048x64) only count the loop's steps and mask whole columns of a tile."""
        return [m_dim - 1]

    def aligned_operands(self, operands, outputs) -> list:
        return operands  # rows lie along unit stride: the outputs' stores of adjacent rows vectorize too

    def applies(self, task_shape, strides, split, config) -> bool:
        if split is None or not strides or split == 0 or split == len(task_shape):
            return False
        first = strides[0]
        return first[split - 1] == 1 and first[-1] != 1

    def row_constexpr_names(self, rank, m_dim) -> tuple:
        return ()  # its loop's count, last block and split stay run-time values (not measured otherwise)

    def row_constexprs(self, task_shape, m_dim, block, peeled) -> tuple:
        return ()

    def block_choices(self, rank, itemsize, aligned, config) -> tuple:
        tall = blocks_of_area(8192, COLUMN_BLOCK_M + NARROW_BLOCK_M, pow2_floor(config.max_tile_size))
        return tuple((bm, bn) for bn, bm in tall)

    def pick_block(self, task_shape, m_dim, choices, itemsize) -> tuple:
        """For a kept run (the innermost kept dim) shorter than 16, the narrowest tile covering it
        (kept_per_program); else the widest tile that still makes MIN_PROGRAMS programs, or whose
        columns already cover the reduced extent (narrower tiles would only add idle lanes); of
        2-byte elements, half the widest where that does not cover the reduced extent and makes
        fewer than TWO_BYTE_MIN_PROGRAMS programs."""
        run = task_shape[m_dim - 1]
        if run < WIDE_BLOCK_M:
            width = kept_per_program(run)
            covering = [b for b in choices if b[0] == width]
            if covering:
                return covering[0]
        wide = [b for b in choices if b[0] >= WIDE_BLOCK_M] or choices
        rows, cols = prod(task_shape[:m_dim]), prod(task_shape[m_dim:])
        block = next((b for b in wide if ceil_div(rows, b[0]) >= MIN_PROGRAMS or b[1] >= cols), wide[-1])
        # Plain ints first, so that a traced shape program gains no guard; the widest tile, unless
        # it covers the reduced extent, was picked for making MIN_PROGRAMS programs.
        if itemsize == 2 and block[0] == WIDEST_BLOCK_M:
            if block[1] < cols and ceil_div(rows, block[0]) < TWO_BYTE_MIN_PROGRAMS:
                return next((b for b in wide if b[0] == block[0] // 2), block)
        return block

    def warps(self, block) -> int:
        return LOOP_WARPS
