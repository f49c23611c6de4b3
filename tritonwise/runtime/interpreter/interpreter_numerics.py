"""Triton's interpreter, made to compute what the GPU computes, for the duration of a CPU launch.

Out of the box the interpreter does integer arithmetic on bf16/fp8 bits, converts to them without
correct rounding, and has no libdevice. `exact_numerics()` patches its builder and the libdevice
modules (undone on exit): bf16/fp8 operations compute in float32 and round once to nearest even, as
the GPU does; conversions between float formats round once with the GPU's overflow rule
(narrow_floats.py); libdevice calls run NumPy implementations (interpreter_libdevice.py).
`interpreter_globals()` does the same for libdevice functions a payload's module captured in a
global (`erf = tl_extra_shim.erf`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib

import triton.language as tl

from .interpreter_libdevice import BACKEND_MODULE, STUB_MODULE, extern_elementwise, unavailable


@contextlib.contextmanager
def exact_numerics():
    """Patch the interpreter to give the GPU's bf16/fp8, conversion and libdevice results; restored on
    exit, with whatever the caller sets through the PatchScope this yields."""
    from triton.runtime import interpreter

    from . import interpreter_floats

    scope, builder = PatchScope(), interpreter.InterpreterBuilder
    try:
        if not hasattr(interpreter, "_LangPatchScope"):
            _undo_lang_patching_on_exit(scope)
        for name, make in interpreter_floats.BUILDER_PATCHES.items():
            scope.set_attr(builder, name, make(builder.__dict__.get(name)))
        for module, name, value in _libdevice_bindings():  # backend builtins with the interpreter's semantic
            scope.set_attr(module, name, value)
        scope.set_attr(builder, "create_extern_elementwise", extern_elementwise)
        yield scope
    finally:
        scope.restore()


class PatchScope:
    """Attributes set for a launch, restored in reverse order (the interpreter's own scope is private and 3.6+)."""

    _MISSING = object()

    def __init__(self) -> None:
        self._changes: list = []
        self._kept: list = []

    def set_attr(self, obj: object, name: str, value: object) -> None:
        self._changes.append((obj, name, getattr(obj, name, self._MISSING)))
        setattr(obj, name, value)

    def keep(self, obj: object) -> None:
        """Restore every attribute of `obj`'s own namespace, whoever changes it meanwhile."""
        self._kept.append((obj, dict(vars(obj))))

    def restore(self) -> None:
        for obj, before in reversed(self._kept):
            now = vars(obj)
            for name in [name for name in now if name not in before]:
                delattr(obj, name)
            for name, value in before.items():
                if now.get(name, self._MISSING) is not value:
                    setattr(obj, name, value)
        self._kept.clear()
        while self._changes:
            obj, name, original = self._changes.pop()
            if original is self._MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, original)


def _undo_lang_patching_on_exit(scope: PatchScope) -> None:
    """Triton before 3.6 patches triton.language for good: record what it patches, so `scope` puts
    it back as 3.6 does (else autograd's rules and GPU launches would see the wrappers)."""
    namespaces = [tl, tl.core, tl.math, tl.tensor, tl.dtype, getattr(tl.core, "tensor_descriptor_base", None)]
    for namespace in filter(None, namespaces):
        scope.keep(namespace)


def interpreter_globals(module_globals: dict) -> dict:
    """A payload's globals for its interpreted copy, captured libdevice functions bound to the interpreter."""
    copy = dict(module_globals)
    for name, value in module_globals.items():
        module = getattr(value, "__module__", None)
        if module in (STUB_MODULE, BACKEND_MODULE) and callable(value):
            copy[name] = _late_bound(getattr(value, "__name__", name))
    return copy


def _late_bound(name: str):
    def call(*args, **kwargs):
        backend = importlib.import_module(BACKEND_MODULE)
        return (getattr(backend, name, None) or unavailable(name))(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


@functools.cache
def _libdevice_bindings() -> list:
    """(module, name, replacement) for both libdevice modules, built once, not per launch."""
    backend = importlib.import_module(BACKEND_MODULE)
    stub = importlib.import_module(STUB_MODULE)
    bound = {name: _bound(member) for name, member in vars(backend).items() if tl.core.is_builtin(member)}
    bindings = [(backend, name, value) for name, value in bound.items()]
    for name, member in vars(stub).items():
        if not name.startswith("_") and callable(member):
            bindings.append((stub, name, bound.get(name) or unavailable(name)))
    return bindings


def _bound(builtin):
    """The builtin called with the interpreter's semantic (as the interpreter's _patch_builtin does)."""

    def call(*args, _semantic=None, **kwargs):
        from triton.runtime.interpreter import interpreter_semantic

        return builtin(*args, _semantic=interpreter_semantic, **kwargs)

    call.__name__ = call.__qualname__ = builtin.__name__
    return call
