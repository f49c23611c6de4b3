"""freeze(): proving that serving code never generates a file or compiles a kernel.

After `tritonwise.freeze()`, a call that would write a generated file or compile a kernel raises
FrozenError naming what missed; loading verified files and stored binaries is still allowed. The
flag is process-wide; `frozen()` scopes it.
"""

from __future__ import annotations

import contextlib
import threading

_lock = threading.Lock()
_depth = 0  # freeze() calls not yet undone; > 0 means frozen


class FrozenError(RuntimeError):
    """A call needed code generation or compilation while tritonwise was frozen."""


def freeze() -> None:
    """Make every later call that would generate a file or compile a kernel raise FrozenError."""
    global _depth
    with _lock:
        _depth += 1


def unfreeze() -> None:
    """Undo one freeze() (generation and compilation are allowed again once all are undone)."""
    global _depth
    with _lock:
        _depth = max(_depth - 1, 0)


def is_frozen() -> bool:
    return _depth > 0


@contextlib.contextmanager
def frozen():
    """`with tritonwise.frozen(): ...`: frozen inside the block, as before after it."""
    freeze()
    try:
        yield
    finally:
        unfreeze()


def check(what: str) -> None:
    """Raise FrozenError saying `what` was about to happen, when frozen."""
    if _depth > 0:
        raise FrozenError(f"tritonwise is frozen (tritonwise.freeze()), but this call needs {what}")
