"""Running generated kernels on CPU tensors in Triton's interpreter, without TRITON_INTERPRET.

With TRITON_INTERPRET=1 set before import, every @triton.jit function (the user's payload, the
helpers it calls, triton.language's own `sum`, `max`, ...) is an InterpretedFunction. Without
it they are compiled-kernel JITFunctions, which refuse to be called from Python. So for the
duration of a CPU launch, `interpreting()`:
- patches triton.language and triton.language.core to their interpreter implementations, as
  the interpreter does for a kernel's own module (and restores them afterwards, so later GPU
  compilation in the same process sees the real language), and
- lets JITFunction objects be called, running an interpreter-rewritten copy of their Python
  function. The copy gets its own globals dict, so rewriting never writes into user modules.
Callers hold runtime.dispatch.INTERPRETER_LOCK: the interpreter's state is process-wide.
"""

from __future__ import annotations

import contextlib
import types

_rewritten: dict = {}


def interpreted(fn):
    """An interpreter-rewritten copy of the plain Python function `fn`."""
    copy = _rewritten.get(fn)
    if copy is None:
        from triton.runtime.interpreter import InterpretedFunction

        clone = types.FunctionType(fn.__code__, dict(fn.__globals__), fn.__name__, fn.__defaults__, fn.__closure__)
        clone.__qualname__, clone.__module__ = fn.__qualname__, fn.__module__
        copy = _rewritten[fn] = InterpretedFunction(clone).rewrite()
    return copy


def _call_interpreted(self, *args, **kwargs):
    return interpreted(self.fn)(*args, **kwargs)


@contextlib.contextmanager
def interpreting():
    import triton.language as tl
    from triton.runtime import interpreter
    from triton.runtime.jit import JITFunction

    holder = types.SimpleNamespace(__globals__={"tl": tl, "core": tl.core})
    scope = interpreter._patch_lang(holder)
    original_call = JITFunction.__call__
    JITFunction.__call__ = _call_interpreted
    try:
        yield
    finally:
        JITFunction.__call__ = original_call
        if scope is not None:
            scope.restore()
