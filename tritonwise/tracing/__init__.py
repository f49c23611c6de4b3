"""Pointwise functions under torch.compile: the payload translated into torch operations.

translate.py    the payload's AST -> Python source over torch (`tw.exp`, `tw.to`, ...)
language.py     Triton's language restated over torch (what `tw` names)
expression.py   a function's expression with the kernels' promotion, per call class
hook.py         the calls that take it while dynamo traces, and as_torch_op's decomposition
"""

import itertools
import sys
import weakref

from ..runtime import hit_path


def _let_dynamo_trace_c_calls() -> None:
    """Once the hit path installs a C `__call__` in a process that has loaded dynamo, give dynamo
    its traceable stand-in (hook.py; imported only then, since it loads dynamo itself)."""
    if "torch._dynamo" in sys.modules:
        from .hook import trace_c_calls

        trace_c_calls()


hit_path.installed_listeners.append(_let_dynamo_trace_c_calls)


_functions = weakref.WeakValueDictionary()  # trace_key -> pointwise function
_keys = itertools.count()


def register(fn) -> int:
    """A constant that names `fn` to functions dynamo runs instead of tracing
    (assume_constant_result takes constants only, not the function object)."""
    key = next(_keys)
    _functions[key] = fn
    return key


def function_of(key: int):
    return _functions[key]
