"""The C hit path: a cached call's signature, plan lookup, output allocation and launch in one C
call (`hit` in launch.c, hit.h).

A plan offers itself by carrying `hit`, a typed record (`record`); only plans whose fast path is
plain allocation and a launch through launch.c get one. A call no plan serves may be launched by a
shape program of its class (plans/shape_programs.py, program.h). Wherever Python must decide, C
launches nothing and returns (`MISS`, the signature it built), or `MISS` alone. `entry` is None
until the first plan gets a record, so processes that never launch through launch.c never load it;
from then on the function's __call__ is C too (call.h, installed by `enable`).
"""

from __future__ import annotations

import struct
import sys
from typing import Callable, Optional

import torch

from ..config import setting
from . import aten, native
from .arguments import INT32_RANGE, _other_key, _tensor_key

MISS = object()
entry: Optional[Callable] = None  # launch.c's hit(plans, args, MISS), once configured
# class -> (fallback, its own Python __call__) of each class whose __call__ call.h's method replaces on enable()
_served: dict = {}
installed_listeners: list = []  # callables run after a C __call__ is installed (tracing/hook.py)


def serve_calls_of(cls, fallback: Callable) -> None:
    """Once the hit path is on, `cls.__call__` is call.h's C method, falling back to `fallback(fn,
    args, kwargs, key)`."""
    _served[cls] = (fallback, cls.__dict__["__call__"])
    if entry is not None:
        _install(native.launch_module(), cls, fallback)


def restore_python_calls() -> None:
    """Give the served classes their Python `__call__` back (for a torch.compile that cannot trace a C method)."""
    restore_calls({cls: python_call for cls, (_, python_call) in _served.items()})


def install_c_calls() -> dict:
    """Give the served classes the C `__call__` whatever tracing chose; returns the old ones for restore_calls."""
    enable()
    module, before = native.launch_module(), {}
    for cls, (fallback, _) in _served.items():
        before[cls] = cls.__dict__["__call__"]
        _install(module, cls, fallback, notify=False)
    return before


def restore_calls(calls: dict) -> None:
    """Give each class in `calls` the `__call__` it maps to."""
    for cls, call in calls.items():
        cls.__call__ = call


def _install(module, cls, fallback: Callable, notify: bool = True) -> None:
    """Make `cls.__call__` launch.c's C method; `notify`: run the installed_listeners too."""
    cls.__call__ = module.call_method(fallback, sys.modules[__name__])
    for listener in installed_listeners if notify else ():
        listener()


def served_classes() -> list:
    """The classes whose `__call__` the hit path replaces (their C method once installed)."""
    return list(_served)


def serves_new_shapes() -> bool:
    """Whether shape programs are published (TRITONWISE_C_NEW_SHAPES=0: every new shape is planned in Python)."""
    return setting("TRITONWISE_C_NEW_SHAPES") == "1"


def records_in_c() -> bool:
    """Whether calls under autograd may be recorded in C++ (runtime/recording.h) once recorded
    through Python; TRITONWISE_C_RECORDING=0: every one through torch.autograd.Function, as
    compiled autograd needs (it cannot trace a C++ node)."""
    return setting("TRITONWISE_C_RECORDING") == "1"


def enable() -> None:
    """Configure launch.c's hit(), publish it as `entry`, and install the served classes' C __call__."""
    global entry
    if entry is None:
        module = native.launch_module()
        configure(module)
        aten.start(module)  # allocation and data pointers through ATen, once built
        entry = module.hit
        for cls, (fallback, _) in _served.items():
            _install(module, cls, fallback)


_DEFAULT = object()


def configure(
    module, raw_stream: Optional[Callable] = None, hooks=_DEFAULT, current_device: Optional[Callable] = _DEFAULT
) -> None:
    """What hit() calls: torch's current-stream query, Triton's launch hooks and torch's
    current-device query (None with one visible GPU); tests give fakes."""
    if hooks is _DEFAULT:
        from triton import knobs

        hooks = knobs.runtime
    if current_device is _DEFAULT:
        several = torch.cuda.is_available() and torch.cuda.device_count() > 1
        current_device = torch._C._cuda_getDevice if several else None
    raw_stream = raw_stream or torch._C._cuda_getCurrentRawStream
    module.configure(torch.Tensor, _tensor_key, _other_key, torch.empty_strided, raw_stream, hooks, current_device,
                     INT32_RANGE)


def record(shape: tuple, layouts: tuple, device: torch.device, launch, extents: tuple = ()) -> object:
    """The typed launch record (hit.h's Record) `plan.hit` holds: outputs of `shape` and `layouts`
    on `device`, launched as `launch` says; `extents` (dense_extent per tensor) for given outputs."""
    layouts = tuple((tuple(strides), dtype) for strides, dtype in layouts)
    packed = pack_extents(extents)
    fields = launch._asdict()
    return native.launch_module().record(shape=tuple(shape), layouts=layouts, device=device, extents=packed, **fields)


def recording(record_: object, recorder: tuple) -> object:
    """A copy of the launch record `record_` whose calls under grad mode are recorded for autograd
    by `recorder`, (backward, differentiable per output) (runtime/recording.h)."""
    return native.launch_module().recording(record_, recorder)


def call_tables(plan_cache, programs: dict, outputs: dict) -> object:
    """What call.h's __call__ reads of a function: launch.c's CallTables over its plans, programs and
    output names, which the plan cache then tells of each put (its plan index, index.h)."""
    tables = native.launch_module().call_tables(plans=plan_cache.by_key, programs=programs, outputs=outputs)
    plan_cache.c_tables = tables
    return tables


NO_EXTENT = (1, 0)  # lowest above highest: hit.h checks no overlap for such an operand


def pack_extents(extents) -> bytes:
    """(lowest, highest) int64 pairs as hit.h reads them, NO_EXTENT for None."""
    return pack_int64(NO_EXTENT if e is None else e for e in extents)


def pack_int64(rows) -> bytes:
    """Rows of ints as launch.c reads its packed fields: little-endian int64s, row after row."""
    return b"".join(struct.pack("<" + "q" * len(row), *row) for row in rows)
