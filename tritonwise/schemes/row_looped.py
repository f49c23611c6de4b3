"""row_looped: a reduction along dims whose reduced extent exceeds one block. As row_persistent
(rows of kept dims, one program per row tile, no atomics), but each program loops over the
reduced extent BLOCK_N columns at a time, folding each block into a BLOCK_M x BLOCK_N
accumulator that is reduced to one value per row after the loop."""

from __future__ import annotations

from typing import Optional, Sequence

from .base import prod
from .row_persistent import RowPersistent

LOOP_BLOCK_NS = (2048, 1024, 512, 256, 128)  # every block a file offers (BLOCK_M x BLOCK_N = LOOP_BLOCK_AREA)
LOOP_BLOCK_AREA = 2048
# Rows at least LONG_ROW long, or at most FEW_ROWS_MAX rows at least FEW_ROWS_MIN_COLS long, take
# LONG_BLOCK on LONG_BLOCK_WARPS; other rows SHORT_BLOCK (more programs); docs/decisions/row-looped-blocks.md.
LONG_ROW = 8192
FEW_ROWS_MAX, FEW_ROWS_MIN_COLS = 256, 4096
LONG_BLOCK, LONG_BLOCK_WARPS = (1, 2048), 16
SHORT_BLOCK = (2, 1024)
# Rows reduced over several dims (that do not collapse into one) divide each column index by a
# runtime extent; a taller tile shares that among more rows: MULTI_DIM_BLOCK, on its own warps,
# where SHORT_BLOCK would be taken (row-looped-blocks.md).
MULTI_DIM_BLOCK, MULTI_DIM_BLOCK_WARPS = (4, 512), 4
# Rows of one reduced dim where SHORT_BLOCK would be taken read in SPARSE_ROWS_BLOCK (on 8 warps,
# Scheme.warps) where it reads at most SPARSE_ROWS_LANES (a fraction: 4/5) of SHORT_BLOCK's lanes
# a row, its whole blocks and the block of its last columns counted (rows of 1153 to 1600
# columns: a rest of more than 128 in SHORT_BLOCK's 1024 idles most of its last block);
# row-looped-blocks.md.
SPARSE_ROWS_BLOCK, SPARSE_ROWS_LANES = (4, 512), (4, 5)
# In a file that reads rows rotated (peel_operand), many rows that would take SHORT_BLOCK take
# one row of LONG_BLOCK's 2048 on ROTATED_ROWS_WARPS where a rotated row keeps ROTATED_MIN_BLOCKS
# whole blocks of it: blocks of several rows read from their start load one element a lane, a
# rotated row 16 bytes (peeled_block; row-peel.md).
ROTATED_ROWS_WARPS, ROTATED_MIN_BLOCKS = 8, 2
BLOCK_WARPS = {LONG_BLOCK: LONG_BLOCK_WARPS}  # others: Scheme.warps, or task_warps' exceptions
# Only few, very long rows' wide blocks pipeline; docs/decisions/row-looped-pipelining.md.
LOOP_STAGES = 3
# (at most this many rows, at least this many reduced elements, the pipelined block's width):
# one step today, a later step would override an earlier one.
PIPELINED_BLOCKS = ((128, 65536, 8192),)
PIPELINED_WIDTH = min(width for _, _, width in PIPELINED_BLOCKS)  # blocks this wide or wider pipeline
# Rows of 1 to this many whole blocks (not pipelined) take their count compiled in (WHOLE_BLOCKS): the loop
# then runs as straight-line loads; a kernel per count met; docs/decisions/row-looped-count.md.
MAX_COMPILED_BLOCKS = 32
# A row's masked last columns, where they are at most BLOCK_N // REST_BLOCK_FRACTION, are read in a
# block of that width (REST_BLOCK) into accumulators of their own; else in a whole block, folded
# into the block accumulators; docs/decisions/row-looped-rest.md.
REST_BLOCK_FRACTION = 8
# Rows reduced over several dims split each column index into one index per dim; where the innermost
# reduced extent is one of these it is compiled in (INNER_EXTENT), a kernel per extent met, and that
# split shifts; else it divides by the run-time extent (level at 2, and from 32 on);
# docs/decisions/inner-extent.md.
COMPILED_INNER_EXTENTS = (4, 8, 16)
# Each element is read once, so its line leaves L2 first; docs/decisions/evict-first.md.
LOAD_EVICTION = "evict_first"
# A one-row block of the unaligned class, where one input varies along the row, reads it from the
# row's first boundary of this many bytes (peel_operand).
PEEL_BYTES = 16


def several_reduced_dims(rank: int, m_dim: int) -> bool:
    """Whether a task of `rank` dims, the first `m_dim` kept, reduces several that did not collapse into one."""
    return rank - m_dim > 1


def rest_width(left, width: int, fraction: int) -> int:
    """The width a row's `left` (> 0) last columns are read in under blocks of `width`: the
    block's `fraction`-th part where they fit it, else a whole block (row-looped-rest.md)."""
    narrow = max(width // fraction, 1)
    return narrow if left <= narrow else width


class RowLooped(RowPersistent):
    name = "row_looped"
    template = "row_looped.py.j2"  # by name: column_looped inherits the loop
    loops_columns = True
    whole_blocks = True  # the column loop's blocks before the last
    clamps_rows = True  # whole blocks load unmasked; docs/decisions/row-looped-whole-blocks.md
    block_widths = LOOP_BLOCK_NS
    block_area = LOOP_BLOCK_AREA
    loop_stages = LOOP_STAGES  # software pipelining of the column loop (tl.range's num_stages)
    pipelined_from = ("BLOCK_N", PIPELINED_WIDTH)  # blocks at least this long along this dim pipeline; None: all
    pipelines_unaligned = True  # whether a file of the unaligned class (4-byte loads) pipelines too
    load_eviction = LOAD_EVICTION
    peels_rows = True  # one-row blocks of one varying input read from a 16-byte boundary (peel_operand)
    peel_bytes = PEEL_BYTES
    max_compiled_blocks = MAX_COMPILED_BLOCKS
    rest_block_fraction = REST_BLOCK_FRACTION
    compiled_inner_extents = COMPILED_INNER_EXTENTS

    def applies(self, task_shape, strides, split, config) -> bool:
        return split is not None

    def block_choices(self, rank, itemsize, aligned, config) -> tuple:
        widths = dict.fromkeys(width for _, _, width in PIPELINED_BLOCKS if width <= config.max_tile_size)
        return super().block_choices(rank, itemsize, aligned, config) + tuple((1, width) for width in widths)

    def pick_block(self, task_shape, m_dim, choices, itemsize) -> tuple:
        rows, cols = prod(task_shape[:m_dim]), prod(task_shape[m_dim:])
        block = LONG_BLOCK if self.long_rows(task_shape, m_dim) else SHORT_BLOCK
        if block == SHORT_BLOCK and several_reduced_dims(len(task_shape), m_dim) and MULTI_DIM_BLOCK in choices:
            block = MULTI_DIM_BLOCK
        elif block == SHORT_BLOCK and SPARSE_ROWS_BLOCK in choices:
            part, whole = SPARSE_ROWS_LANES
            if self.lanes(cols, SPARSE_ROWS_BLOCK) * whole <= self.lanes(cols, SHORT_BLOCK) * part:
                block = SPARSE_ROWS_BLOCK
        for max_rows, min_cols, wide in PIPELINED_BLOCKS:
            if rows <= max_rows and cols >= min_cols and (1, wide) in choices:
                block = (1, wide)
        return next((b for b in choices if b[1] == block[1]), choices[0])  # by width: the cap may change rows

    def long_rows(self, task_shape, m_dim) -> bool:
        """Whether rows take LONG_BLOCK: rows of LONG_ROW columns, or few of FEW_ROWS_MIN_COLS."""
        rows, cols = prod(task_shape[:m_dim]), prod(task_shape[m_dim:])
        return cols >= LONG_ROW or (rows <= FEW_ROWS_MAX and cols >= FEW_ROWS_MIN_COLS)

    def peeled_block(self, task_shape, m_dim, choices, block) -> tuple:
        """A peeled file's block, given the one pick_block chose: LONG_BLOCK (on
        ROTATED_ROWS_WARPS, task_warps) for SHORT_BLOCK where a rotated row keeps at least
        ROTATED_MIN_BLOCKS whole blocks of it (rotated_whole_blocks)."""
        kept = self.rotated_whole_blocks(prod(task_shape[m_dim:]), LONG_BLOCK[1])
        rotates = block == SHORT_BLOCK and LONG_BLOCK in choices and kept >= ROTATED_MIN_BLOCKS
        return LONG_BLOCK if rotates else block

    def rotated_whole_blocks(self, cols, width: int):
        """The whole blocks of `width` every rotation of a row of `cols` keeps: a head is shorter
        than peel_bytes (at most 16 / itemsize - 1 elements, so peel_bytes - 1 for any dtype)."""
        return (cols - (self.peel_bytes - 1)) // width

    def lanes(self, cols: int, block: tuple) -> int:
        """The columns a row of `cols` is read in under `block`: its whole blocks, then its last
        columns' block (rest_width, with the measured fraction whatever a test patches)."""
        width = block[1]
        left = cols % width
        return cols - left + (rest_width(left, width, REST_BLOCK_FRACTION) if left > 0 else 0)

    def row_constexpr_names(self, rank, m_dim) -> tuple:
        """WHOLE_BLOCKS and REST_BLOCK; INNER_EXTENT too where several dims are reduced."""
        return ("WHOLE_BLOCKS", "REST_BLOCK") + (("INNER_EXTENT",) if several_reduced_dims(rank, m_dim) else ())

    def row_constexprs(self, task_shape, m_dim, block, peeled) -> tuple:
        """(WHOLE_BLOCKS, REST_BLOCK[, INNER_EXTENT]): a row's count of whole column blocks where it
        is 1 to max_compiled_blocks, else 0 (counted at run time), and the width of the block its
        masked last columns are read in: BLOCK_N // rest_block_fraction where they are no more,
        else BLOCK_N (docs/decisions/row-looped-count.md, row-looped-rest.md); then, where the file
        takes it, the innermost reduced extent where compiled in (inner_extent). One-row blocks of
        a `peeled` file count the whole blocks every rotation of a row keeps (rotated_whole_blocks)
        and read the rest, head included, in whole blocks (up to two); pipelined blocks count at
        run time (they read no faster with it). int(): a shape program traced through this serves
        only rows of the same values (plans/symbolic.py)."""
        width = block[1]
        cols = prod(task_shape[m_dim:])
        rotated = peeled and block[0] == 1
        count = self.rotated_whole_blocks(cols, width) if rotated else cols // width
        compiled = 1 <= count <= self.max_compiled_blocks and not self.pipelined(block)
        left = cols - count * width
        rest = width if rotated or left == 0 else rest_width(left, width, self.rest_block_fraction)
        values = ((int(count) if compiled else 0), rest)
        takes_extent = "INNER_EXTENT" in self.row_constexpr_names(len(task_shape), m_dim)
        return values + ((self.inner_extent(task_shape[-1]),) if takes_extent else ())

    def inner_extent(self, extent) -> int:
        """INNER_EXTENT for an innermost reduced extent: itself where it is one of
        compiled_inner_extents, else 0 (the split divides by the run-time extent). A shape program
        traced through this guards each comparison: it serves only that extent where one is
        compiled in."""
        return next((e for e in self.compiled_inner_extents if extent == e), 0)

    def pipelined(self, block) -> bool:
        """Whether a block's column loop is software-pipelined (`pipelined_from`; files of both
        classes pipeline here, pipelines_unaligned)."""
        if self.pipelined_from is None:
            return True
        dim, least = self.pipelined_from
        return block[("BLOCK_M", "BLOCK_N").index(dim)] >= least

    def warps(self, block) -> int:
        return BLOCK_WARPS.get(block) or super().warps(block)

    def task_warps(self, block, task_shape, m_dim) -> int:
        """MULTI_DIM_BLOCK_WARPS for MULTI_DIM_BLOCK over several reduced dims, ROTATED_ROWS_WARPS
        for LONG_BLOCK on rows that are not long (peeled_block's), else `warps`."""
        if block == MULTI_DIM_BLOCK and several_reduced_dims(len(task_shape), m_dim):
            return MULTI_DIM_BLOCK_WARPS
        if block == LONG_BLOCK and not self.long_rows(task_shape, m_dim):
            return ROTATED_ROWS_WARPS
        return self.warps(block)

    def peel_operand(self, rank: int, m_dim: int, aligned: bool, classes: Sequence[str], inputs: int) -> Optional[int]:
        """Which operand (of `classes`, the strided operands' stride classes, the first `inputs` of
        them loaded) a file's blocks of one row read from the row's first PEEL_BYTES boundary, the
        row rotated so that whole blocks load 16 bytes a lane (docs/decisions/row-peel.md); None:
        none. Files of the unaligned class reducing one dim peel the one operand varying along it,
        where it is an input with unit stride there and rows at run-time strides (else its rows
        start aligned). Such a file offers no pipelined block (peeled_blocks)."""
        if aligned or not self.peels_rows or rank - m_dim != 1:
            return None
        varying = [k for k, c in enumerate(classes) if c[-1] != "0"]
        if len(varying) != 1 or varying[0] >= inputs:
            return None
        anchor = classes[varying[0]]
        return varying[0] if anchor[-1] == "1" and "s" in anchor[:-1] else None

    def peeled_blocks(self, choices: tuple) -> tuple:
        """A peeled file's blocks: `choices` that do not pipeline, so that few very long rows take
        LONG_BLOCK; blocks of several rows read each row from its start
        (docs/decisions/row-peel.md)."""
        return tuple(block for block in choices if not self.pipelined(block))

    def loop_num_stages(self, aligned: bool, peeled: bool = False) -> Optional[str]:
        """tl.range's num_stages in the generated column loop of a file of the `aligned` class or
        not: a constant or a compile-time expression of the block (`pipelined_from`), 1 being a
        plain loop; None (a plain `range`) where rows are read rotated, whose files offer no
        pipelined block (peeled_blocks)."""
        if peeled:
            return None
        if not (aligned or self.pipelines_unaligned):
            return "1"
        if self.pipelined_from is None:
            return str(self.loop_stages)
        dim, least = self.pipelined_from
        return f"{self.loop_stages} if {dim} >= {least} else 1"
