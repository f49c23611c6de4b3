"""What tritonwise needs to know about a user's `@triton.jit` payload."""

from __future__ import annotations

import hashlib
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Payload:
    """A `@triton.jit` function used as the scalar body of a pointwise kernel.

    `jit` is the user's object (a JITFunction, or an InterpretedFunction when the user set
    TRITON_INTERPRET=1); `fn` is the plain Python function underneath it.
    """

    jit: Any
    fn: Any
    name: str
    qualname: str
    module: str
    source: str
    source_hash: str
    num_params: int
    uses_invert: bool = False  # `~` in its source: bool operands stay int1 (see frontend/dtypes.py)

    @property
    def origin(self) -> str:
        return f"{self.module}.{self.qualname}"


def inspect_payload(obj) -> Payload:
    """Validate `obj` as a `@triton.jit` function and describe it."""
    fn = getattr(obj, "fn", None)
    if not _is_triton_jit(obj) or not inspect.isfunction(fn):
        raise TypeError(
            f"pointwise_dynamic expects a @triton.jit function as its payload, got {obj!r}; "
            "decorate the payload with @triton.jit first"
        )
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise TypeError(f"payload {fn.__qualname__}: its source is not available ({e})") from e
    params = inspect.signature(fn).parameters.values()
    return Payload(
        jit=obj,
        fn=fn,
        name=fn.__name__,
        qualname=fn.__qualname__,
        module=fn.__module__,
        source=source,
        source_hash=hashlib.sha256(source.encode()).hexdigest()[:16],
        num_params=sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params),
        uses_invert=_uses_invert(source),
    )


def _uses_invert(source: str) -> bool:
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(isinstance(node, ast.Invert) for node in ast.walk(tree))


def _is_triton_jit(obj) -> bool:
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    return isinstance(obj, (JITFunction, InterpretedFunction))
