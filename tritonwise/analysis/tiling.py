"""Tiling scheme, block shape, warps and index width for a collapsed task. Pure Python.

Every choice depends on the layout class of the task (rank, which strides are 0 or 1, element
size, divisibility by 16, a power-of-two bucket of the innermost extent), never on exact
shapes, so a new shape of the same class reuses the generated file and the compiled kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from ..config import CodeGenConfig

INT32_LIMIT = 2**31 - 1
ALIGNMENT = 16  # elements; divisibility that lets Triton use 16-byte vector accesses


@dataclass(frozen=True)
class Tiling:
    scheme: str  # "flat" (rank <= 1), "nd" (rows x innermost), "tile2d" (transposing tile)
    m_dim: Optional[int]  # tile2d: the dim some operand walks fastest, tiled beside the innermost
    block: tuple
    num_warps: int


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


def _pow2_at_least(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def choose_tiling(task_shape: tuple, strides: Sequence[tuple], itemsize: int, config: CodeGenConfig) -> Tiling:
    """Block shapes and warps measured best on an H100 (benchmarks/sweep.py; RESULTS.md)."""
    scheme, m_dim = choose_scheme(task_shape, strides)
    cap = _pow2_floor(config.max_tile_size)
    if scheme == "flat":
        block = (min(cap, 4096 // itemsize),) if task_shape else ()  # 16 bytes a thread on 8 warps
        warps = max(1, min(8, math.prod(block) // 128))
    elif scheme == "nd":
        bn = min(max(_pow2_at_least(task_shape[-1]), 8), cap, 1024)
        block = (max(min(2048, cap) // bn, 1), bn)
        warps = max(1, min(8, math.prod(block) // 256))
    else:
        side = 64 if itemsize <= 4 and _extents_aligned(task_shape, m_dim) else 32
        bm = min(side, _pow2_at_least(task_shape[m_dim]), cap)
        bn = min(128, _pow2_at_least(task_shape[-1]), max(cap // bm, 1))
        block = (bm, bn)
        warps = 8 if bm * bn >= 4096 else 4
    return Tiling(scheme, m_dim, block, min(warps, _pow2_floor(config.max_num_warps_per_cta)))


def _extents_aligned(task_shape: tuple, m_dim: int) -> bool:
    return task_shape[-1] % ALIGNMENT == 0 and task_shape[m_dim] % ALIGNMENT == 0


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


def is_aligned(task_shape: tuple, strides: Sequence[tuple], tiling: Tiling) -> bool:
    """Whether the masked extents and every run-time stride are multiples of ALIGNMENT."""
    if not task_shape:
        return False
    extents = [task_shape[-1]] + ([task_shape[tiling.m_dim]] if tiling.m_dim is not None else [])
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
