"""Launching a compiled kernel directly, without Triton's per-call argument binding.

`kernel[grid](...)` binds arguments, computes the specialization key and looks the compiled
kernel up on every call (tens of microseconds). A LaunchPlan already knows all of that: its
signature fixes dtypes, strides, alignment and device, and its integer arguments never
specialize (the generated kernels list them in do_not_specialize). So after the first launch
through Triton, the plan calls the compiled kernel's launcher itself.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch


def direct_launcher(compiled, grid: tuple, tail: tuple, device_index: int) -> Optional[Callable]:
    """A function launching `compiled` over `grid` with operands followed by `tail` (index
    arguments and constexpr values), or None when this Triton cannot be driven directly.
    Launch hooks (profilers install them) are honoured as Triton itself does."""
    try:
        from triton import knobs

        hooks = knobs.runtime
        run, function, metadata = compiled.run, compiled.function, compiled.packed_metadata
    except (ImportError, AttributeError):
        return None
    g0, g1, g2 = (tuple(grid) + (1, 1))[:3]
    raw_stream = torch._C._cuda_getCurrentRawStream

    def launch(operands: list) -> None:
        stream = raw_stream(device_index)
        enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
        args = (*operands, *tail)
        launch_metadata = compiled.launch_metadata(grid, stream, *args) if enter or leave else None
        run(g0, g1, g2, stream, function, metadata, launch_metadata, enter, leave, *args)

    return launch
