"""Pointwise functions under torch.compile: the payload translated into torch operations.

translate.py    the payload's AST -> Python source over torch (`tw.exp`, `tw.to`, ...)
language.py     Triton's language restated over torch (what `tw` names)
expression.py   a function's expression with the kernels' promotion, per call class
hook.py         the calls that take it while dynamo traces, and as_torch_op's decomposition
"""

import itertools
import sys
import weakref

import torch

from ..runtime import hit_path


def let_dynamo_trace_c_calls() -> None:
    """Give dynamo a traceable stand-in for an installed C `__call__` (hook.py); a dynamo that takes
    none for a method (torch before 2.13) gets the Python `__call__` back instead."""
    if "torch._dynamo" not in sys.modules:
        return
    if polyfills_methods():
        from .hook import trace_c_calls

        trace_c_calls()
    else:
        hit_path.restore_python_calls()


def polyfills_methods() -> bool:
    """Whether this dynamo traces a polyfill given for a user class's C method (2.13 and 2.14 do; 2.11 refuses)."""
    return tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 13)


hit_path.installed_listeners.append(let_dynamo_trace_c_calls)


_functions = weakref.WeakValueDictionary()  # trace_key -> pointwise function
_keys = itertools.count()


def register(fn) -> str:
    """A constant naming `fn` to functions dynamo runs instead of tracing (assume_constant_result
    takes constants). A string: under dynamic=True dynamo makes an int attribute of an object it
    reaches through a closure a symbolic value, which assume_constant_result cannot take."""
    key = f"tritonwise-function-{next(_keys)}"
    _functions[key] = fn
    return key


def function_of(key: str):
    return _functions[key]
