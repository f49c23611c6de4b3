"""Loading a generated file as a module, with the payload bound into its namespace.

Each file is loaded once per backend. On GPU the module holds the user's @triton.jit payload
and the kernel is compiled by Triton. On CPU the kernel and the payload run in Triton's
interpreter without TRITON_INTERPRET being set: the kernel is wrapped as an
InterpretedFunction, and the payload (with every @triton.jit helper it reaches) is bound as
an interpreter-rewritten copy, since a compiled JITFunction cannot be called from
interpreted code.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from pathlib import Path

_lock = threading.Lock()
_modules: dict = {}


def load(path: Path, kernel_name: str, alias: str, payload, backend: str) -> types.ModuleType:
    key = (str(path), backend)
    module = _modules.get(key)
    if module is None:
        with _lock:
            module = _modules.get(key)
            if module is None:
                module = _exec(path, alias, payload, backend, kernel_name)
                _modules[key] = module
    return module


def _exec(path: Path, alias: str, payload, backend: str, kernel_name: str) -> types.ModuleType:
    name = f"tritonwise_generated.{backend}.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__[alias] = payload.jit if backend == "gpu" else interpreted(payload.fn)
    sys.modules[name] = module  # Triton resolves the kernel's source and globals through it
    spec.loader.exec_module(module)
    if backend == "cpu":
        from triton.runtime.interpreter import InterpretedFunction

        kernel = getattr(module, kernel_name)
        setattr(module, kernel_name, InterpretedFunction(kernel.fn))
    return module


_interpreted: dict = {}


def interpreted(fn):
    """A plain function the interpreter can call in place of the @triton.jit function `fn`."""
    cached = _interpreted.get(fn)
    if cached is not None:
        return cached
    from triton.runtime.interpreter import InterpretedFunction

    glb = dict(fn.__globals__)
    clone = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__qualname__, clone.__module__ = fn.__qualname__, fn.__module__
    _interpreted[fn] = rewritten = InterpretedFunction(clone).rewrite()
    for key, value in fn.__globals__.items():
        inner = _jit_inner(value)
        if inner is not None and inner is not fn:
            glb[key] = interpreted(inner)
    return rewritten


def _jit_inner(value):
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    if isinstance(value, (JITFunction, InterpretedFunction)):
        return value.fn
    return None
