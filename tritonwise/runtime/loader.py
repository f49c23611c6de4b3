"""Loading a generated file as a module, with the payload bound into its namespace, once per
backend: "gpu" (Triton compiles the kernel) or "interpreter" (CPU tensors, or any under
TRITON_INTERPRET=1; see runtime/interpreter/interpret.py).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from pathlib import Path

_lock = threading.Lock()
_modules: dict = {}


def load(path: Path, kernel_name: str, alias: str, payload, backend: str, variants=None) -> types.ModuleType:
    """The module of the file at `path`, the payload bound as `alias` and each variant under its own alias."""
    key = (str(path), backend)
    with _lock:
        if key not in _modules:
            _modules[key] = _exec(path, {alias: payload.jit, **(variants or {})}, backend, kernel_name)
        return _modules[key]


def _exec(path: Path, bound: dict, backend: str, kernel_name: str) -> types.ModuleType:
    name = f"tritonwise_generated.{backend}.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(bound)
    sys.modules[name] = module  # Triton resolves the kernel's source and globals through it
    spec.loader.exec_module(module)
    if backend == "interpreter":
        from triton.runtime.interpreter import InterpretedFunction

        kernel = getattr(module, kernel_name)
        if not isinstance(kernel, InterpretedFunction):
            setattr(module, kernel_name, InterpretedFunction(kernel.fn))
    return module
