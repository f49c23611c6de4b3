"""tile2d: a transposing tile, for tasks where some operand is strided along the innermost dim
but unit-stride along another (m_dim): tiles of BLOCK_M along m_dim by BLOCK_N along the
innermost dim, so both that operand and the row-major ones read whole cache lines."""

from __future__ import annotations

from .base import SMALL_TASK_TILES, Scheme, ceil_div, fit, pow2_floor, prod, unique
from .nd import decompose

TILE2D_BLOCK_N = (16, 64, 128)


class Tile2d(Scheme):
    name = "tile2d"
    count_names = ("tiles_m", "tiles_n", "num_tiles")
    always_loops_tiles = True  # one tile a program read 0.91 of the loop on a misaligned transpose

    def applies(self, task_shape, strides, split, config) -> bool:
        return split is None and self.tiled_dim(task_shape, strides) is not None

    def tiled_dim(self, task_shape, strides):
        """The last dim an operand strided along the innermost dim walks with unit stride."""
        inner = len(task_shape) - 1
        if inner < 1:
            return None
        for op in strides:
            if op[inner] in (0, 1):
                continue
            unit = [d for d in range(inner) if op[d] == 1]
            if unit:
                return unit[-1]
        return None

    def block_choices(self, rank, itemsize, aligned, config) -> tuple:
        """BLOCK_M in 16, S; BLOCK_N in 16, 64, 128; S = 64 for aligned files of elements up to 4 bytes, else 32."""
        cap = pow2_floor(config.max_tile_size)
        side = 64 if itemsize <= 4 and aligned else 32
        return unique(
            (min(bm, cap), min(bn, max(cap // min(bm, cap), 1))) for bm in (16, side) for bn in TILE2D_BLOCK_N
        )

    def pick_block(self, task_shape, m_dim, choices, itemsize) -> tuple:
        """The tile the extents fill; a task of one or two such tiles takes the smallest tile
        instead, so that it runs on as many programs as it can (docs/decisions/small-task-tiles.md)."""
        bn = fit(task_shape[-1], [b[1] for b in choices])
        with_bn = [b for b in choices if b[1] == bn]
        bm = fit(task_shape[m_dim], [b[0] for b in with_bn])
        block = next(b for b in with_bn if b[0] == bm)
        if self.num_tiles(task_shape, m_dim, block) < SMALL_TASK_TILES:
            block = min(choices, key=lambda b: (b[0] * b[1], b))
        return block

    def warps(self, block) -> int:
        return 8 if prod(block) >= 4096 else 4

    def counts(self, task_shape, m_dim, block) -> dict:
        bm, bn = block
        tiles_m, tiles_n = ceil_div(task_shape[m_dim], bm), ceil_div(task_shape[-1], bn)
        batch = prod(n for d, n in enumerate(task_shape[:-1]) if d != m_dim)
        return {"tiles_m": tiles_m, "tiles_n": tiles_n, "num_tiles": batch * tiles_m * tiles_n}

    def size_dims(self, rank, m_dim) -> list:
        return sorted(_batch_dims(rank, m_dim)[1:] + [m_dim, rank - 1])

    def index_names(self, rank, m_dim) -> list:
        names = [f"i{d}" for d in range(rank)]
        names[-1], names[m_dim] = "offs_n", "offs_m"
        return names

    def row_vector_names(self, rank, m_dim) -> set:
        return {"offs_m"}

    def decompose_lines(self, rank, m_dim, index_bits) -> list:
        batch = _batch_dims(rank, m_dim)
        return ["rest = rest // tiles_m"] + decompose(batch, "rest") if batch else []


def _batch_dims(rank: int, m_dim: int) -> list:
    return [d for d in range(rank - 1) if d != m_dim]
