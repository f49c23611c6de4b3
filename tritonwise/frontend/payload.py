"""What tritonwise needs to know about a user's `@triton.jit` payload."""

from __future__ import annotations

import ast
import hashlib
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any, Optional

from .schema import SchemaError


@dataclass(frozen=True)
class Payload:
    """A `@triton.jit` function used as the scalar body of a pointwise kernel: `jit` is the user's
    object (an InterpretedFunction under TRITON_INTERPRET=1), `fn` the Python function beneath it."""

    jit: Any
    fn: Any
    name: str
    qualname: str
    module: str
    source: str
    source_hash: str
    num_params: int  # positional parameters
    min_params: int  # those without a default
    variadic: bool  # takes *args
    uses_invert: bool = False  # `~` in its source: bool operands stay int1 (see frontend/dtypes.py)
    # per returned value, the parameter index it returns unchanged (a copy), else None; () when
    # the body is more than one return statement (see passed_through)
    copies: tuple = ()

    def copies_input(self, k: int) -> bool:
        """Whether the payload's value `k` is one of its arguments returned as it came."""
        return k < len(self.copies) and self.copies[k] is not None

    def check_arity(self, num_inputs: int, described: str) -> None:
        """Report at decoration, not at first compile, a payload that cannot take `num_inputs` arguments."""
        if self.min_params <= num_inputs and (num_inputs <= self.num_params or self.variadic):
            return
        takes = f"{self.min_params} to {self.num_params}" if self.min_params < self.num_params else str(self.num_params)
        raise SchemaError(
            f"pointwise_dynamic: payload {self.qualname} takes {takes} positional argument"
            f"{'s' if self.num_params != 1 else ''}, but {described} gives it {num_inputs} input"
            f"{'s' if num_inputs != 1 else ''}"
        )

    @property
    def origin(self) -> str:
        return f"{self.module}.{self.qualname}"


def inspect_payload(obj) -> Payload:
    """Validate `obj` as a `@triton.jit` function and describe it."""
    fn = getattr(obj, "fn", None)
    if not is_jit(obj) or not inspect.isfunction(fn):
        raise TypeError(
            f"pointwise_dynamic expects a @triton.jit function as its payload, got {obj!r}; "
            "decorate the payload with @triton.jit first"
        )
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise TypeError(f"payload {fn.__qualname__}: its source is not available ({e})") from e
    params = list(inspect.signature(fn).parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    tree = _parsed(source)
    return Payload(
        jit=obj,
        fn=fn,
        name=fn.__name__,
        qualname=fn.__qualname__,
        module=fn.__module__,
        source=source,
        source_hash=hashlib.sha256(source.encode()).hexdigest()[:16],
        num_params=len(positional),
        min_params=sum(p.default is p.empty for p in positional),
        variadic=any(p.kind is p.VAR_POSITIONAL for p in params),
        uses_invert=any(isinstance(node, ast.Invert) for node in ast.walk(tree)) if tree else False,
        copies=passed_through(source, [p.name for p in positional]),
    )


def passed_through(source: str, params: list) -> tuple:
    """Per value a one-`return` payload returns, the index of the parameter returned unchanged, else
    None (`return x * 2, y`: (None, 1)); () for any other body."""
    tree = _parsed(source)
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None) if tree else None
    body = func.body if func is not None else []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return ()
    value = body[0].value
    values = value.elts if isinstance(value, ast.Tuple) else [value]
    return tuple(params.index(v.id) if isinstance(v, ast.Name) and v.id in params else None for v in values)


def _parsed(source: str) -> Optional[ast.Module]:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def is_jit(obj) -> bool:
    """Whether `obj` is a @triton.jit function (a JITFunction, or an InterpretedFunction under TRITON_INTERPRET=1)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    return isinstance(obj, (JITFunction, InterpretedFunction))
