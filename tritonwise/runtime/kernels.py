"""The compiled kernel a launch plan runs: from the store when it holds it, else compiled once.

A kernel's identity (kernel_store.KernelIdentity) is computed without Triton's cache key (which
hashes libtriton and its frontend sources): the specialization Triton's JIT would choose for the
call's values (tests/package/test_kernel_store.py checks it against Triton's binder) and the
backend's options. A stored entry is loaded with the CUDA driver; otherwise `triton.compile` builds
the kernel and it is stored for the next process.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from types import SimpleNamespace
from typing import Callable, Optional, Sequence

import torch

from ..config import setting
from . import cuda_driver, freeze, kernel_store, native
from .arguments import describe_values
from .kernel_store import KernelIdentity, StoredKernel
from .launcher import LAUNCH_FIELDS, driver_launcher, own_launcher, triton_entry_launcher

logger = logging.getLogger("tritonwise")
_loaded_lock = threading.Lock()
_loaded: dict = {}  # (identity key, device index) -> LoadedKernel
# (kernel, specialization, options, device index) -> LoadedKernel: a new shape of a known layout
# class finds its kernel here without hashing an identity (docs/decisions/kernel-memo-and-store.md)
_specialized: dict = {}


def parse_target(text: str) -> tuple:
    """A (backend, arch, warp_size) target from "sm_90", "sm90", "90", "sm_100a" or "gfx942"."""
    name = text.strip().lower()
    if name.startswith("gfx"):
        return ("hip", name, 64)
    digits = name.removeprefix("sm").lstrip("_").rstrip("af")
    if not digits.isdigit():
        raise ValueError(f"unknown GPU architecture {text!r} (expected e.g. sm_90, sm_100 or gfx942)")
    return ("cuda", int(digits), 32)


@functools.lru_cache(maxsize=None)
def device_target(device_index: int) -> tuple:
    """The target of a CUDA device, as Triton's driver names it."""
    major, minor = torch.cuda.get_device_capability(device_index)
    return ("cuda", major * 10 + minor, 32)


def specialize(kernel, values: Sequence) -> tuple:
    """(signature, divisible, constexprs) Triton's JIT gives `kernel` called with `values`: (name,
    type) per parameter, indices divisible by 16, (index, value) of compile-time values."""
    signature, divisible, constexprs = [], [], []
    for index, (param, value) in enumerate(zip(kernel.params, values)):
        kind, is_divisible = _parameter(param, value)
        if kind == "constexpr":
            constexprs.append((index, value))
        elif is_divisible:
            divisible.append(index)
        signature.append((param.name, kind))
    return tuple(signature), tuple(divisible), tuple(constexprs)


def _parameter(param, value) -> tuple:
    """(type, divisible by 16) of one parameter for one value."""
    if param.is_constexpr:
        return "constexpr", False
    annotation = param.annotation_type
    if not annotation:
        return _by_value(param, value, not param.do_not_specialize)
    if not _value_specialized(param):
        return annotation, False
    return annotation, _by_value(param, value, True)[1]


def _by_value(param, value, specialized: bool) -> tuple:
    if hasattr(value, "data_ptr"):
        from triton._utils import canonicalize_ptr_dtype

        aligned = specialized and not getattr(param, "do_not_specialize_on_alignment", False)
        return canonicalize_ptr_dtype(value.dtype, param.is_const), aligned and value.data_ptr() % 16 == 0
    if isinstance(value, bool):
        return "u1", False
    if isinstance(value, int):
        if specialized and value == 1:
            return "constexpr", False
        kind = "i32" if -(2**31) <= value < 2**31 else "i64" if -(2**63) <= value < 2**63 else "u64"
        return kind, specialized and value % 16 == 0
    if isinstance(value, float):
        return "fp32", False
    raise TypeError(f"{param.name}: cannot pass a {type(value).__name__} to a kernel")


def jit_options(kernel, num_warps: int) -> dict:
    """The options Triton's JIT passes to the backend for a launch with `num_warps`."""
    from triton import knobs

    options = {"num_warps": num_warps, "debug": bool(getattr(kernel, "debug", None) or knobs.runtime.debug)}
    for name in ("instrumentation_mode", "fpsan_homomorphic_casts"):  # knobs of some Triton versions
        if hasattr(knobs.compilation, name):
            options[name] = getattr(knobs.compilation, name)
    return options


@functools.lru_cache(maxsize=64)
def _backend(target: tuple):
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    return make_backend(GPUTarget(*target))


def parsed_options(target: tuple, options: dict) -> tuple:
    """The backend's options as sorted (name, value) pairs, library paths by file name only (portable binaries)."""
    parsed = _backend(target).parse_options(dict(options)).__dict__
    pairs = []
    for name, value in sorted(parsed.items()):
        if name == "extern_libs" and value:
            value = tuple((lib, os.path.basename(path)) for lib, path in value)
        pairs.append((name, value))
    return tuple(pairs)


def compile_env() -> tuple:
    """Environment variables that change what Triton compiles (its cache's invalidating ones, tool paths)."""
    from triton._C.libtriton import get_cache_invalidating_env_vars

    env = dict(get_cache_invalidating_env_vars())
    env.update((k, v) for k, v in os.environ.items() if k.startswith("TRITON_") and k.endswith("_PATH"))
    return tuple(sorted(env.items()))


def identity(file_name: str, kernel, values: Sequence, num_warps: int, target: tuple) -> KernelIdentity:
    """Everything that changes the binary of `kernel` (of the file `file_name`) launched with `values` on `target`."""
    import triton

    signature, divisible, constexprs = specialize(kernel, values)
    return kernel_store.normalized(
        KernelIdentity(
            file=file_name,
            source=kernel.cache_key,
            triton=triton.__version__,
            target=target,
            signature=signature,
            attrs=tuple((i, "D") for i in divisible),
            constexprs=constexprs,
            options=parsed_options(target, jit_options(kernel, num_warps)),
            env=compile_env(),
        )
    )


def compile_and_store(kernel, ident: KernelIdentity) -> StoredKernel:
    """Compile `kernel` for `ident` with triton.compile (no device needed) and store it."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource

    freeze.check(f"compiling {ident.describe()}")
    backend = _backend(ident.target)
    source = ASTSource(
        kernel,
        dict(ident.signature),
        {(i,): v for i, v in ident.constexprs},
        {(i,): backend.parse_attr(letter) for i, letter in ident.attrs},
    )
    options = backend.parse_options(jit_options(kernel, dict(ident.options)["num_warps"]))
    compiled = triton.compile(source, target=GPUTarget(*ident.target), options=options.__dict__)
    meta = compiled.metadata
    stored = StoredKernel(
        identity=ident,
        binary=compiled.asm["cubin" if ident.target[0] == "cuda" else "hsaco"],
        name=meta.name,
        num_warps=meta.num_warps,
        shared=meta.shared,
        launch={field: _plain(getattr(meta, field, None)) for field in LAUNCH_FIELDS},
    )
    try:
        logger.debug("tritonwise: compiled %s into %s", ident.describe(), kernel_store.save(stored))
    except OSError as e:  # no writable directory at all: run it anyway, compile again next process
        logger.warning("tritonwise: could not store the compiled %s: %s", ident.describe(), e)
    return stored


def _plain(value):
    """A metadata value as JSON keeps it."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value if value is None or isinstance(value, (bool, int, float, str, dict)) else repr(value)


def stored_or_compiled(kernel, ident: KernelIdentity) -> StoredKernel:
    """The stored kernel for `ident`, compiling and storing it when the store lacks it."""
    return kernel_store.load(ident) or compile_and_store(kernel, ident)


class LoadedKernel:
    """A stored kernel loaded on one device, with the CompiledKernel attributes runtime/launcher.py reads."""

    def __init__(self, stored: StoredKernel, function: int):
        self.name, self.function = stored.name, function
        self.metadata = SimpleNamespace(num_warps=stored.num_warps, shared=stored.shared, **stored.launch)
        self.src = SimpleNamespace(signature=dict(stored.identity.signature))


def loaded(file_name: str, kernel, values: Sequence, num_warps: int, device_index: int) -> Optional[LoadedKernel]:
    """The kernel for this launch loaded on CUDA device `device_index` (stored first if missing), or None."""
    fast_key = (kernel, specialize(kernel, values), tuple(jit_options(kernel, num_warps).items()), device_index)
    found = _specialized.get(fast_key)
    if found is not None:
        return found
    ident = identity(file_name, kernel, values, num_warps, device_target(device_index))
    key = (ident.key, device_index)
    found = _loaded.get(key)
    if found is None:
        stored = stored_or_compiled(kernel, ident)
        if stored.shared > 48 * 1024:  # more than a launch may take without opting in: left to Triton
            return None
        found = LoadedKernel(stored, cuda_driver.load_function(stored.binary, stored.name, device_index))
        with _loaded_lock:
            found = _loaded.setdefault(key, found)
    _specialized[fast_key] = found
    return found


def compile_ahead(file_name: str, kernel, values: Sequence, num_warps: int, targets: Sequence) -> int:
    """Store `kernel` compiled for each target, specialized on `values`; returns how many were not stored yet."""
    missing = 0
    for target in targets:
        ident = identity(file_name, kernel, values, num_warps, target)
        if kernel_store.load(ident) is None:
            compile_and_store(kernel, ident)
            missing += 1
    return missing


def store_enabled() -> bool:
    """Whether first launches go through the store (TRITONWISE_KERNEL_STORE=0: through Triton's JIT)."""
    return setting("TRITONWISE_KERNEL_STORE") == "1"


def first_launch(plan, inputs: Sequence, outputs: Sequence) -> Optional[Callable]:
    """Launch `plan` the first time; returns the launcher for later calls: launch.c over the stored
    binary, else Triton's (under profiler hooks, or where the driver alone cannot start it). None
    while launch.c is still being built: this call was launched through ctypes, and the plan's next
    call comes back here, so nothing keeps a launcher that is slow per call."""
    kernel = _kernel_of(plan)
    tail, device, grid = plan.index_args + plan.constexprs, plan.device.index, plan.grid
    through_triton = _through_triton(plan)
    try:
        # launch.c's launcher starts binaries this process loads itself: a JITFunction (not interpreted), on CUDA
        loadable = torch.version.hip is None and cuda_driver.driver() is not None
        drivable = store_enabled() and loadable and hasattr(kernel, "params")
        if drivable and native.start_launch_build():  # launch.c compiles while the kernel does
            found = loaded(plan.spec.file_name, kernel, (*inputs, *outputs, *tail), plan.num_warps, device)
            if found and native.launch_build_pending():  # launch.c not built yet: launch without it
                meanwhile = driver_launcher(found, grid, tail, device, len(inputs), through_triton)
                if meanwhile:
                    meanwhile(inputs, outputs)
                    return None
            launch = found and own_launcher(found, grid, tail, device, len(inputs), through_triton)
            if launch:
                launch(inputs, outputs)
                return launch
        freeze.check(f"Triton to compile or look up {plan.spec.kernel_name} ({plan.spec.file_name})")
    except freeze.FrozenError as e:
        raise freeze.FrozenError(f"{plan.name}({describe_values(inputs)}): {e}") from None
    compiled = through_triton(inputs, outputs)
    entry = triton_entry_launcher(compiled, grid, tail, device)  # None: this Triton cannot be driven directly
    if entry is None:
        return through_triton
    return own_launcher(compiled, grid, tail, device, len(inputs), entry) or entry


class Rebinding:
    """How later plans of `template`'s kernel get their launchers (plans/siblings.py): the
    template's launcher rebound to each plan's grid and index values, where Triton gives both one
    specialization: no payload scalar specialized on its value, equal constexprs and warps, and each
    value-specialized index argument classed alike (see _parameter)."""

    def __init__(self, template):
        self._rebind = getattr(template.direct, "rebind", None)  # launch.c's launcher only
        self._constexprs, self._num_warps = template.constexprs, template.num_warps
        tail = _value_specialized_tail(_kernel_of(template), template) if self._rebind is not None else None
        if tail is not None:  # each value-specialized index argument's position, parameter and class
            tail = [(k, param, _parameter(param, template.index_args[k])) for k, param in tail]
        self._specialized = tail

    def value_positions(self) -> Optional[tuple]:
        """Positions of the index arguments Triton specializes on their values; None where no plan can be rebound."""
        return None if self._specialized is None else tuple(k for k, _, _ in self._specialized)

    def launcher(self, plan) -> Optional[Callable]:
        """`plan`'s launcher, or None (the plan then takes first_launch)."""
        if self._specialized is None or plan.constexprs != self._constexprs or plan.num_warps != self._num_warps:
            return None  # not rebindable, or another compiled kernel
        values = plan.index_args
        if any(_parameter(param, values[k]) != kind for k, param, kind in self._specialized):
            return None
        return self._rebind(plan.grid, values + plan.constexprs, _through_triton(plan))


def _kernel_of(plan):
    return plan.launch.__globals__[plan.spec.kernel_name]  # the generated module's @triton.jit kernel


def _through_triton(plan) -> Callable:
    """`launch(inputs, outputs)` through Triton's JIT (compiling or looking the kernel up)."""
    grid, tail = plan.grid, plan.index_args + plan.constexprs

    def through_triton(inputs: Sequence, outputs: Sequence):
        return plan.launch(grid, *inputs, *outputs, *tail, plan.num_warps)

    return through_triton


def _value_specialized_tail(kernel, plan) -> Optional[list]:
    """(position, parameter) of each value-specialized index argument of `plan`; None where a payload scalar is."""
    n_args = len(plan.spec.inputs)
    n_operands = n_args + len(plan.out_dtypes)
    pointers = set(plan.tensor_positions) | set(range(n_args, n_operands))
    for position, param in enumerate(kernel.params[:n_operands]):
        if position not in pointers and _value_specialized(param):
            return None
    return [(k, p) for k, p in enumerate(kernel.params[n_operands:]) if _value_specialized(p)]


def _value_specialized(param) -> bool:
    """Whether Triton may specialize `param` on its value (== 1, divisible by 16): not a constexpr, nor
    do_not_specialize, nor annotated bool or float (the signature types those alone)."""
    annotation = param.annotation_type
    return not (param.is_constexpr or param.do_not_specialize or annotation == "u1" or annotation[:2] in ("fp", "bf"))
