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


def int64_scalars(values) -> tuple:
    """Python ints as the interpreter's int64 scalars, for the index arguments of an int64 kernel.

    The interpreter types an int argument by its value (int32 when it fits) and ignores the
    kernel's `tl.int64` annotations, which the GPU honours. A stride below 2**31 would then stay
    int32, `row * stride` would wrap around, and the load would read outside the tensor (a
    segmentation fault, not an error). The interpreter (3.6 and later) passes an argument that
    is already one of its tensors through unchanged, so these keep their type."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    return tuple(tl.tensor(TensorHandle(np.array([v], dtype=np.int64), tl.int64), tl.int64) for v in values)


def _index(self) -> int:
    """A scalar interpreter tensor as a Python int (its data is a one-element array)."""
    return int(self.handle.data.reshape(-1)[0])


@contextlib.contextmanager
def _scalar_index(interpreter):
    """Triton 3.6's interpreter converts a scalar tensor to int with `int(array)`, which NumPy 2
    refuses for a one-element 1-d array; the grid-stride loops need it (range(pid, ...)). Wrap
    the interpreter's own tensor patching so __index__ takes the element instead."""
    patch_tensor = getattr(interpreter, "_patch_lang_tensor", None)
    if patch_tensor is None:
        yield
        return

    def patched(tensor, scope, *rest):
        patch_tensor(tensor, scope, *rest)
        scope.set_attr(tensor, "__index__", _index)

    interpreter._patch_lang_tensor = patched
    try:
        yield
    finally:
        interpreter._patch_lang_tensor = patch_tensor


@contextlib.contextmanager
def _bool_scalars(interpreter):
    """Triton 3.6's interpreter stores a python bool argument as 32-bit data typed int1, which
    its own size check rejects; later versions build a 1-byte bool. Do what they do."""
    convert = getattr(interpreter, "_implicit_cvt", None)
    if convert is None:
        yield
        return

    def patched(arg):
        if isinstance(arg, bool):
            import numpy as np
            import triton.language as tl

            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.bool_), tl.int1), tl.int1)
        return convert(arg)

    interpreter._implicit_cvt = patched
    try:
        yield
    finally:
        interpreter._implicit_cvt = convert


@contextlib.contextmanager
def interpreting():
    import triton.language as tl
    from triton.runtime import interpreter
    from triton.runtime.jit import JITFunction

    with _scalar_index(interpreter), _bool_scalars(interpreter):
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
