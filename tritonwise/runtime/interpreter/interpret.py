"""Running generated kernels on CPU tensors in Triton's interpreter, in both CPU modes.

Without TRITON_INTERPRET every @triton.jit function (the user's payload, the helpers it calls,
triton.language's own `sum`, `max`, ...) is a compiled-kernel JITFunction, which refuses to be
called from Python. With TRITON_INTERPRET=1 set before import they are InterpretedFunctions,
whose own device-call path asserts that the callee's module imported triton.language, and
rewrites the function into that module's globals. Both modes launch through `interpreting()`,
which for the duration of a CPU launch:
- patches triton.language and triton.language.core to their interpreter implementations, as
  the interpreter does for a kernel's own module (and restores them afterwards, so later GPU
  compilation in the same process sees the real language), and
- routes a call of either kind of function to an interpreter-rewritten copy of its Python
  function. The copy gets its own globals dict, so rewriting never writes into user modules,
  and the payload's module may import whatever it likes, and
- rewrites `not x` as the compiler runs it (see `_elementwise_not`).
Callers hold runtime.dispatch.INTERPRETER_LOCK: the interpreter's state is process-wide.
"""

from __future__ import annotations

import ast
import contextlib
import os
import types

from .interpreter_numerics import exact_numerics, interpreter_globals

_rewritten: dict = {}


def runs_interpreted(device) -> bool:
    """Whether a launch on `device` runs in Triton's interpreter: always for CPU tensors, and for
    every device when the user set TRITON_INTERPRET=1 (Triton then interprets CUDA tensors' kernels
    too, copying their storage to the host and back, and compiles nothing)."""
    if device.type == "cpu":
        return True
    try:
        from triton import knobs
    except ImportError:  # Triton before 3.4 read the variable directly
        return os.environ.get("TRITON_INTERPRET", "0") == "1"
    return bool(knobs.runtime.interpret)


def interpreted(fn):
    """An interpreter-rewritten copy of the plain Python function `fn`."""
    copy = _rewritten.get(fn)
    if copy is None:
        from triton.runtime.interpreter import InterpretedFunction

        namespace = interpreter_globals(fn.__globals__)  # captured libdevice functions made callable
        clone = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
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

    def patched(tensor, *scope):
        patch_tensor(tensor, *scope)  # Triton 3.6 on passes a scope; 3.5 patches for good
        if scope:
            scope[0].set_attr(tensor, "__index__", _index)
        else:
            tensor.__index__ = _index

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
def _device_calls_interpreted():
    """Route every call of a @triton.jit function from inside a kernel to its interpreted copy.

    Without TRITON_INTERPRET such functions are JITFunctions, which refuse to be called from
    Python. With it they are InterpretedFunctions, whose own __call__ first looks for
    triton.language in the callee's module globals and asserts when the module never imported
    it (FlagGems' tests define payloads in such modules); the language is already patched
    process-wide by `interpreting()`, so the copy is called directly in both modes."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    originals = [(cls, cls.__dict__["__call__"]) for cls in (JITFunction, InterpretedFunction)]
    for cls, _ in originals:
        cls.__call__ = _call_interpreted
    try:
        yield
    finally:
        for cls, original in originals:
            cls.__call__ = original


# `not value` without a `not`: elementwise on a Triton tensor (its __not__), Python's on the rest
_NOT = "(lambda value: value.__not__() if hasattr(value, '__not__') else (False if value else True))"
_not_transformers: dict = {}


def _not_transformer(base: type):
    """The interpreter's AST rewriter (`base`) that also turns `not x` into `_NOT(x)`. Triton's
    compiler runs `not tensor` elementwise (FlagGems' logical_not: `return not x.to(tl.int1)`);
    the interpreter leaves it to Python, which gives one bool for the whole block."""
    if base not in _not_transformers:

        class ElementwiseNot(base):
            def visit_UnaryOp(self, node):
                node = self.generic_visit(node)
                if not isinstance(node.op, ast.Not):
                    return node
                call = ast.Call(func=ast.parse(_NOT, mode="eval").body, args=[node.operand], keywords=[])
                return ast.copy_location(call, node)

            def visit_Assign(self, node):  # Triton 3.6's rewriter does not visit assigned values
                node.value = self.visit(node.value)
                return super().visit_Assign(node)

        _not_transformers[base] = ElementwiseNot()
    return _not_transformers[base]


@contextlib.contextmanager
def _elementwise_not(interpreter):
    rewriter = getattr(interpreter, "FunctionRewriter", None)
    if rewriter is None:
        yield
        return
    original = rewriter.ast_transformer
    rewriter.ast_transformer = _not_transformer(type(original))
    try:
        yield
    finally:
        rewriter.ast_transformer = original


@contextlib.contextmanager
def interpreting():
    """The one entry point of every CPU launch, in both CPU modes (TRITON_INTERPRET set or not).
    NumPy's floating-point warnings are off: the interpreter computes every lane, masked-off ones
    too (0 / 0 where a load gave no value), and an IEEE result (inf, nan) is a value on the GPU
    and in torch, never a warning."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    with _scalar_index(interpreter), _bool_scalars(interpreter), _elementwise_not(interpreter), exact_numerics():
        holder = types.SimpleNamespace(__globals__={"tl": tl, "core": tl.core})
        scope = interpreter._patch_lang(holder)
        try:
            with _device_calls_interpreted(), np.errstate(all="ignore"):
                yield
        finally:
            if scope is not None:
                scope.restore()
