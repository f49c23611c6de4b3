"""Pointwise functions under torch.compile: the payload translated into torch operations.

translate.py    the payload's AST -> Python source over torch (`tw.exp`, `tw.to`, ...)
language.py     Triton's language restated over torch (what `tw` names)
expression.py   a function's expression with the kernels' promotion, per call class
hook.py         the calls that take it while dynamo traces, and as_torch_op's decomposition
"""

import sys

from ..runtime import hit_path


def _let_dynamo_trace_c_calls() -> None:
    """Once the hit path installs a C `__call__` in a process that has loaded dynamo, give dynamo
    its traceable stand-in (hook.py; imported only then, since it loads dynamo itself)."""
    if "torch._dynamo" in sys.modules:
        from .hook import trace_c_calls

        trace_c_calls()


hit_path.installed_listeners.append(_let_dynamo_trace_c_calls)
