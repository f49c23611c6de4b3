"""Scheme: how one tiling scheme tiles a collapsed task, as plain integer arithmetic.

A scheme says whether it applies, its blocks, a task's block, warps and tile count, and for codegen
the index parameters, index names and template; launch values too (`index_values`), so a plan miss
never re-runs codegen. Adding one: a module here, a template, a line in registry.py.
"""

from __future__ import annotations

import functools
from math import prod  # the schemes take it from here
from typing import Optional, Sequence

from ..config import CodeGenConfig

# A task of fewer tiles than this is small enough that shorter tiles on more programs finish
# sooner (the tile2d and nd schemes take their shortest BLOCK_M for it).
SMALL_TASK_TILES = 3


class Scheme:
    name: str = ""
    column_index: Optional[str] = "offs_n"  # the index along the innermost dim; None: 1-D tiles
    aligned_counts: tuple = ()  # count parameters that are multiples of 16 in the aligned class
    load_eviction: Optional[str] = None  # the loads' eviction_policy ("evict_first": read once, streamed)
    count_names: tuple = ()  # the tile-count parameters, in kernel order (`counts` gives their values)
    loops_columns: bool = False  # row schemes: a column loop walks the reduced extent (column_lines inside it)
    whole_blocks: bool = False  # its template runs blocks wholly in range through an unmasked body (whole_block_body)
    tile_shape: Optional[str] = None  # a tile's shape as kernel text, where a full reduction folds whole tiles
    clamps_rows: bool = False  # looped row schemes: rows past the end read the last row instead of masking
    # compiles its grid-stride loop over tiles even where the grid covers every tile; the others
    # take GRID_STRIDE and compile no loop there (docs/decisions/one-tile-a-program.md)
    always_loops_tiles: bool = False

    def aligned_dims(self, rank: int, m_dim: Optional[int]) -> list:
        """Task dims whose extents must be multiples of 16 for the aligned class: those the vector
        accesses and their masks run along."""
        return [rank - 1] + ([m_dim] if m_dim is not None else [])

    def aligned_operands(self, operands: Sequence, outputs: int) -> Sequence:
        """Of `operands` (one entry each, inputs then the last `outputs` outputs), those whose
        run-time strides must be multiples of 16 for the aligned class, and are specialized there."""
        return operands

    @property
    def template(self) -> str:
        """Its kernel loop in tritonwise/templates/: `<name>.py.j2` unless the scheme names another."""
        return f"{self.name}.py.j2"

    # -- analysis -------------------------------------------------------------------------
    def applies(self, task_shape: tuple, strides: Sequence[tuple], split: Optional[int], config: CodeGenConfig) -> bool:
        """Whether the scheme tiles this task. `split`, the number of kept dims, is given for a
        reduction along dims, which only the row schemes take (each tile row reduced to one value)."""
        raise NotImplementedError

    def tiled_dim(self, task_shape: tuple, strides: Sequence[tuple]) -> Optional[int]:
        """The dim tiled beside the innermost one (tile2d's m_dim); None for most schemes."""
        return None

    def block_choices(self, rank: int, itemsize: int, aligned: bool, config: CodeGenConfig) -> tuple:
        raise NotImplementedError

    def pick_block(self, task_shape: tuple, m_dim: Optional[int], choices: tuple, itemsize: int) -> tuple:
        """The block this task launches with, one of `choices`."""
        return choices[0]

    def warps(self, block: tuple) -> int:
        return max(1, min(8, prod(block) // 256))  # 8 elements a thread, at most 8 warps

    def task_warps(self, block: tuple, task_shape: tuple, m_dim: Optional[int]) -> int:
        """A block's warps for a task: `warps`, unless a scheme decides by the task too."""
        return self.warps(block)

    def num_warps(self, block: tuple, config: CodeGenConfig, task_shape: tuple, m_dim: Optional[int]) -> int:
        return min(self.task_warps(block, task_shape, m_dim), pow2_floor(config.max_num_warps_per_cta))

    def peel_operand(self, rank: int, m_dim: Optional[int], aligned: bool, classes: Sequence[str], inputs: int) -> Optional[int]:
        """The one varying input whose rows a looped row scheme's one-row blocks read from the
        row's first 16-byte boundary (row_looped.py); None for the others."""
        return None

    def loop_num_stages(self, aligned: bool, peeled: bool = False) -> Optional[str]:
        """tl.range's num_stages in a looped scheme's template (Python text) for a file of the
        `aligned` class or not, reading rows rotated (`peeled`) or not; None: a plain `range`, or
        no loop."""
        return None

    def counts(self, task_shape: tuple, m_dim: Optional[int], block: tuple) -> dict:
        """Tile-count parameter name -> value (`count_names`, `num_tiles` among them)."""
        raise NotImplementedError

    def num_tiles(self, task_shape: tuple, m_dim: Optional[int], block: tuple) -> int:
        return self.counts(task_shape, m_dim, block)["num_tiles"] if task_shape else 1

    # -- codegen --------------------------------------------------------------------------
    def size_dims(self, rank: int, m_dim: Optional[int]) -> list:
        """Task dims whose extents are kernel parameters (`size{d}`)."""
        raise NotImplementedError

    def block_params(self, rank: int) -> list:
        """The constexpr parameters a block's extents are passed in."""
        return ["BLOCK_M", "BLOCK_N"]

    def constexpr_params(self, rank: int, m_dim: Optional[int]) -> list:
        """The kernel's constexpr parameters: the block's, those a task's rows decide
        (row_constexpr_names), then GRID_STRIDE unless the scheme always loops over tiles."""
        rows = list(self.row_constexpr_names(rank, m_dim))
        return self.block_params(rank) + rows + ([] if self.always_loops_tiles else ["GRID_STRIDE"])

    def constexpr_values(self, block: tuple, grid_strides: bool, row_values: tuple = ()) -> tuple:
        """A launch's constexpr arguments, in `constexpr_params` order: the block, `row_values`
        (row_constexprs), then GRID_STRIDE, whether each program strides over several tiles
        (analysis.plan.grid_strides). Without it a program runs one tile and the kernel compiles
        no loop (templates/tile_loop.py.j2)."""
        return (*block, *row_values) if self.always_loops_tiles else (*block, *row_values, grid_strides)

    def row_constexpr_names(self, rank: int, m_dim: Optional[int]) -> tuple:
        """Looped row schemes: the constexpr parameters a task's rows decide (their length, the
        innermost reduced extent: row_constexprs) in a file of this rank and m_dim; () for the others."""
        return ()

    def row_constexprs(self, task_shape: tuple, m_dim: Optional[int], block: tuple, peeled: bool) -> tuple:
        """The values of row_constexpr_names for a task (`peeled`: its file reads one-row blocks
        rotated); () for schemes without them."""
        return ()

    def index_names(self, rank: int, m_dim: Optional[int]) -> list:
        """The name standing for the index along each task dim inside the kernel body."""
        raise NotImplementedError

    def row_vector_names(self, rank: int, m_dim: Optional[int]) -> set:
        """Index names that are vectors along the tile's first axis (others: per-program scalars)."""
        return set()

    def column_names(self, rank: int, m_dim: Optional[int]) -> set:
        """Index names that are vectors along the tile's second axis (the column part of an offset)."""
        return {self.column_index}

    def decompose_lines(self, rank: int, m_dim: Optional[int], index_bits: int) -> list:
        """Lines splitting a tile's flat indices into per-dim ones (`index_bits`: 32 or 64)."""
        return []

    def index_params(self, rank: int, m_dim: Optional[int], stride_classes: Sequence[tuple]) -> list:
        """Integer parameters after the operands: sizes, run-time strides, tile counts.
        `stride_classes` holds (operand name, classes) per strided operand, in kernel order."""
        sizes = [f"size{d}" for d in self.size_dims(rank, m_dim)]
        return sizes + runtime_stride_params(stride_classes) + (list(self.count_names) if rank else [])

    def index_values(self, task_shape: tuple, m_dim, block, stride_classes: Sequence[tuple], strides) -> tuple:
        """Values of index_params for one task, in order (`strides`: per operand, as classed)."""
        values = [task_shape[d] for d in self.size_dims(len(task_shape), m_dim)]
        for (name, classes), op in zip(stride_classes, strides):
            values += [op[d] for d in _runtime_dims(classes)]
        if task_shape:
            counts = self.counts(task_shape, m_dim, block)
            values += [counts[c] for c in self.count_names]
        return tuple(values)


def runtime_stride_params(stride_classes: Sequence[tuple]) -> list:
    """`{operand}_stride{d}` for each stride of class 's' (a value passed at run time)."""
    return [f"{name}_stride{d}" for name, classes in stride_classes for d in _runtime_dims(classes)]


@functools.lru_cache(maxsize=1024)
def _runtime_dims(classes: str) -> tuple:
    """Dims with run-time strides, in the order their parameters are listed (by name, as text)."""
    return tuple(sorted((d for d, c in enumerate(classes) if c == "s"), key=str))


def pow2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def blocks_of_area(area: int, sides, cap: int) -> tuple:
    """(area // side, side) for each side, both clamped to the tile cap `cap` (a power of two):
    blocks of one area (nd, the row schemes), given their BLOCK_N choices."""
    area = min(area, cap)
    return unique((max(area // min(side, cap), 1), min(side, cap)) for side in sides)


def unique(blocks) -> tuple:
    return tuple(dict.fromkeys(blocks))


def fit(extent: int, sizes: Sequence[int]) -> int:
    """The largest of `sizes` whose tiles along `extent` are more than half used, else the smallest."""
    for size in sorted(set(sizes), reverse=True):
        if 2 * extent > ceil_div(extent, size) * size:
            return size
    return min(sizes)
