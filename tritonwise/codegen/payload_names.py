"""What a generated file needs, besides triton and tl, to define its copy of the payload when it
runs alone (`python FILE`): imports of the modules and objects the payload's source names, the
source of @triton.jit helpers defined in `__main__`, and constants' values. Inside tritonwise these
lines never run (they sit under the payload copy's `if`).
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import textwrap
import types

import triton
import triton.language as tl

from ..frontend.payload import is_jit

_PROVIDED = {"triton": triton, "tl": tl}  # the file imports these itself


@functools.lru_cache(maxsize=256)  # once per payload, not per kernel built from it
def payload_preamble(fn) -> tuple:
    """The lines that define, in a file of their own, every global name `fn`'s source reads:
    imports first, then constants, then copied helpers (each after what it reads)."""
    imports: dict = {}
    rest: dict = {}
    try:
        _collect(fn, imports, rest, seen={fn})
    except (OSError, TypeError, SyntaxError):  # a source not available: the file runs inside tritonwise only
        return ()
    return tuple(imports.values()) + tuple(line for lines in rest.values() for line in lines)


def _collect(fn, imports: dict, rest: dict, seen: set) -> None:
    for name in _global_names(fn):
        value = fn.__globals__[name]
        if _PROVIDED.get(name) is value or name in imports or name in rest:
            continue
        line = _import_line(name, value)
        if line is not None:
            imports[name] = line
        elif is_jit(value) and value.fn not in seen:
            seen.add(value.fn)
            _collect(value.fn, imports, rest, seen)  # what the helper reads comes first
            rest[name] = (*definition_lines(textwrap.dedent(inspect.getsource(value.fn)), name), "")
        elif isinstance(value, tl.constexpr) and not isinstance(value.value, (type(None), bool, int, float, str)):
            line = _import_line(name, value.value)  # a @tl.constexpr helper
            if line is not None:  # a script's helper has no import: `python FILE` names it missing
                imports[name] = line
        elif isinstance(value, tl.constexpr):
            rest[name] = (f"{name} = tl.constexpr({value.value!r})",)
        elif isinstance(value, (bool, int, float)):
            rest[name] = (f"{name} = {value!r}",)


def _global_names(fn) -> list:
    """Names `fn`'s source loads from its module's globals, in source order."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    loads = dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    code_names = set(fn.__code__.co_names)
    return [n for n in loads if n in code_names and n in fn.__globals__ and not hasattr(builtins, n)]


def _import_line(name: str, value):
    """`import a.b as name` for a module, `from m import q as name` for an object of an
    importable module; None for what has no import (a script's object, a constant)."""
    if isinstance(value, types.ModuleType):
        return f"import {value.__name__}" if value.__name__ == name else f"import {value.__name__} as {name}"
    target = value.fn if is_jit(value) else value
    module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
    importable = inspect.isfunction(target) or inspect.isclass(target) or is_jit(value)
    if not importable or not module or module == "__main__" or "." in qualname or "<" in qualname:
        return None
    return f"from {module} import {qualname}" + ("" if qualname == name else f" as {name}")


def definition_lines(source: str, alias: str) -> tuple:
    """The function in `source` without its decorators, under `@triton.jit`, bound as `alias`."""
    node = ast.parse(source).body[0]
    lines = ["@triton.jit"] + textwrap.dedent("\n".join(source.splitlines()[node.lineno - 1 :])).splitlines()
    return tuple(lines + ([f"{alias} = {node.name}"] if alias != node.name else []))

