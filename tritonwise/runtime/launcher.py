"""Launching a compiled kernel directly, without Triton's per-call binding and key lookup.

A LaunchPlan's signature already fixes what Triton checks per call, so after the first launch the
plan launches the compiled kernel itself: through `own_launcher` (launch.c packs the parameters for
cuLaunchKernel, with the index arguments packed once per plan), else `triton_entry_launcher`
(Triton's own compiled launcher, also used while launch hooks are installed). While launch.c is
still being built, a process's first launches go through `driver_launcher` (packed in Python,
cuLaunchKernel through ctypes).
docs/decisions/own-launcher.md.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Callable, NamedTuple, Optional

import torch

from . import cuda_driver, native

# Triton's kernel parameter types: launch.c's kind letter, and the struct code of the value.
_SCALARS = {
    "i1": ("b", "b"), "i8": ("b", "b"), "i16": ("h", "h"), "i32": ("i", "i"), "i64": ("l", "q"),
    "u1": ("B", "B"), "u8": ("B", "B"), "u16": ("H", "H"), "u32": ("I", "I"), "u64": ("K", "Q"),
    "fp32": ("f", "f"), "f32": ("f", "f"), "fp64": ("d", "d"),
}  # fmt: skip
_POINTER = ("p", "Q")


def _xyz(grid) -> tuple:
    """A grid of one to three dims as cuLaunchKernel's (x, y, z)."""
    return (tuple(grid) + (1, 1))[:3]


def _hooks_installed(hooks) -> bool:
    """Whether a launch hook would do something (Triton 3.6+ keeps empty HookChains there)."""
    enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
    return (enter is not None and getattr(enter, "calls", True)) or (
        leave is not None and getattr(leave, "calls", True)
    )


class CLaunch(NamedTuple):
    """How launch.c launches a kernel, by the names of launch.c's record() (hit_path.record)."""

    cu_launch: int  # cuLaunchKernel's address
    function: int
    grid: tuple  # (x, y, z)
    threads: int
    shared: int
    device_index: int
    kinds: bytes
    fixed: bytes  # the index arguments' 8-byte slots, then the scratch slots


class KernelParameters:
    """The kernel's parameters in order: operand kinds, fixed values (index arguments), then
    Triton's scratch pointers (NULL); worked out once per kernel, each plan packs its own tail."""

    def __init__(self, compiled, n_inputs: int, n_tail: int):
        self.operands, self._passed, self._slots = _layout(compiled, n_inputs, n_tail)

    def kinds(self) -> bytes:
        return "".join(kind for kind, _ in self.operands).encode()

    def fixed_slots(self, tail: tuple) -> bytes:
        """The tail's passed values and scratch pointers, an 8-byte slot each (ValueError: one does not fit)."""
        try:
            return self._slots.pack(*[tail[k] for k in self._passed])
        except (struct.error, OverflowError) as e:
            raise ValueError(f"an index argument does not fit its kernel parameter: {e}") from None


_layouts: dict = {}  # (id(compiled), n_inputs, n_tail) -> (compiled, layout): kept, so ids stay theirs


def _layout(compiled, n_inputs: int, n_tail: int) -> tuple:
    """(operands' (kind, struct code), the tail positions passed, the struct packing them and the scratch slots)."""
    key = (id(compiled), n_inputs, n_tail)
    found = _layouts.get(key)
    if found is not None and found[0] is compiled:
        return found[1]
    types = list(compiled.src.signature.values())
    n_operands = len(types) - n_tail
    if n_operands < n_inputs or "constexpr" in types[:n_operands]:
        raise ValueError("operands do not match the kernel signature")
    operands = [_c_type(t) for t in types[:n_operands]]  # (kind letter, struct code)
    fixed = [(k, _c_type(t)[1]) for k, t in enumerate(types[n_operands:]) if t != "constexpr"]
    sizes = [struct.calcsize(code) for _, code in operands + fixed]
    driver_sizes = cuda_driver.param_sizes(compiled.function)
    if driver_sizes is None:
        raise ValueError("the driver cannot list kernel parameters")
    n_scratch = len(driver_sizes) - len(sizes)
    if sizes + [8] * n_scratch != list(driver_sizes):
        raise ValueError("kernel parameters differ from the signature")
    # each fixed value padded to its 8-byte slot, then the scratch slots
    slots = struct.Struct("<" + "".join(f"{code}{8 - struct.calcsize(code)}x" for _, code in fixed) + "8x" * n_scratch)
    layout = (operands, [k for k, _ in fixed], slots)
    _layouts[key] = (compiled, layout)
    return layout


def _c_type(t: str) -> tuple:
    return _POINTER if t.startswith("*") else _SCALARS[t]  # KeyError: not passed here (fp16)


# Triton's launch metadata beyond warps and shared memory (a stored kernel keeps it too): cuLaunchKernel
# alone starts a kernel as Triton would only with num_ctas 1 and the rest unset (no cluster, cooperative
# or programmatic launch, scratch memory or tensor descriptors).
LAUNCH_FIELDS = (  # num_ctas first: _launchable reads the others as flags
    "num_ctas",
    "launch_cooperative_grid",
    "launch_pdl",
    "global_scratch_size",
    "profile_scratch_size",
    "tensordesc_meta",
)


def _launchable(compiled) -> bool:
    """launch.c launches one CTA per program and none of the other launch features."""
    meta = compiled.metadata
    return getattr(meta, "num_ctas", 1) == 1 and not any(getattr(meta, name, None) for name in LAUNCH_FIELDS[1:])


def own_launcher(compiled, grid, tail, device_index, n_inputs, hooked: Callable) -> Optional[Callable]:
    """launch.c's launcher, or None where unsupported; `hooked` launches through Triton while hooks
    are installed. `rebind(grid, tail, hooked)` gives the same kernel's launcher for another plan."""
    lib, module = cuda_driver.driver(), native.launch_module()
    if lib is None or module is None or not _launchable(compiled):
        return None
    try:
        parameters = KernelParameters(compiled, n_inputs, len(tail))
    except (AttributeError, KeyError, ValueError):
        return None
    from triton import knobs

    hooks, c_launch, raw_stream = knobs.runtime, module.launch, torch._C._cuda_getCurrentRawStream
    cu_launch_kernel = ctypes.cast(lib.cuLaunchKernel, ctypes.c_void_p).value
    kinds, function = parameters.kinds(), compiled.function
    threads, shared = 32 * compiled.metadata.num_warps, compiled.metadata.shared
    # With one visible device the current device is always the plan's: nothing to check.
    check_device = torch.cuda.device_count() > 1
    current_device = torch._C._cuda_getDevice if check_device else None

    def bind(grid, tail: tuple, hooked: Callable) -> Callable:
        fixed = parameters.fixed_slots(tail)
        g0, g1, g2 = _xyz(grid)

        def launch(inputs, outputs) -> None:
            if check_device and current_device() != device_index:
                with torch.cuda.device(device_index):
                    return launch(inputs, outputs)
            if _hooks_installed(hooks):
                return hooked(inputs, outputs)
            params = (cu_launch_kernel, function, g0, g1, g2, threads, shared, raw_stream(device_index), kinds, fixed)
            code = c_launch(*params, inputs, outputs)
            if code == cuda_driver.CUDA_ERROR_INVALID_CONTEXT:  # a thread new to CUDA
                cuda_driver.make_primary_context_current(device_index)
                code = c_launch(*params, inputs, outputs)
            if code:
                raise cuda_driver.CudaError(f"launching {compiled.name}: {cuda_driver.error_text(code)}")

        launch.rebind = bind
        # What the C hit path needs to launch the same way (runtime/hit_path.py); it checks the
        # current device itself where several are visible.
        launch.c_record = CLaunch(cu_launch_kernel, function, (g0, g1, g2), threads, shared, device_index, kinds, fixed)
        return launch

    return bind(grid, tail, hooked)


def _same(value):
    return value


# What driver_launcher packs for an operand of each launch.c kind: a data pointer, and an fp32
# rounded as C rounds a double (past its range: inf, as launch.c and Triton pass it); others as given.
_DRIVER_VALUE = {"p": lambda operand: operand.data_ptr(), "f": lambda value: ctypes.c_float(value).value}


def driver_launcher(compiled, grid, tail, device_index, n_inputs, hooked: Callable) -> Optional[Callable]:
    """`launch(inputs, outputs)` packed in Python and started by cuLaunchKernel through ctypes, or
    None where unsupported: tens of microseconds a call, but it needs nothing built, so a process's
    first launches need not wait for launch.c's build (docs/decisions/own-launcher.md)."""
    lib = cuda_driver.driver()
    if lib is None or not _launchable(compiled):
        return None
    try:
        parameters = KernelParameters(compiled, n_inputs, len(tail))
        fixed = parameters.fixed_slots(tail)
    except (AttributeError, KeyError, ValueError):
        return None
    from triton import knobs

    hooks, operands = knobs.runtime, parameters.operands
    packing = struct.Struct("<" + "".join(f"{code}{8 - struct.calcsize(code)}x" for _, code in operands))
    count = len(operands) + len(fixed) // 8
    g0, g1, g2 = _xyz(grid)
    function, threads, shared = ctypes.c_void_p(compiled.function), 32 * compiled.metadata.num_warps, compiled.metadata.shared

    def launch(inputs, outputs) -> None:
        if _hooks_installed(hooks):
            return hooked(inputs, outputs)
        values = [_DRIVER_VALUE.get(kind, _same)(v) for (kind, _), v in zip(operands, (*inputs, *outputs))]
        try:
            slots = ctypes.create_string_buffer(packing.pack(*values) + fixed)
        except struct.error as e:  # as launch.c reports an integer out of its parameter's range
            raise OverflowError(f"launching {compiled.name}: a value does not fit its kernel parameter: {e}") from None
        base = ctypes.addressof(slots)
        pointers = (ctypes.c_void_p * count)(*range(base, base + 8 * count, 8))
        stream = ctypes.c_void_p(torch._C._cuda_getCurrentRawStream(device_index))
        args = (function, g0, g1, g2, threads, 1, 1, shared, stream, pointers, None)
        code = lib.cuLaunchKernel(*args)
        if code == cuda_driver.CUDA_ERROR_INVALID_CONTEXT:  # a thread new to CUDA
            cuda_driver.make_primary_context_current(device_index)
            code = lib.cuLaunchKernel(*args)
        if code:
            raise cuda_driver.CudaError(f"launching {compiled.name}: {cuda_driver.error_text(code)}")

    return launch


def _c_entry(run) -> Optional[tuple]:
    """Triton 3.6's CudaLauncher's compiled C function (`.launch`) and what it takes before the metadata;
    used only on that version and for kernels that need no scratch memory (the Python wrapper would allocate it)."""
    import triton

    if not triton.__version__.startswith("3.6."):
        return None
    needs_scratch = getattr(run, "global_scratch_size", 1) or getattr(run, "profile_scratch_size", 1)
    entry = getattr(run, "launch", None)
    if needs_scratch or entry is None:
        return None
    return entry, (run.launch_cooperative_grid, run.launch_pdl, None, None)  # flags, the (absent) scratch buffers


def triton_entry_launcher(compiled, grid: tuple, tail: tuple, device_index: int) -> Optional[Callable]:
    """`launch(inputs, outputs)` through Triton's compiled launcher (its C entry on 3.6,
    `compiled.run` elsewhere); empty hook chains are passed as None, which skips building metadata."""
    try:
        from triton import knobs

        hooks = knobs.runtime
        run, function, metadata = compiled.run, compiled.function, compiled.packed_metadata
    except (ImportError, AttributeError):
        return None
    g0, g1, g2 = _xyz(grid)
    raw_stream = torch._C._cuda_getCurrentRawStream
    entry, head = _c_entry(run) or (run, ())

    def launch(inputs, outputs) -> None:
        stream = raw_stream(device_index)
        enter = leave = launch_metadata = None
        if _hooks_installed(hooks):
            enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
            launch_metadata = compiled.launch_metadata(grid, stream, *inputs, *outputs, *tail)
        entry(g0, g1, g2, stream, function, *head, metadata, launch_metadata, enter, leave, *inputs, *outputs, *tail)

    return launch
