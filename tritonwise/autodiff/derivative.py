"""Symbolic differentiation of a scalar payload: the source of its backward payload.

Reverse mode over the payload's straight-line program (autodiff/linearize.py): the backward
recomputes the forward, then adds up each name's adjoint (autodiff/rules.py), one readable line per
`grad_<name>`. It takes the payload's arguments, one gradient per output (then each max/min output's
value) and returns the gradient of every input in `wrt`. Only names that depend on a `wrt` input
differentiably get adjoints; an active operand of an operation without a rule is a NotDifferentiable
error naming it.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import Optional, Sequence

from ..errors import NotDifferentiable
from . import rules
from .linearize import Step, fresh_name, jit_source, linearize, names_in, not_differentiable, root_name, step_lines


@dataclass(frozen=True)
class BackwardSource:
    name: str  # the backward payload's function name
    source: str  # its text, starting with the @triton.jit line
    returns: tuple  # per requested input: whether any output depends on it differentiably


def derive(
    source: str, globals_: dict, name: str, wrt: Sequence[int], reductions: Sequence[Optional[str]]
) -> BackwardSource:
    """The backward payload of the payload `name` (its `source`, resolving names in `globals_`)
    for the inputs at positions `wrt`; `reductions` holds each output's reduction kind or None."""
    where = f"payload {name}"
    program = linearize(source, where)
    if len(program.results) != len(reductions):
        raise NotDifferentiable(f"{where}: returns {len(program.results)} values for {len(reductions)} outputs")
    return _Deriver(program, globals_, where).run(name, tuple(wrt), tuple(reductions))


def ties_source(source: str, name: str, output: int) -> tuple:
    """(name, source) of a payload returning, per element, whether output `output` equals its max/min: summed by a
    fused "sum" reduction it counts the ties torch's amax/amin backward shares the gradient among."""
    program = linearize(source, f"payload {name}")
    extreme = fresh_name(program.names, "extreme")
    value = ast.unparse(program.results[output])
    lines = step_lines(program.steps) + [f"return {value}.to({extreme}.dtype) == {extreme}"]
    ties_name = f"{name}_ties{output}"
    return ties_name, jit_source(ties_name, list(program.params) + [extreme], lines)


class _Deriver:
    def __init__(self, program, globals_: dict, where: str):  # program: a linearize.Program
        self.program = program
        self.globals = globals_
        self.where = where
        self.locals = set(program.params) | {s.target for s in program.steps}
        self.taken = set(program.names)
        self.lines: list = []

    def fresh(self, base: str) -> str:
        name = fresh_name(self.taken, base)
        self.taken.add(name)
        return name

    def run(self, name: str, wrt: tuple, reductions: tuple) -> BackwardSource:
        params = self.program.params
        active = self.activity({params[i] for i in wrt})
        grads = tuple(self.fresh(f"grad_out{k}") for k in range(len(reductions)))
        extremes = tuple(
            self.fresh(f"extreme_out{k}") if r in ("max", "min") else None for k, r in enumerate(reductions)
        )
        adjoints: dict = {}
        for result, grad, extreme in zip(self.program.results, grads, extremes):
            if isinstance(result, ast.Name) and result.id in active:
                if extreme is not None:  # a max/min output: the gradient goes to the elements equal to it
                    grad = f"tl.where({result.id}.to({extreme}.dtype) == {extreme}, {grad}, 0.0)"
                adjoints.setdefault(result.id, []).append(grad)
        for step in reversed(self.program.steps):
            if step.target in adjoints and step.target in active:
                g = self.total(step.target, adjoints.pop(step.target))
                operands, rule, callee = self.rule(step)
                texts = [ast.unparse(o) for o in operands]
                for operand, adjoint in zip(operands, rule(*texts, step.target, g, callee)):
                    if adjoint is not None and isinstance(operand, ast.Name) and operand.id in active:
                        adjoints.setdefault(operand.id, []).append(adjoint)
        returned = [self.total(params[i], adjoints.get(params[i], [])) for i in wrt]
        reached = tuple(bool(adjoints.get(params[i])) for i in wrt)
        lines = ["# the forward, recomputed"] + step_lines(self.program.steps)
        lines += ["# the adjoints, last operation first"] + self.lines + [f"return {', '.join(returned)}"]
        all_params = list(params) + list(grads) + [e for e in extremes if e]
        backward_name = f"{name}_backward"
        return BackwardSource(backward_name, jit_source(backward_name, all_params, lines), reached)

    def total(self, target: str, contributions: list) -> str:
        """A name for the sum of `contributions` (a new line unless it is one name; zeros like `target` for none)."""
        if not contributions:
            return f"tl.zeros_like({target})"
        if len(contributions) == 1 and contributions[0].isidentifier():
            return contributions[0]
        name = self.fresh(f"grad_{target}")
        self.lines.append(f"{name} = {' + '.join(contributions)}")
        return name

    def activity(self, seeds: set) -> set:
        """Names that depend differentiably on the `seeds`, in one forward pass."""
        active = set(seeds)
        for step in self.program.steps:
            if any(o in active for o in names_in(step.value)) and self.rule(step) is not None:
                active.add(step.target)
        return active

    def rule(self, step: Step):
        """(operand atoms, their rule from autodiff/rules.py, the callee's text) for `step`; None for an
        operation passing no gradient; NotDifferentiable where there is no rule."""
        value = step.value
        if isinstance(value, (ast.Compare, ast.BoolOp)):
            return None
        if isinstance(value, (ast.Name, ast.Constant)):
            return [value], rules.copy_rule, ""
        if isinstance(value, (ast.BinOp, ast.UnaryOp)):
            if isinstance(value.op, rules.NO_GRADIENT_OPERATORS):
                return None
            if type(value.op) not in rules.OPERATORS:
                self.fail(step, f"the operator in `{ast.unparse(value)}`")
            operands = [value.left, value.right] if isinstance(value, ast.BinOp) else [value.operand]
            return operands, rules.OPERATORS[type(value.op)], ""
        if isinstance(value, ast.Call):
            return self.call_rule(step, value)
        self.fail(step, f"`{ast.unparse(value)}`")

    def call_rule(self, step: Step, call: ast.Call):
        if call.keywords:
            self.fail(step, f"keyword arguments in `{ast.unparse(call)}`")
        if isinstance(call.func, ast.Attribute) and root_name(call.func.value) in self.locals:
            method = rules.METHODS.get(call.func.attr)
            if method is None:
                self.fail(step, f"the method `.{call.func.attr}` in `{ast.unparse(call)}`")
            return [call.func.value] + list(call.args), method, ""
        obj = resolve(call.func, self.globals)
        if obj is None and root_name(call.func) in ("tl", "libdevice"):  # not resolved: taken by its spelling
            name = call.func.attr if isinstance(call.func, ast.Attribute) else None
        else:
            name = library_name(obj)
        if name in rules.ZERO_GRADIENT:
            return None
        function = rules.FUNCTIONS.get(name)
        if function is None:
            self.fail(step, f"the call `{ast.unparse(call)}` (no derivative rule for `{ast.unparse(call.func)}`)")
        return list(call.args), function, ast.unparse(call.func)

    def fail(self, step: Step, what: str):
        raise not_differentiable(self.where, step.line, what)


def library_name(obj) -> Optional[str]:
    """The name of a triton.language or libdevice function, else None."""
    target = getattr(obj, "fn", obj)  # a JITFunction (tl.sigmoid) wraps a plain function
    module = getattr(target, "__module__", None) or ""
    if callable(target) and (module.startswith("triton.language") or "libdevice" in module):
        return getattr(target, "__name__", None)
    return None


def resolve(chain, globals_: dict):
    """The object a name or attribute chain of globals (or builtins) names, None if it names none."""
    if isinstance(chain, ast.Name):
        return globals_.get(chain.id, getattr(builtins, chain.id, None))
    if isinstance(chain, ast.Attribute):
        base = resolve(chain.value, globals_)
        return None if base is None else getattr(base, chain.attr, None)
    return None

