"""Loading a generated file as a module, with the payload bound into its namespace, once per
backend: "gpu" (Triton compiles the kernel) or "interpreter" (CPU tensors, or any under
TRITON_INTERPRET=1; see runtime/interpreter/interpret.py).
"""

from __future__ import annotations

import linecache
import sys
import threading
import types
from pathlib import Path
from typing import Optional

from .cache import verified_source

_lock = threading.Lock()
_modules: dict = {}


def load(
    path: Path, kernel_name: str, alias: str, payload, backend: str, variants=None, text: Optional[str] = None
) -> types.ModuleType:
    """The module of the file at `path`, the payload bound as `alias` and each variant under its own
    alias; `text`: its source where it is not a generated file of the cache (a file run alone, an
    edited copy), else the text the cache verified."""
    key = (str(path), backend)
    with _lock:
        if key not in _modules:
            source = verified_source(path) if text is None else text
            module = exec_source(
                f"tritonwise_generated.{backend}.{path.stem}", path, source, {alias: payload.jit, **(variants or {})}
            )
            if backend == "interpreter":
                _interpreted(module, kernel_name)
            _modules[key] = module
        return _modules[key]


def exec_source(name: str, path: Path, text: str, namespace: dict) -> types.ModuleType:
    """Module `name` run from `text`, the source of the file at `path`, over `namespace`. The text is
    compiled here rather than imported: Python's import would read the file again and write and
    later run bytecode beside it (`__pycache__`), which no checksum covers. Triton reads a kernel's
    source through linecache, which is given the same text."""
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__.update(namespace)
    sys.modules[name] = module  # Triton resolves the kernel's source and globals through it
    run_source(str(path), text, module.__dict__)
    return module


def run_source(filename: str, text: str, namespace: dict) -> None:
    """Run `text` in `namespace` as the file `filename`, whose lines linecache (and so inspect,
    tracebacks and Triton) reads from `text` itself, whether or not such a file exists."""
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    exec(compile(text, filename, "exec"), namespace)


def _interpreted(module: types.ModuleType, kernel_name: str) -> None:
    from triton.runtime.interpreter import InterpretedFunction

    kernel = getattr(module, kernel_name)
    if not isinstance(kernel, InterpretedFunction):
        setattr(module, kernel_name, InterpretedFunction(kernel.fn))
