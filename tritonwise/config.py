"""CodeGenConfig: user limits on the kernels tritonwise generates."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CodeGenConfig:
    """Keyword-compatible with FlagGems' CodeGenConfig.

    `max_tile_size` caps a tile's elements, `max_grid_size[0]` the programs launched (each then
    loops over tiles), `max_num_warps_per_cta` num_warps. `prefer_block_pointer` and
    `prefer_1d_tile` are accepted for compatibility. Frozen, so a shared config cannot be changed."""

    max_tile_size: int = 8192
    max_grid_size: tuple = field(default=(65535, 65535, 65535))
    max_num_warps_per_cta: int = 32
    prefer_block_pointer: bool = False
    prefer_1d_tile: bool = False

    def __post_init__(self):
        for name in ("max_tile_size", "max_num_warps_per_cta"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"CodeGenConfig.{name} must be a positive int, got {value!r}")
        grid = tuple(self.max_grid_size)
        if not grid or not all(isinstance(g, int) and g >= 1 for g in grid):
            raise ValueError(f"CodeGenConfig.max_grid_size must be positive ints, got {self.max_grid_size!r}")
        object.__setattr__(self, "max_grid_size", grid)
