"""Tiling scheme, block shape, warps and index width for a collapsed task. Pure Python.

A generated file depends on the task's layout class, never on exact shapes: the block is a constexpr
argument picked per call from the file's few `choices` (one compiled kernel each, and a second with
GRID_STRIDE for tasks of more tiles than max_grid_size allows programs), so a new shape of
the class reuses the file. Each scheme's choices, pick, warps and tile count live in its module
under schemes/; their numbers are in docs/decisions/ (block-table.md, the row schemes' notes).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Optional, Sequence

from ..config import CodeGenConfig
from ..schemes import choose_scheme

INT32_LIMIT = 2**31 - 1
ALIGNMENT = 16  # elements; divisibility that lets Triton use 16-byte vector accesses


@dataclass(frozen=True)
class Tiling:
    scheme: str  # a name in schemes/registry.py: "flat" (rank <= 1), "nd", "tile2d", ...
    m_dim: Optional[int]  # tile2d: the dim some operand walks fastest, tiled beside the innermost
    block: tuple  # the block this task launches with: one of `choices`
    num_warps: int
    choices: tuple = ()  # every block a task of this layout class may take (a compiled kernel each)
    aligned: bool = False
    peel: Optional[int] = None  # the operand blocks of one row read rotated (Scheme.peel_operand)


def stride_class(stride: int) -> str:
    """'0' (broadcast), '1' (unit) or 's' (a stride passed at run time)."""
    return "0" if stride == 0 else "1" if stride == 1 else "s"


def operand_classes(strides: Sequence[tuple]) -> tuple:
    """Each operand's stride classes over a task, as one string ("1s", "s1", "0"...)."""
    return tuple("".join(stride_class(s) for s in op) for op in strides)


def choose_tiling(
    task_shape: tuple,
    strides: Sequence[tuple],
    itemsize: int,
    config: CodeGenConfig,
    split: Optional[int],
    outputs: int,
) -> Tiling:
    """Block shapes and warps (docs/decisions/block-table.md). `split`: for a reduction along dims,
    the number of kept (row) dims before the reduced ones, a row scheme's m_dim. `outputs`: how
    many of `strides`, the last, are outputs'."""
    scheme = choose_scheme(task_shape, strides, split, config)
    m_dim = split if split is not None else scheme.tiled_dim(task_shape, strides)
    aligned_strides = scheme.aligned_operands(strides, outputs)
    aligned = bool(task_shape) and is_aligned(task_shape, aligned_strides, scheme.aligned_dims(len(task_shape), m_dim))
    choices = _block_choices(scheme, len(task_shape), itemsize, aligned, config)
    peel = scheme.peel_operand(len(task_shape), m_dim, aligned, operand_classes(strides), len(strides) - outputs)
    if peel is not None:
        choices = scheme.peeled_blocks(choices)
    block = scheme.pick_block(task_shape, m_dim, choices, itemsize)
    if peel is not None:
        block = scheme.peeled_block(task_shape, m_dim, choices, block)
    warps = scheme.num_warps(block, config, task_shape, m_dim)
    return Tiling(scheme.name, m_dim, block, warps, choices, aligned, peel)


@functools.lru_cache(maxsize=1024)
def _block_choices(scheme, rank: int, itemsize: int, aligned: bool, config: CodeGenConfig) -> tuple:
    """A scheme's blocks, worked out once per combination of these (a process that patches a
    scheme's block_choices must call `_block_choices.cache_clear()`)."""
    return scheme.block_choices(rank, itemsize, aligned, config)


def index_bits(task_shape: tuple, strides: Sequence[tuple], block: tuple) -> int:
    """32 when every operand's farthest element and the tile arithmetic fit in int32, else 64 (lanes
    past a partial tile's end are masked, so a wrapped offset there is never dereferenced)."""
    numel = math.prod(task_shape)
    reach = max((sum((n - 1) * abs(s) for n, s in zip(task_shape, op)) for op in strides), default=0)
    return 32 if max(numel + math.prod(block), reach) <= INT32_LIMIT else 64


def is_aligned(task_shape: tuple, strides: Sequence[tuple], vector_dims: Sequence[int]) -> bool:
    """Whether the extents of `vector_dims` and every run-time stride of `strides` are multiples of ALIGNMENT."""
    extents = [task_shape[d] for d in vector_dims]
    run_time = [s for op in strides for s in op if stride_class(s) == "s"]
    return all(v % ALIGNMENT == 0 for v in extents + run_time)
