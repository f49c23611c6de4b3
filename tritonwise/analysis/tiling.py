"""Tiling scheme, block shape, warps and index width for a collapsed task. Pure Python.

The generated file depends on the layout class of the task (rank, scheme, which strides are 0
or 1, element size, alignment, index width), never on exact shapes. The block is a constexpr
argument of the kernel, picked per call from the file's few `choices` (one compiled kernel
each), so a new shape of the same class reuses the file and one of at most:

    flat    1 block   (BLOCK = 4096 bytes of the widest element, rank 0: none)
    nd      4 blocks  (BLOCK_N in 16, 64, 256, 1024; BLOCK_M * BLOCK_N = 2048)
    tile2d  6 blocks  (BLOCK_M in 16, S; BLOCK_N in 16, 64, 128; S = 64 for aligned files of
                       elements up to 4 bytes, else 32)

each capped by the config's max_tile_size. Along a dim, the pick is the largest size whose
tiles are more than half used (`extent / tiled extent > 1/2`), else the smallest: a 16 x 64
slab stays 16 x 64, a transpose of large extents gets 64 x 128, as benchmarks/sweep.py measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from ..config import CodeGenConfig

INT32_LIMIT = 2**31 - 1
ALIGNMENT = 16  # elements; divisibility that lets Triton use 16-byte vector accesses
ND_BLOCK_N = (16, 64, 256, 1024)
TILE2D_BLOCK_N = (16, 64, 128)


@dataclass(frozen=True)
class Tiling:
    scheme: str  # "flat" (rank <= 1), "nd" (rows x innermost), "tile2d" (transposing tile)
    m_dim: Optional[int]  # tile2d: the dim some operand walks fastest, tiled beside the innermost
    block: tuple  # the block this task launches with: one of `choices`
    num_warps: int
    choices: tuple = ()  # every block a task of this layout class may take (one compiled kernel each)
    aligned: bool = False


def stride_class(stride: int) -> str:
    """'0' (broadcast), '1' (unit) or 's' (a stride passed at run time)."""
    return "0" if stride == 0 else "1" if stride == 1 else "s"


def choose_scheme(task_shape: tuple, strides: Sequence[tuple]) -> tuple:
    """(scheme, m_dim): tile2d when an operand is strided along the innermost dim but unit along another."""
    rank = len(task_shape)
    if rank <= 1:
        return "flat", None
    inner = rank - 1
    for op in strides:
        if op[inner] in (0, 1):
            continue
        unit = [d for d in range(inner) if op[d] == 1]
        if unit:
            return "tile2d", unit[-1]
    return "nd", None


def block_choices(scheme: str, rank: int, itemsize: int, aligned: bool, config: CodeGenConfig) -> tuple:
    """The blocks a file of this class may be launched with, as (BLOCK_M, BLOCK_N) or (BLOCK,)."""
    cap = _pow2_floor(config.max_tile_size)
    if scheme == "flat":
        return (((min(cap, 4096 // itemsize),),) if rank else ((),))
    if scheme == "nd":
        rows = min(2048, cap)
        return _unique((max(rows // min(bn, cap), 1), min(bn, cap)) for bn in ND_BLOCK_N)
    side = 64 if itemsize <= 4 and aligned else 32
    return _unique((min(bm, cap), min(bn, max(cap // min(bm, cap), 1))) for bm in (16, side) for bn in TILE2D_BLOCK_N)


def _unique(blocks) -> tuple:
    return tuple(dict.fromkeys(blocks))


def _fit(extent: int, sizes: Sequence[int]) -> int:
    """The largest of `sizes` whose tiles along `extent` are more than half used, else the smallest."""
    for size in sorted(set(sizes), reverse=True):
        if 2 * extent > -(-extent // size) * size:
            return size
    return min(sizes)


def pick_block(task_shape: tuple, m_dim: Optional[int], scheme: str, choices: tuple) -> tuple:
    """The block of `choices` this task takes: fitted along the innermost dim, then along m_dim."""
    if scheme == "flat":
        return choices[0]
    bn = _fit(task_shape[-1], [b[1] for b in choices])
    with_bn = [b for b in choices if b[1] == bn]
    if scheme == "nd":
        return with_bn[0]
    bm = _fit(task_shape[m_dim], [b[0] for b in with_bn])
    return next(b for b in with_bn if b[0] == bm)


def warps_for(scheme: str, block: tuple, config: CodeGenConfig) -> int:
    elements = math.prod(block)
    if scheme == "flat":
        warps = max(1, min(8, elements // 128))  # 16 bytes a thread on 8 warps
    elif scheme == "nd":
        warps = max(1, min(8, elements // 256))
    else:
        warps = 8 if elements >= 4096 else 4
    return min(warps, _pow2_floor(config.max_num_warps_per_cta))


def choose_tiling(task_shape: tuple, strides: Sequence[tuple], itemsize: int, config: CodeGenConfig) -> Tiling:
    """Block shapes and warps measured best on an H100 (benchmarks/sweep.py; RESULTS.md)."""
    scheme, m_dim = choose_scheme(task_shape, strides)
    aligned = is_aligned(task_shape, strides, m_dim)
    choices = block_choices(scheme, len(task_shape), itemsize, aligned, config)
    block = pick_block(task_shape, m_dim, scheme, choices)
    return Tiling(scheme, m_dim, block, warps_for(scheme, block, config), choices, aligned)


def _pow2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1)


def index_bits(task_shape: tuple, strides: Sequence[tuple], block: tuple) -> int:
    """32 when every operand's farthest element and the tile arithmetic fit in int32, else 64.

    Lanes past the end of a partial tile may compute offsets beyond that bound; they are
    masked, so a wrapped value there is never dereferenced.
    """
    numel = math.prod(task_shape)
    reach = max((sum((n - 1) * abs(s) for n, s in zip(task_shape, op)) for op in strides), default=0)
    return 32 if max(numel + math.prod(block), reach) <= INT32_LIMIT else 64


def is_aligned(task_shape: tuple, strides: Sequence[tuple], m_dim: Optional[int]) -> bool:
    """Whether the masked extents and every run-time stride are multiples of ALIGNMENT."""
    if not task_shape:
        return False
    extents = [task_shape[-1]] + ([task_shape[m_dim]] if m_dim is not None else [])
    run_time = [s for op in strides for s in op if stride_class(s) == "s"]
    return all(v % ALIGNMENT == 0 for v in extents + run_time)


def num_tiles(task_shape: tuple, tiling: Tiling) -> int:
    if not task_shape:
        return 1
    if tiling.scheme == "flat":
        return -(-task_shape[0] // tiling.block[0])
    bm, bn = tiling.block
    tiles_n = -(-task_shape[-1] // bn)
    if tiling.scheme == "nd":
        return -(-math.prod(task_shape[:-1]) // bm) * tiles_n
    batch = math.prod(n for d, n in enumerate(task_shape[:-1]) if d != tiling.m_dim)
    return batch * -(-task_shape[tiling.m_dim] // bm) * tiles_n
