"""CodeGenConfig: user limits on the kernels tritonwise generates; `setting`: the environment
variables that switch parts of the runtime (docs/cli.md lists them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def setting(name: str, choices: tuple = ("0", "1"), default: str = "1") -> str:
    """Environment variable `name`, one of `choices`; `default` where unset or empty. Any other
    value is a ValueError naming the variable, not read as its default (`off` is not `0`)."""
    value = os.environ.get(name, "")
    if value == "":
        return default
    if value not in choices:
        raise ValueError(f"{name}={value!r}: expected {' or '.join(repr(c) for c in choices)}, or unset")
    return value


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

    @classmethod
    def of(cls, config) -> "CodeGenConfig":
        """`config` as a CodeGenConfig: None gives the defaults; another object with these fields
        (FlagGems' own CodeGenConfig, a mutable dataclass some of its backends pass) is copied."""
        if config is None or isinstance(config, cls):
            return config or cls()
        names = ("max_tile_size", "max_grid_size", "max_num_warps_per_cta")
        if not all(hasattr(config, name) for name in names):
            raise TypeError(f"config must be a CodeGenConfig (or have its fields {', '.join(names)}), got {config!r}")
        flags = {
            name: getattr(config, name) for name in ("prefer_block_pointer", "prefer_1d_tile") if hasattr(config, name)
        }
        return cls(**{name: getattr(config, name) for name in names}, **flags)

    def __post_init__(self):
        for name in ("max_tile_size", "max_num_warps_per_cta"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"CodeGenConfig.{name} must be a positive int, got {value!r}")
        grid = tuple(self.max_grid_size)
        if not grid or not all(isinstance(g, int) and g >= 1 for g in grid):
            raise ValueError(f"CodeGenConfig.max_grid_size must be positive ints, got {self.max_grid_size!r}")
        object.__setattr__(self, "max_grid_size", grid)
