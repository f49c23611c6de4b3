"""flat: a rank-0 or rank-1 task (after collapsing), one 1-D block of 4096 bytes a tile. Whole tiles
run unmasked and only the last one is masked, so the extent needs no alignment: one kernel serves
every length (docs/decisions/flat-tail.md)."""

from __future__ import annotations

from .base import Scheme, ceil_div, pow2_floor


class Flat(Scheme):
    name = "flat"
    column_index = None
    count_names = ("num_tiles",)
    whole_blocks = True
    always_loops_tiles = True  # its own loop over whole tiles, the masked last tile after it
    tile_shape = "[BLOCK]"

    def aligned_dims(self, rank, m_dim) -> list:
        return []  # no mask runs along a whole tile

    def applies(self, task_shape, strides, split, config) -> bool:
        return split is None and len(task_shape) <= 1

    def block_choices(self, rank, itemsize, aligned, config) -> tuple:
        return ((min(pow2_floor(config.max_tile_size), 4096 // itemsize),),) if rank else ((),)

    def warps(self, block) -> int:
        return max(1, min(8, block[0] // 128)) if block else 1  # 16 bytes a thread on 8 warps

    def counts(self, task_shape, m_dim, block) -> dict:
        return {"num_tiles": ceil_div(task_shape[0], block[0])}

    def size_dims(self, rank, m_dim) -> list:
        return [0] if rank else []

    def block_params(self, rank) -> list:
        return ["BLOCK"] if rank else []

    def index_names(self, rank, m_dim) -> list:
        return ["offs"] if rank else []
