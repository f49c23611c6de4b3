"""Launching a compiled kernel directly, without Triton's per-call argument binding.

`kernel[grid](...)` binds arguments, computes the specialization key and looks the compiled
kernel up on every call. A LaunchPlan already knows all of that: its signature fixes dtypes,
strides, pointer alignment and device, and its integer arguments never specialize (the
generated kernels list them in do_not_specialize). So after the first launch through Triton,
the plan calls the compiled kernel's launcher itself. Launch hooks (profilers install them)
are honoured as Triton does.

Measured on an H100 host with Triton 3.6 (benchmarks/host_overhead.py): the generic
`kernel[grid](...)` path costs ~20 us per call, `compiled.run(...)` ~8.4 us, and the C entry
underneath it ~6.9 us. Triton always installs (empty) hook chains; calling them and building
launch metadata for nothing cost another ~2 us, so empty chains are passed as None.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch


def _c_entry(run) -> Optional[tuple]:
    """Triton 3.6's CudaLauncher keeps its compiled C function as `.launch`, taking the grid,
    stream, function, cooperative/PDL flags, two scratch buffers, then the kernel metadata,
    launch metadata, hooks and the arguments. Called directly only on that version and when
    the kernel needs no scratch memory (the Python wrapper would allocate it)."""
    import triton

    if not triton.__version__.startswith("3.6."):
        return None
    needs_scratch = getattr(run, "global_scratch_size", 1) or getattr(run, "profile_scratch_size", 1)
    entry = getattr(run, "launch", None)
    if needs_scratch or entry is None:
        return None
    return entry, run.launch_cooperative_grid, run.launch_pdl


def _idle(hook) -> bool:
    """True when the hook would do nothing (Triton 3.6+ keeps an empty HookChain there)."""
    return hook is None or not getattr(hook, "calls", True)


def direct_launcher(compiled, grid: tuple, tail: tuple, device_index: int) -> Optional[Callable]:
    """A function `launch(inputs, outputs)` running `compiled` over `grid` on the payload's
    arguments, the outputs and then `tail` (index arguments and constexpr values), or None when
    this Triton cannot be driven directly."""
    try:
        from triton import knobs

        hooks = knobs.runtime
        run, function, metadata = compiled.run, compiled.function, compiled.packed_metadata
    except (ImportError, AttributeError):
        return None
    g0, g1, g2 = (tuple(grid) + (1, 1))[:3]
    raw_stream = torch._C._cuda_getCurrentRawStream
    entry = _c_entry(run)
    if entry is None:
        c_launch, head = None, ()
    else:
        c_launch, cooperative, pdl = entry
        head = (cooperative, pdl, None, None)  # flags, then the two (absent) scratch buffers

    def launch(inputs, outputs) -> None:
        stream = raw_stream(device_index)
        enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
        if _idle(enter) and _idle(leave):
            enter = leave = launch_metadata = None
        else:
            launch_metadata = compiled.launch_metadata(grid, stream, *inputs, *outputs, *tail)
        if c_launch is None:
            run(g0, g1, g2, stream, function, metadata, launch_metadata, enter, leave, *inputs, *outputs, *tail)
        else:
            c_launch(
                g0, g1, g2, stream, function, *head, metadata, launch_metadata, enter, leave, *inputs, *outputs, *tail
            )

    return launch
