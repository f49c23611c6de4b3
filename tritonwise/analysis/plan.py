"""analyze(): from operand shapes and strides to a TaskPlan. Pure Python, no tensors."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Optional, Sequence

from ..config import CodeGenConfig
from ..schemes import get_scheme
from ..schemes.base import ceil_div
from ..schemes.column_looped import WIDE_BLOCK_M, kept_per_program
from .broadcast import broadcast_shapes, broadcast_strides
from .layout import collapse, dense_strides, dim_order
from .tiling import ALIGNMENT, Tiling, choose_tiling, index_bits, operand_classes


@dataclass(frozen=True)
class TaskPlan:
    """How one call's operands map onto a kernel.

    `strides`: per tensor input then output, its strides over `task_shape` (the collapsed task,
    outer to inner); `output_strides`: the outputs' strides over the broadcast `shape`. A split
    reduction (`split` not None) writes a dense (parts, *rows) buffer of partials (see SplitRows)."""

    shape: tuple
    output_strides: tuple
    task_shape: tuple
    strides: tuple
    tiling: Tiling
    index_bits: int
    aligned: bool
    num_tiles: int
    grid: tuple
    split: Optional["SplitRows"] = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def rank(self) -> int:
        return len(self.task_shape)

    @property
    def grid_strides(self) -> bool:
        return grid_strides(self.grid, self.num_tiles)

    @property
    def row_constexprs(self) -> dict:
        """Name -> value of the constexprs the task's row length decides (Scheme.row_constexprs)."""
        tiling = self.tiling
        scheme = get_scheme(tiling.scheme)
        values = scheme.row_constexprs(self.task_shape, tiling.m_dim, tiling.block, tiling.peel is not None)
        return dict(zip(scheme.row_constexpr_names(self.rank, tiling.m_dim), values))

    @property
    def constexprs(self) -> tuple:
        """The kernel's constexpr arguments for this task: its block, and what Scheme.constexpr_values adds."""
        row_values = tuple(self.row_constexprs.values())
        return get_scheme(self.tiling.scheme).constexpr_values(self.tiling.block, self.grid_strides, row_values)

    @cached_property
    def stride_classes(self) -> tuple:
        return operand_classes(self.strides)

    @cached_property
    def layout_class(self) -> tuple:
        """Every field of the task a generated file depends on; tasks of equal classes share a file."""
        tiling = self.tiling
        classes = self.stride_classes
        split = None if self.split is None else self.split.longer_last  # no split, equal parts, the last longer
        return (self.rank, tiling.scheme, tiling.m_dim, tiling.choices, self.index_bits, self.aligned, classes, split, tiling.peel)


@dataclass(frozen=True)
class SplitRows:
    """A reduction along dims with too few rows to fill the GPU, split in `parts` slices of its
    outer reduced dim into a dense (parts, *rows) buffer of partials, then combined. Where no
    power of two divides that dim, the last slice is longer: its rows (the task's from
    `tail_from` on) read `tail_cols` columns past the others' (row_looped.py.j2, `split_tail`)."""

    parts: int
    rows: tuple
    out_row_strides: tuple
    partial_strides: tuple  # of the (parts, *rows) buffer: dense, parts innermost
    tail_cols: int = 0

    @property
    def tail_from(self) -> int:
        """The task's first row of the last part (parts are the outer kept dim)."""
        return (self.parts - 1) * math.prod(self.rows)

    @property
    def longer_last(self) -> bool:
        """Whether the last slice reads past the others' (a file of its own: SPLIT_TAIL_PARAMS)."""
        return self.tail_cols > 0


# A split aims at this many (row, part) pairs, each part reading at least MIN_PART_EXTENT: a row
# layout at SPLIT_TARGET_ROWS (about one wave of (1, 2048) blocks on 16 warps on an H100), a column
# layout at SPLIT_TARGET_TILES (tile, part) pairs (docs/decisions/split-rule.md).
SPLIT_TARGET_ROWS = 512
SPLIT_TARGET_TILES = 2048
# A row layout splits into at least this many parts where MIN_PART_EXTENT allows: 48 and 64 rows
# of bf16 read 1-3% slower back to back in 8 parts than in 16 (docs/decisions/split-rule.md).
SPLIT_LEAST_ROW_PARTS = 16
MIN_PART_EXTENT = 1024
# Splitting buys programs at the cost of a second kernel, which only few or very long rows repay:
# docs/decisions/split-rule.md.
SPLIT_MAX_ROWS = 64  # more rows than this are not split
# Where one run of 16 or more kept elements lies along unit stride (the columns of a row-major
# matrix), programs take tiles of 16 of them: from SPLIT_FEW_ROWS up to SPLIT_MAX_TILES such tiles,
# fewer programs than an H100 has SMs, the reduced extent splits once it reaches
# COLUMN_SPLIT_EXTENT and COLUMN_SPLIT_EXTENT_PER_TILE a tile. Batches of such runs keep the row
# bounds: one measured split of a batch read slower (docs/decisions/split-rule.md).
SPLIT_MAX_TILES = 128
COLUMN_SPLIT_EXTENT = 2**14
COLUMN_SPLIT_EXTENT_PER_TILE = 256
# A slim matrix (its row at most SLIM_ROW_BYTES) leaves its programs too few bytes to keep in
# flight sooner: its columns split from SLIM_SPLIT_EXTENT, into exactly SLIM_SPLIT_PARTS parts
# (of 512 rows and more), until the bounds above take over (docs/decisions/split-rule.md).
SLIM_ROW_BYTES = 2048
SLIM_SPLIT_EXTENT = 2**13
SLIM_SPLIT_PARTS = 16
# Fewer rows than SPLIT_FEW_ROWS split from a reduced extent of SPLIT_MIN_COLS_FEW, more from
# SPLIT_MIN_COLS, or from SPLIT_MIN_COLS_NARROW where one element of every row comes to at most
# SPLIT_NARROW_COLUMN_BYTES (32 rows of 4-byte elements, 64 of 2-byte ones): so few programs
# read too few bytes at a time to fill the GPU. Where the kept dims run along unit stride, fewer
# tiles than SPLIT_FEW_ROWS split once a tile's program would read more than COLUMN_UNSPLIT_ELEMENTS.
SPLIT_FEW_ROWS = 32
SPLIT_MIN_COLS_FEW = 2**16
SPLIT_MIN_COLS = 2**19
SPLIT_MIN_COLS_NARROW = 2**17
SPLIT_NARROW_COLUMN_BYTES = 128
COLUMN_UNSPLIT_ELEMENTS = 2**14
# Programs of narrow tiles (runs of 8 or fewer kept elements), which read slower than wide ones,
# count as few up to this many, however many tiles of 16 they make.
SPLIT_FEW_NARROW = 64
# Columns whose run of kept elements is 16 or longer split only into MIN_COLUMN_PARTS or more:
# splits into fewer parts (short extents, or extents with few factors of two) cost their combine
# more than their programs gained where measured (docs/decisions/split-rule.md).
MIN_COLUMN_PARTS = 8
# Where the outer reduced dim does not divide into the parts, a row layout's last part reads what
# is left too, at most 1/LAST_PART_SLACK more than the others; column layouts split into equal
# parts only.
LAST_PART_SLACK = 8
# A split's partials (at most SPLIT_TARGET_TILES per row, parts innermost) are combined by a
# reduction of rows, which does not split in turn while both targets are below every split
# threshold (the least, SPLIT_MIN_COLS_FEW).


def splittable(reductions: tuple) -> bool:
    """Whether a reduction along dims may split: its partials are combined in their own dtype,
    so float accumulators only (a narrow integer reduces in float in the kernel, which a combine
    in the integer's dtype would not repeat)."""
    return all(r.acc.is_floating_point and r.result.is_floating_point for r in reductions)


def split_parts(rows: tuple, cols: tuple, kept_unit_stride: bool, itemsize: int) -> int:
    """How many slices to cut the outer reduced dim into (1: no split), a power of two: equal
    ones, or for a row layout equal but the last, which reads what is left (_cuts). `itemsize`:
    the widest element's bytes (planner._itemsize), which with the rows
    gives the bytes of one column. `kept_unit_stride`: the kept dims run along unit stride
    (column_looped), where a program takes a tile of 16 adjacent kept elements, or a narrow one for a run of 8 or fewer
    (kept_per_program): the rule counts tiles of 16 as its rows, or the programs of narrow tiles
    where they are at most SPLIT_FEW_NARROW, and few of them split once one program would read
    more than COLUMN_UNSPLIT_ELEMENTS; from SPLIT_FEW_ROWS to SPLIT_MAX_TILES tiles of a single run
    of 16 or longer (a matrix's columns), once the reduced extent reaches COLUMN_SPLIT_EXTENT and
    COLUMN_SPLIT_EXTENT_PER_TILE a tile, or for a slim matrix (rows of at most SLIM_ROW_BYTES)
    from SLIM_SPLIT_EXTENT into SLIM_SPLIT_PARTS equal parts; into at least MIN_COLUMN_PARTS parts
    where the run is 16 or longer (docs/decisions/split-rule.md)."""
    kept, num_cols = math.prod(rows), math.prod(cols)
    num_rows, few_narrow = kept, False
    wide_run = kept_unit_stride and rows[-1] >= WIDE_BLOCK_M
    matrix_columns = wide_run and len(rows) == 1  # one run of kept elements, not a batch of them
    if kept_unit_stride:
        width = kept_per_program(rows[-1])
        programs = ceil_div(kept, width)
        few_narrow = width < WIDE_BLOCK_M and programs <= SPLIT_FEW_NARROW
        num_rows = programs if few_narrow else ceil_div(kept, WIDE_BLOCK_M)
    if num_rows > (SPLIT_MAX_TILES if matrix_columns else SPLIT_MAX_ROWS) or not num_rows:
        return 1
    if matrix_columns and num_rows >= SPLIT_FEW_ROWS:
        short = num_cols < max(COLUMN_SPLIT_EXTENT, COLUMN_SPLIT_EXTENT_PER_TILE * num_rows)
        if short and kept * itemsize <= SLIM_ROW_BYTES and num_cols >= SLIM_SPLIT_EXTENT:
            return SLIM_SPLIT_PARTS if _cuts(cols[0], SLIM_SPLIT_PARTS, kept_unit_stride) else 1
    elif num_rows >= SPLIT_FEW_ROWS and not few_narrow:
        narrow = not kept_unit_stride and num_rows * itemsize <= SPLIT_NARROW_COLUMN_BYTES
        short = num_cols < (SPLIT_MIN_COLS_NARROW if narrow else SPLIT_MIN_COLS)
    elif kept_unit_stride:  # what one tile's program reads
        short = num_cols * min(width, kept) <= COLUMN_UNSPLIT_ELEMENTS
    else:
        short = num_cols < SPLIT_MIN_COLS_FEW
    if short:
        return 1  # rows short enough that the unsplit loop reads them as fast
    target, least = (SPLIT_TARGET_TILES, 1) if kept_unit_stride else (SPLIT_TARGET_ROWS, SPLIT_LEAST_ROW_PARTS)
    parts = 1
    while (
        (parts * 2 * num_rows <= target or parts * 2 <= least)
        and num_cols // (parts * 2) >= MIN_PART_EXTENT
        and _cuts(cols[0], parts * 2, kept_unit_stride)
    ):
        parts *= 2
    if wide_run and parts < MIN_COLUMN_PARTS:
        return 1
    return parts


def _cuts(extent: int, parts: int, kept_unit_stride: bool) -> bool:
    """Whether `parts` slices may cut a reduced dim of `extent`: equal ones, or for a row layout
    equal ones but the last, longer by what is left, at most 1/LAST_PART_SLACK of a slice."""
    left = extent % parts
    return not left or (not kept_unit_stride and left * LAST_PART_SLACK <= extent // parts)


def analyze(
    inputs: Sequence[tuple],
    outputs: Sequence[Optional[tuple]],
    itemsize: int,
    config: CodeGenConfig,
    collapse_dims: bool = True,
) -> TaskPlan:
    """Plan a task over tensor `inputs` and `outputs` ((shape, strides) each; an output None when
    allocated); a RuntimeError naming the shapes when they do not broadcast. `collapse_dims=False`
    (instantiate) keeps dims' order and number."""
    if collapse_dims:
        contiguous = _contiguous_task(inputs, outputs)
        if contiguous is not None:
            return tile(*contiguous, itemsize, config)
    given = [o for o in outputs if o is not None]
    shape = broadcast_shapes([s for s, _ in inputs] + [s for s, _ in given])
    in_strides = [broadcast_strides(s, st, shape) for s, st in inputs]
    given_strides = [broadcast_strides(s, st, shape) for s, st in given]
    order = dim_order(shape, given_strides + in_strides) if collapse_dims else list(range(len(shape) - 1, -1, -1))
    allocated = dense_strides(shape, order)
    out_strides = tuple(tuple(o[1]) if o is not None else allocated for o in outputs)
    operands = in_strides + list(out_strides)
    task_shape, strides = collapse(shape, operands, order) if collapse_dims else (shape, tuple(operands))
    return tile(shape, out_strides, task_shape, strides, itemsize, config)


def _contiguous_task(inputs: Sequence[tuple], outputs: Sequence[Optional[tuple]]) -> Optional[tuple]:
    """The common case without sorting or merging (inputs of one shape, C-contiguous, outputs
    allocated): one flat dim, as the general path would give; None for any other call."""
    if not inputs or any(o is not None for o in outputs):
        return None
    shape = inputs[0][0]
    strides, numel = dense_strides(shape, reversed(range(len(shape)))), math.prod(shape)  # C-contiguous
    if numel < 2 or any(s != shape or st != strides for s, st in inputs):
        return None
    unit = ((1,),) * (len(inputs) + len(outputs))
    return tuple(shape), (strides,) * len(outputs), (numel,), unit


def launch_grid(num_tiles, config: CodeGenConfig) -> tuple:
    """The programs a task of `num_tiles` tiles launches: one a tile, at most max_grid_size[0]."""
    return (min(num_tiles, config.max_grid_size[0]),)


def grid_strides(grid: tuple, num_tiles) -> bool:
    """Whether `grid` was capped below the tile count, so that each program strides over several."""
    return grid[0] < num_tiles


def tile(shape, out_strides, task_shape, strides, itemsize, config, split=None, work=None) -> TaskPlan:
    """The TaskPlan of a collapsed task; no tiles when `work` (default: the broadcast shape) is empty."""
    tiling = choose_tiling(task_shape, strides, itemsize, config, split=split, outputs=len(out_strides))
    empty = not math.prod(shape if work is None else work)
    tiles = 0 if empty else get_scheme(tiling.scheme).num_tiles(task_shape, tiling.m_dim, tiling.block)
    return TaskPlan(
        shape=shape,
        output_strides=out_strides,
        task_shape=task_shape,
        strides=strides,
        tiling=tiling,
        index_bits=index_bits(task_shape, strides, tiling.block),
        aligned=tiling.aligned,
        num_tiles=tiles,
        grid=launch_grid(tiles, config),
    )


def analyze_rows(
    inputs: Sequence[tuple],
    outputs: Sequence[Optional[tuple]],
    dims: tuple,
    keepdim: bool,
    itemsize: int,
    config: CodeGenConfig,
    splittable: bool = False,
) -> TaskPlan:
    """Plan a reduction along `dims` of the broadcast shape: the task is the kept dims (rows) then
    the reduced dims (columns), each group collapsed among itself; Tiling.m_dim is the number of
    kept task dims. An output is (shape, strides) of the reduced result, or None when allocated."""
    shape = broadcast_shapes([s for s, _ in inputs])
    in_strides = [broadcast_strides(s, st, shape) for s, st in inputs]
    given = [_over_task(o[1], shape, dims, keepdim) for o in outputs if o is not None]
    order = dim_order(shape, given + in_strides)
    kept_order, reduced_order = [d for d in order if d not in dims], [d for d in order if d in dims]
    # a new result is dense, its kept dims in the task's order
    full = dense_strides(tuple(1 if d in dims else n for d, n in enumerate(shape)), kept_order + list(dims))
    allocated = full if keepdim else tuple(s for d, s in enumerate(full) if d not in dims)
    out_strides = tuple(tuple(o[1]) if o is not None else allocated for o in outputs)
    operands = in_strides + [_over_task(st, shape, dims, keepdim) for st in out_strides]
    rows, row_strides = _collapsed_group(shape, operands, kept_order, fill=ALIGNMENT)
    cols, col_strides = _collapsed_group(shape, operands, reduced_order, fill=0)
    if 0 in cols:  # nothing to read: one empty column dim (no index arithmetic divides by 0)
        cols, col_strides = (0,), tuple((0,) for _ in operands)
    task_shape = rows + cols
    strides = tuple(r + c for r, c in zip(row_strides, col_strides))
    parts = 1
    if splittable:
        columns = get_scheme("column_looped").applies(task_shape, strides, len(rows), config)
        parts = split_parts(rows, cols, columns, itemsize)
    while parts > 1:  # a longer last part only where row_looped reads the parts, else fewer parts
        cut = _split_task(shape, out_strides, rows, cols, row_strides, col_strides, len(in_strides), parts, itemsize, config)
        if not cut.split.longer_last:
            return cut
        if cut.tiling.scheme == "row_looped":  # its last part reaches past the split task: the whole extent's reach
            return replace(cut, index_bits=max(cut.index_bits, index_bits(task_shape, strides, cut.tiling.block)))
        parts //= 2
    return tile(shape, out_strides, task_shape, strides, itemsize, config, split=len(rows), work=rows)


def _split_task(shape, out_strides, rows, cols, row_strides, col_strides, n_inputs, parts, itemsize, config):
    """The task (parts, *rows, cols[0] // parts, *cols[1:]): the outer reduced dim cut in `parts`
    slices that become the outer kept dim, the last reading what is left past them too (only
    row_looped's template reads it); outputs replaced by the dense partial buffer, whose parts
    are its innermost dim, so that their combine reduces contiguous rows."""
    extent = cols[0] // parts
    task_shape = (parts, *rows, extent, *cols[1:])
    strides = [(c[0] * extent, *r, *c) for r, c in zip(row_strides[:n_inputs], col_strides[:n_inputs])]
    buffer = dense_strides((parts, *rows), [0, *range(len(rows), 0, -1)])
    strides += [(*buffer, *(0,) * len(cols))] * (len(row_strides) - n_inputs)
    tail_cols = (cols[0] - extent * parts) * math.prod(cols[1:])
    split = SplitRows(parts, rows, tuple(row_strides[n_inputs:]), buffer, tail_cols)
    plan = tile(shape, out_strides, task_shape, tuple(strides), itemsize, config, split=1 + len(rows), work=rows)
    return replace(plan, split=split)


def _over_task(strides: tuple, shape: tuple, dims: tuple, keepdim: bool) -> tuple:
    """A reduced result's strides over the broadcast shape: 0 along the reduced dims."""
    if keepdim:
        return tuple(0 if d in dims else s for d, s in enumerate(strides))
    kept = iter(strides)
    return tuple(0 if d in dims else next(kept) for d in range(len(shape)))


def _collapsed_group(shape: tuple, operands: Sequence[tuple], inner_to_outer: list, fill: int) -> tuple:
    """One group of dims collapsed; a group of one element (or none) becomes one dim of extent 1
    with stride `fill`. For the rows, ALIGNMENT: every operand's row part is a vector the row mask
    guards, and rows past the first, which read nothing, start 16-byte aligned, so the columns
    still load 16 bytes at a time (a stride of 1 made row r start r elements in)."""
    sizes, strides = collapse(shape, operands, inner_to_outer)
    if math.prod(sizes) == 1:
        return (1,), tuple((fill,) for _ in operands)
    return sizes, strides
