"""A payload's source, translated into Python over torch: the payload's torch expression.

The AST is rewritten statement by statement: `tl.X` and `libdevice.X` become `tw.X`
(tracing/language.py), operators whose Triton meaning differs from torch's become calls there too,
and globals the payload reads are written in as constants. An `if` whose test is known before any
element is computed (dtypes, constexprs, scalars) is kept, as Triton folds it; anything else without
a torch twin raises UnsupportedConstruct naming it and its line.
"""

from __future__ import annotations

import ast
import enum
import functools
import inspect
import textwrap
from dataclasses import dataclass
from numbers import Number

import triton.language as tl

from ..autodiff.derivative import library_name, resolve
from ..frontend.payload import is_jit
from .language import DTYPE_TESTS, FUNCTIONS, TRITON_DTYPES

_OPERATORS = {ast.Div: "truediv", ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "power"}
_METHODS = ("logical_and", "logical_or")  # tensor methods with the function of the same name
_KEPT_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)


class UnsupportedConstruct(Exception):
    """A payload construct with no torch equivalent; its message names it and its line."""


@dataclass(frozen=True)
class Translation:
    name: str  # the translated payload's function name in `source`
    source: str  # every translated function, helpers first


def translate(fn, static_params: frozenset) -> Translation:
    """The torch translation of the function under a @triton.jit payload; `static_params` are python scalars."""
    functions: dict = {}
    name = _Function(fn, functions, static_params).translate()
    return Translation(name, "\n\n".join(functions.values()) + "\n")


class _Function:
    """The translation of one function; helpers it calls are added to `functions` first."""

    def __init__(self, fn, functions: dict, static_params: frozenset):
        self.fn = fn
        self.globals = fn.__globals__
        self.functions = functions
        self.static = set(static_params)
        self.locals: set = set()

    def translate(self) -> str:
        name = _mangle(self.fn)
        if name in self.functions:
            return name
        self.functions[name] = ""  # claimed: a recursive helper is refused where it is called
        parsed = ast.parse(textwrap.dedent(inspect.getsource(self.fn)))
        func = next(n for n in parsed.body if isinstance(n, ast.FunctionDef))
        args = func.args
        params = args.posonlyargs + args.args
        self.locals = {a.arg for a in params}
        self.static |= {a.arg for a in params if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
        new_args = ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=a.arg) for a in params],
            vararg=ast.arg(arg=args.vararg.arg) if args.vararg else None,
            kwonlyargs=[],
            kw_defaults=[],
            kwarg=None,
            defaults=[self.expr(d) for d in args.defaults],
        )
        body = self.block(func.body)  # a docstring alone translates to `pass`
        tree = ast.FunctionDef(name=name, args=new_args, body=body, decorator_list=[], returns=None, type_params=[])
        self.functions.pop(name)
        self.functions[name] = ast.unparse(ast.fix_missing_locations(tree))
        return name

    def fail(self, node, what: str):
        line = getattr(node, "lineno", None)
        first = inspect.getsourcelines(self.fn)[1] if line else 0
        at = f", line {first + line - 1}" if line else ""
        raise UnsupportedConstruct(f"payload {self.fn.__qualname__}{at}: {what} has no torch equivalent")

    # ---- statements ----------------------------------------------------------------------

    def stmt(self, node) -> list:
        if isinstance(node, ast.Return):
            return [ast.Return(value=None if node.value is None else self.expr(node.value))]
        if isinstance(node, ast.Assign) or (isinstance(node, ast.AnnAssign) and node.value is not None):
            value, targets = self.expr(node.value), getattr(node, "targets", None) or [node.target]
            for target in targets:
                self.bind(target, node.value)
            return [ast.Assign(targets=[self.target(t) for t in targets], value=value)]
        if isinstance(node, ast.AugAssign):
            target = ast.Name(id=node.target.id, ctx=ast.Load()) if isinstance(node.target, ast.Name) else node.target
            value = self.expr(ast.BinOp(left=target, op=node.op, right=node.value))
            self.bind(node.target, node.value, keep=True)
            return [ast.Assign(targets=[self.target(node.target)], value=value)]
        if isinstance(node, ast.If):
            test = self.static_test(node.test)
            return [ast.If(test=test, body=self.block(node.body), orelse=self.block(node.orelse))]
        if isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            return []
        if isinstance(node, ast.Assert) or (isinstance(node, ast.Expr) and self.is_static_assert(node.value)):
            return []  # checks the kernel makes at compile time; torch has checked dtypes already
        self.fail(node, f"the statement `{_first_line(node)}`")

    def block(self, body: list) -> list:
        return [s for stmt in body for s in self.stmt(stmt)] or ([ast.Pass()] if body else [])

    def is_static_assert(self, node) -> bool:
        return isinstance(node, ast.Call) and library_name(resolve(node.func, self.globals)) == "static_assert"

    def target(self, node):
        if isinstance(node, ast.Name):
            return ast.Name(id=node.id, ctx=ast.Store())
        if isinstance(node, (ast.Tuple, ast.List)):
            return ast.Tuple(elts=[self.target(e) for e in node.elts], ctx=ast.Store())
        self.fail(node, f"the assignment target `{ast.unparse(node)}`")

    def bind(self, target, value, keep: bool = False) -> None:
        """Record the names `target` assigns; each is static when its value is."""
        names = [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
        static = self.is_static(value)
        for name in names:
            self.locals.add(name)
            if static and (not keep or name in self.static):
                self.static.add(name)
            else:
                self.static.discard(name)

    def static_test(self, test):
        if not self.is_static(test):
            self.fail(test, f"an `if` on values computed per element (`{ast.unparse(test)}`; use tl.where)")
        return self.expr(test)

    def is_static(self, node) -> bool:
        """Whether `node` is known before any element is computed: it reads element values
        only through `.dtype` (or `.shape`), or names constants, globals and scalar parameters."""
        if isinstance(node, ast.Attribute) and node.attr in ("dtype", "shape", "type"):
            return True
        if isinstance(node, ast.Name):
            return node.id not in self.locals or node.id in self.static
        return all(self.is_static(child) for child in ast.iter_child_nodes(node))

    # ---- expressions ---------------------------------------------------------------------

    def expr(self, node) -> ast.expr:
        handler = getattr(self, f"expr_{type(node).__name__}", None)
        if handler is None:
            self.fail(node, f"the expression `{_first_line(node)}`")
        return handler(node)

    def expr_Constant(self, node):
        return ast.Constant(value=node.value)

    def expr_Name(self, node):
        if node.id in self.locals:
            return ast.Name(id=node.id, ctx=ast.Load())
        return self.global_value(node)

    def expr_Tuple(self, node):
        return ast.Tuple(elts=[self.expr(e) for e in node.elts], ctx=ast.Load())

    def expr_Attribute(self, node):
        if not self.is_global_chain(node.value):
            base = self.expr(node.value)
            if node.attr in ("dtype", "type"):  # `x.type.scalar` is the dtype too
                return _call("tw.dtype", [base])
            if node.attr == "scalar" and isinstance(node.value, ast.Attribute) and node.value.attr == "type":
                return base
            if node.attr == "shape":
                return ast.Attribute(value=base, attr="shape", ctx=ast.Load())
            if node.attr == "primitive_bitwidth":
                return _call("tw.bitwidth", [base])
            self.fail(node, f"the attribute `.{node.attr}` in `{ast.unparse(node)}`")
        return self.global_value(node)

    def expr_BinOp(self, node):
        left, right = self.expr(node.left), self.expr(node.right)
        name = _OPERATORS.get(type(node.op))
        if name is not None:
            return _call(f"tw.{name}", [left, right])
        if not isinstance(node.op, _KEPT_OPERATORS):
            self.fail(node, f"the operator in `{ast.unparse(node)}`")
        return ast.BinOp(left=left, op=node.op, right=right)

    def expr_UnaryOp(self, node):
        operand = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return _call("tw.logical_not", [operand])
        return ast.UnaryOp(op=node.op, operand=operand)

    def expr_BoolOp(self, node):
        name = "tw.logical_and" if isinstance(node.op, ast.And) else "tw.logical_or"
        return functools.reduce(lambda a, b: _call(name, [a, b]), [self.expr(v) for v in node.values])

    def expr_Compare(self, node):
        operands = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        parts = [ast.Compare(left=a, ops=[op], comparators=[b]) for a, op, b in zip(operands, node.ops, operands[1:])]
        return functools.reduce(lambda a, b: _call("tw.logical_and", [a, b]), parts)

    def expr_IfExp(self, node):
        return ast.IfExp(test=self.static_test(node.test), body=self.expr(node.body), orelse=self.expr(node.orelse))

    def expr_Call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute) and not self.is_global_chain(func.value):
            return self.method(node, func)
        target = resolve(func, self.globals)
        keywords = [ast.keyword(arg=k.arg, value=self.expr(k.value)) for k in node.keywords]
        args = [self.expr(a) for a in node.args]
        if target in (float, int, bool) and all(isinstance(a, ast.Constant) for a in args):
            return ast.Constant(value=target(*[a.value for a in args]))
        if target is tl.constexpr:
            return args[0]
        name = library_name(target)
        if name is not None:
            if name not in FUNCTIONS:
                self.fail(node, f"`{ast.unparse(func)}` (called in `{_first_line(node)}`)")
            if name == "cast":
                self.check_rounding(node, args[2:3], keywords)
            return ast.Call(func=_dotted(f"tw.{name}"), args=args, keywords=keywords)
        if is_jit(target):
            if _mangle(target.fn) in self.functions and not self.functions[_mangle(target.fn)]:
                self.fail(node, f"the recursive call `{_first_line(node)}`")
            helper = _Function(target.fn, self.functions, frozenset()).translate()
            return ast.Call(func=ast.Name(id=helper, ctx=ast.Load()), args=args, keywords=keywords)
        self.fail(node, f"the call `{_first_line(node)}`")

    def is_global_chain(self, node) -> bool:
        """A name or attribute chain of globals (`tl`, `tl.math`, `libdevice`), not a value."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id not in self.locals

    def method(self, node, func):
        """`x.to(...)`, `x.dtype.is_floating()` and the like on a payload value."""
        base = self.expr(func.value)
        args = [self.expr(a) for a in node.args]
        keywords = [ast.keyword(arg=k.arg, value=self.expr(k.value)) for k in node.keywords]
        if func.attr == "to":
            self.check_rounding(node, args[1:2], keywords)
            return ast.Call(func=_dotted("tw.to"), args=[base] + args, keywords=keywords)
        if func.attr in _METHODS and not keywords:
            return _call(f"tw.{func.attr}", [base] + args)
        if func.attr in DTYPE_TESTS and not args:
            return _call("tw.dtype_test", [base, ast.Constant(value=func.attr)])
        self.fail(node, f"the method `.{func.attr}` in `{_first_line(node)}`")

    def check_rounding(self, node, positional: list, keywords: list) -> None:
        """A conversion rounding other than to nearest (`fp_downcast_rounding="rtz"`, by keyword or
        by position after the dtype): torch has none."""
        given = positional + [k.value for k in keywords if k.arg == "fp_downcast_rounding"]
        for value in given:
            if not (isinstance(value, ast.Constant) and value.value in (None, "rtne")):
                self.fail(node, f"the rounding `{ast.unparse(value)}` in `{_first_line(node)}`")

    def global_value(self, node) -> ast.expr:
        """A global the payload reads, written in as a constant (or torch's dtype)."""
        found = resolve(node, self.globals)
        value = found.value if isinstance(found, tl.constexpr) else found
        if isinstance(value, (Number, str)) or value is None:
            return ast.Constant(value=value)
        if isinstance(value, enum.Enum) or hasattr(type(value), "__members__"):  # Triton's C++ enums too
            return ast.Constant(value=value.name)
        if type(value) is tl.dtype and value.name in TRITON_DTYPES:
            return _dotted(f"torch.{TRITON_DTYPES[value.name]}")
        self.fail(node, f"the global `{ast.unparse(node)}` ({type(value).__name__})")


# ---- helpers ---------------------------------------------------------------------------------


def _mangle(fn) -> str:
    """A function name unique per translated function (module and name)."""
    module = "".join(c if c.isalnum() else "_" for c in (fn.__module__ or ""))
    return f"{fn.__name__}__{module}" if module else fn.__name__


def _call(dotted: str, args: list) -> ast.Call:
    return ast.Call(func=_dotted(dotted), args=args, keywords=[])


def _dotted(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _first_line(node) -> str:
    return ast.unparse(node).splitlines()[0]
