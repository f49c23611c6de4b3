"""A payload's body as a straight-line program: one operation per assignment, names in SSA form
(`return x * tl.sigmoid(x)` becomes `t1 = tl.sigmoid(x)`, `out0 = x * t1`). What cannot be
straight-line code (if/for/while, nested functions, tuple-returning helpers) is a NotDifferentiable
error naming the line.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import Optional

from ..errors import NotDifferentiable


@dataclass(frozen=True)
class Step:
    """`target = value`, where every operand of `value` is an atom (ast.Name or ast.Constant),
    except dtype-like attribute chains such as `tl.float32` and keyword arguments."""

    target: str
    value: ast.expr
    line: int


@dataclass(frozen=True)
class Program:
    params: tuple  # the payload's parameter names
    steps: tuple  # Step, in execution order
    results: tuple  # one atom (ast.Name or ast.Constant) per returned value
    names: frozenset  # every name the program uses, to draw fresh names from


def jit_source(name: str, params, lines: list) -> str:
    """The source of `@triton.jit def name(params)` whose body is `lines`."""
    body = "".join(f"    {line}\n" for line in lines)
    return f"@triton.jit\ndef {name}({', '.join(params)}):\n{body}"


def step_lines(steps) -> list:
    return [f"{s.target} = {ast.unparse(s.value)}" for s in steps]


def names_in(node: ast.AST) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def fresh_name(taken, base: str) -> str:
    """`base`, or `base_2`, `base_3`, ...: the first name not in `taken`."""
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


def root_name(node) -> Optional[str]:
    """The name an attribute chain starts from (`tl` of `tl.math.exp`); None if it starts elsewhere."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def not_differentiable(where: str, line, what: str) -> NotDifferentiable:
    return NotDifferentiable(
        f"{where}, line {line} of the payload: {what} cannot be differentiated automatically; "
        "give the backward payload by hand (pointwise_dynamic(..., backward=...) or fn.register_backward(...))"
    )


def linearize(source: str, where: str) -> Program:
    """The straight-line program of the payload whose source is `source` (`where` names it in errors)."""
    func = next((n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)), None)
    if func is None:
        raise NotDifferentiable(f"{where}: no function definition found in its source")
    params = tuple(a.arg for a in func.args.posonlyargs + func.args.args)
    builder = _Builder(where, params, names_in(func) | set(params))
    body = list(func.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    for stmt in body:
        if isinstance(stmt, ast.Return):
            if stmt is not body[-1] or stmt.value is None:
                builder.fail(stmt, "a `return` before the end (or without a value)")
            return builder.finish(stmt)
        builder.statement(stmt)
    builder.fail(func, "no `return` at the end of the payload")


class _Builder:
    def __init__(self, where: str, params: tuple, used: set):
        self.where = where
        self.steps: list = []
        self.current = {p: p for p in params}  # source name -> its SSA name now
        self.used = set(used)
        self.params = params
        self._temps = itertools.count(1)

    def fail(self, node, what: str):
        raise not_differentiable(self.where, getattr(node, "lineno", "?"), what)

    def statement(self, stmt) -> None:
        if isinstance(stmt, ast.Pass):
            return
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            self.assign(stmt.targets[0], stmt.value, stmt)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.assign(stmt.target, stmt.value, stmt)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            value = ast.BinOp(left=ast.Name(id=stmt.target.id, ctx=ast.Load()), op=stmt.op, right=stmt.value)
            self.assign(stmt.target, ast.copy_location(value, stmt), stmt)
        else:
            self.fail(stmt, f"the statement `{_first_line(stmt)}`")

    def assign(self, target, value, stmt) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, self.expression(value), stmt)
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            atoms = [self.atom(v) for v in value.elts]  # every right-hand side before any binding
            for t, a in zip(target.elts, atoms):
                if not isinstance(t, ast.Name):
                    self.fail(stmt, f"the assignment `{_first_line(stmt)}`")
                self.bind(t.id, a, stmt)
        else:
            self.fail(stmt, f"the assignment `{_first_line(stmt)}`")

    def bind(self, name: str, value: ast.expr, stmt) -> None:
        ssa = name if name not in self.current else fresh_name(self.used, name)  # assigned again: name_2
        self.used.add(ssa)
        self.steps.append(Step(ssa, value, getattr(stmt, "lineno", 0)))
        self.current[name] = ssa

    def finish(self, ret: ast.Return) -> Program:
        values = ret.value.elts if isinstance(ret.value, ast.Tuple) else [ret.value]
        results = tuple(self.atom(v) for v in values)
        return Program(self.params, tuple(self.steps), results, frozenset(self.used))

    def atom(self, node) -> ast.expr:
        """`node` as an atom, emitting steps for whatever it computes."""
        value = self.expression(node)
        if isinstance(value, (ast.Name, ast.Constant)) or _is_dtype_like(value):
            return value
        temp = next(n for n in (f"t{k}" for k in self._temps) if n not in self.used)
        self.used.add(temp)
        self.steps.append(Step(temp, value, getattr(node, "lineno", 0)))
        return ast.Name(id=temp, ctx=ast.Load())

    def expression(self, node) -> ast.expr:
        """`node` with its operands made atoms: one operation over atoms (or an atom)."""
        if isinstance(node, ast.Constant):
            return node
        if isinstance(node, ast.Name) or _is_dtype_like(node):
            return self.rename_root(node)
        if isinstance(node, ast.BinOp):
            return ast.BinOp(left=self.atom(node.left), op=node.op, right=self.atom(node.right))
        if isinstance(node, ast.UnaryOp):
            return ast.UnaryOp(op=node.op, operand=self.atom(node.operand))
        if isinstance(node, ast.Compare):
            return ast.Compare(
                left=self.atom(node.left), ops=node.ops, comparators=[self.atom(c) for c in node.comparators]
            )
        if isinstance(node, ast.BoolOp):
            return ast.BoolOp(op=node.op, values=[self.atom(v) for v in node.values])
        if isinstance(node, ast.Call):
            return self.call(node)
        self.fail(node, f"the expression `{ast.unparse(node)}`")

    def rename_root(self, chain: ast.expr) -> ast.expr:
        """A name or attribute chain (`x`, `tl.float32`, `x.dtype`) with a local root in SSA form."""
        if isinstance(chain, ast.Name):
            return ast.Name(id=self.current.get(chain.id, chain.id), ctx=ast.Load())
        return ast.Attribute(value=self.rename_root(chain.value), attr=chain.attr, ctx=ast.Load())

    def call(self, node: ast.Call) -> ast.Call:
        func = node.func
        if isinstance(func, ast.Attribute) and not _is_dtype_like(func.value):
            func = ast.Attribute(value=self.atom(func.value), attr=func.attr, ctx=ast.Load())  # x.to(...)
        elif root_name(func) is not None:  # tl.exp, libdevice.tanh, tl.math.exp
            func = self.rename_root(func)
        else:
            self.fail(node, f"the call `{ast.unparse(node)}`")
        args = [self.atom(a) for a in node.args]
        keywords = [ast.keyword(arg=k.arg, value=self.expression(k.value)) for k in node.keywords]
        return ast.Call(func=func, args=args, keywords=keywords)


def _is_dtype_like(node) -> bool:
    """An attribute chain of globals (`tl.float32`, `tl.constexpr`): kept as written."""
    return isinstance(node, ast.Attribute) and root_name(node) is not None


def _first_line(node) -> str:
    return ast.unparse(node).splitlines()[0]
