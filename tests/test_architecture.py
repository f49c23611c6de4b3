"""The package's shape, read from its source: the import graph (every import, function-level ones
included) has no circles and only points down the layer order, and no module reaches into the
pointwise function's private members (the features use its public protocol)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tritonwise"

# Lowest first: a module may import its own layer and the layers before it, never one after.
LAYERS = [
    ("base", ["_version", "config", "errors", "libdevice", "strided_buffer"]),
    ("frontend", ["frontend"]),  # schema, payload reading, promotion, validation
    ("autodiff", ["autodiff"]),  # payload -> payload source transformations (derivative, variants)
    ("schemes", ["schemes"]),  # one module per tiling scheme: its block rule and template
    ("analysis", ["analysis"]),  # shapes and strides -> task plan (plain data), choosing a scheme
    ("codegen", ["codegen"]),  # spec -> source
    ("runtime", ["runtime"]),  # loading, launching, the store, the CPU interpreter
    ("plans", ["plans"]),  # call -> LaunchPlan, every memo and key
    ("features", ["features", "tracing"]),  # routing and what it routes to, instantiate, torch ops, tracing under compile
    ("api", ["function", "decorator", "aot", "demo", "ops", "__main__", ""]),  # the public surface
]


def _modules() -> dict:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imported(name: str, node) -> list:
    """The tritonwise modules an import statement in module `name` reads."""
    if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            here = name.split(".") if MODULES[name].name == "__init__.py" else name.split(".")[:-1]
            here = here[: len(here) - node.level + 1]
            base = ".".join(here + ([node.module] if node.module else []))
        targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    found = []
    for target in targets:
        while target not in MODULES and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in MODULES and target != name and target.startswith("tritonwise"):
            found.append(target)
    return found


def _graph() -> dict:
    graph = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        imports = (n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)))
        # importing a submodule runs its package's __init__: not an edge of the module's own
        graph[name] = {t for n in imports for t in _imported(name, n) if not name.startswith(t + ".")}
    return graph


def _layer(name: str) -> int:
    """The index in LAYERS of module `name` (the longest matching prefix decides)."""
    rest = name.removeprefix("tritonwise").removeprefix(".")
    best = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if rest == prefix or rest.startswith(prefix + ".") if prefix else rest == "":
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    assert best is not None, f"{name} is in no layer of LAYERS: add it"
    return best[0]


def _cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycles():
    assert _cycles(_graph()) == []


def test_every_module_is_in_a_layer():
    for name in MODULES:
        _layer(name)


def test_imports_only_point_down_the_layers():
    upward = [
        f"{name} ({LAYERS[_layer(name)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for name, targets in sorted(_graph().items())
        for target in sorted(targets)
        if _layer(target) > _layer(name)
    ]
    assert upward == []


def _function_privates() -> set:
    """The private members of PointwiseDynamicFunction: its `self._x` attributes and `_x` methods."""
    tree = ast.parse((PACKAGE / "function.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "PointwiseDynamicFunction")
    names = {n.name for n in cls.body if isinstance(n, ast.FunctionDef) and _private(n.name)}
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            if _private(node.attr):
                names.add(node.attr)
    return names


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_reads_the_functions_private_members():
    """Outside function.py, `x._plans`, `fn._prepare`, ...: the features must use the protocol."""
    privates = _function_privates()
    assert {"_payload", "_plans", "_c_tables", "_call_missed"} <= privates  # the check sees them
    reads = []
    for name, path in sorted(MODULES.items()):
        if name == "tritonwise.function":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in privates:
                owner = node.value
                if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                    reads.append(f"{name}:{node.lineno} .{node.attr}")
    assert reads == []


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import tritonwise.analysis.plan", ["tritonwise.analysis.plan"]),
        ("from ..runtime import arguments", ["tritonwise.runtime.arguments"]),
        ("from ..plans.planner import Planner", ["tritonwise.plans.planner"]),
    ],
)
def test_the_graph_reads_relative_and_absolute_imports(source, expected):
    """The check itself: imports written either way land on the module they name."""
    node = ast.parse(source).body[0]
    assert _imported("tritonwise.features.routing", node) == expected
