"""Running generated kernels on CPU tensors in Triton's interpreter, in both CPU modes.

Without TRITON_INTERPRET, @triton.jit functions are JITFunctions that refuse Python calls; with it
they are InterpretedFunctions that assert their module imported triton.language. Every CPU launch
goes through `interpreting()`, which patches triton.language to the interpreter's implementation
(restored afterwards), routes calls of jit functions to interpreted copies with their own globals,
and runs `not x` elementwise as the compiler does. Callers hold runtime.dispatch.INTERPRETER_LOCK:
the interpreter's state is process-wide.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import types

import numpy as np
import triton.language as tl
from triton import knobs
from triton.runtime.jit import JITFunction

from .interpreter_numerics import exact_numerics, interpreter_globals


def runs_interpreted(device) -> bool:
    """Whether a launch on `device` runs in the interpreter: CPU always, any device under TRITON_INTERPRET=1."""
    return device.type == "cpu" or bool(knobs.runtime.interpret)


@functools.cache
def interpreted(fn):
    """An interpreter-rewritten copy of the plain Python function `fn`, made once."""
    from triton.runtime.interpreter import InterpretedFunction

    namespace = interpreter_globals(fn.__globals__)  # captured libdevice functions made callable
    clone = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__qualname__, clone.__module__ = fn.__qualname__, fn.__module__
    return InterpretedFunction(clone).rewrite()


def _calls_interpreted(original):
    """A @triton.jit function's __call__ that runs its interpreted copy, in both modes (calls from inside a kernel)."""
    return lambda self, *args, **kwargs: interpreted(self.fn)(*args, **kwargs)


def int64_scalars(values) -> tuple:
    """Ints as the interpreter's int64 scalars for an int64 kernel's index arguments (it types ints
    by value and ignores `tl.int64`, so `row * stride` would wrap)."""
    from triton.runtime.interpreter import TensorHandle

    return tuple(tl.tensor(TensorHandle(np.array([v], dtype=np.int64), tl.int64), tl.int64) for v in values)


def _index(self) -> int:
    """A scalar interpreter tensor as a Python int (its data is a one-element array)."""
    return int(self.handle.data.reshape(-1)[0])


def _with_scalar_index(patch_tensor):
    """Let __index__ of interpreter scalar tensors take the element (Triton 3.6's `int(array)` fails on NumPy 2)."""

    def patched(tensor, *scope):
        patch_tensor(tensor, *scope)  # Triton 3.6 on passes a scope; 3.5 patches for good
        if scope:
            scope[0].set_attr(tensor, "__index__", _index)
        else:
            tensor.__index__ = _index

    return patched


def _with_bool_scalars(convert):
    """Build a python bool argument as 1-byte bool data, as interpreters after 3.6 do (3.6 rejects its own)."""

    def patched(arg):
        if isinstance(arg, bool):
            from triton.runtime.interpreter import TensorHandle

            return tl.tensor(TensorHandle(np.array([arg], dtype=np.bool_), tl.int1), tl.int1)
        return convert(arg)

    return patched


# `not value` without a `not`: elementwise on a Triton tensor (its __not__), Python's on the rest
_NOT = "(lambda value: value.__not__() if hasattr(value, '__not__') else (False if value else True))"


@functools.cache
def _not_transformer(original):
    """The interpreter's AST rewriter (`original`), also turning `not x` into the elementwise `_NOT(x)`; made once."""

    class ElementwiseNot(type(original)):
        def visit_UnaryOp(self, node):
            node = self.generic_visit(node)
            if not isinstance(node.op, ast.Not):
                return node
            call = ast.Call(func=ast.parse(_NOT, mode="eval").body, args=[node.operand], keywords=[])
            return ast.copy_location(call, node)

        def visit_Assign(self, node):  # Triton 3.6's rewriter does not visit assigned values
            node.value = self.visit(node.value)
            return super().visit_Assign(node)

    return ElementwiseNot()


@contextlib.contextmanager
def interpreting():
    """The one entry point of every CPU launch; NumPy's float warnings off (masked lanes compute too)."""
    from triton.runtime import interpreter

    with exact_numerics() as scope:
        for obj, name, replacement in (
            (interpreter, "_patch_lang_tensor", _with_scalar_index),
            (interpreter, "_implicit_cvt", _with_bool_scalars),
            (getattr(interpreter, "FunctionRewriter", None), "ast_transformer", _not_transformer),
            (JITFunction, "__call__", _calls_interpreted),
            (interpreter.InterpretedFunction, "__call__", _calls_interpreted),
        ):
            original = getattr(obj, name, None)
            if original is not None:  # this Triton has it
                scope.set_attr(obj, name, replacement(original))
        holder = types.SimpleNamespace(__globals__={"tl": tl, "core": tl.core})
        lang_scope = interpreter._patch_lang(holder)
        try:
            with np.errstate(all="ignore"):
                yield
        finally:
            if lang_scope is not None:
                lang_scope.restore()
