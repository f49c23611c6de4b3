"""Symbolic integers: run the analysis once on a call's sizes and strides and keep, as data, both
what it computed and every comparison it made.

A `Sym` holds a concrete value and the expression that computed it from the call's leaves (each
tensor's sizes and strides). Arithmetic builds expression nodes; any question asked of a value
(comparison, truth, index, hash) answers with the concrete value and records a guard, so a later
call whose leaves satisfy every guard takes the same branches. runtime/program.h evaluates a
`Program` on a new call's leaves and decides nothing itself.
"""

from __future__ import annotations

import operator
from typing import Sequence

# Node opcodes (node = (op, a, b); a and b are earlier nodes unless said otherwise). Shared with
# program.h through Program.opcodes(), never written twice.
LEAF, CONST, ADD, SUB, MUL, FLOORDIV, MOD, ABS = range(8)
# Guard opcodes (guard = (op, a, b): "node a OP node b" held when the program was traced).
LT, LE, EQ, NE = range(4)

_ARITHMETIC = {ADD: operator.add, SUB: operator.sub, MUL: operator.mul, FLOORDIV: operator.floordiv, MOD: operator.mod}
# a comparison -> the guard recording its answer, (opcode, operands swapped) where it held and
# where it did not: a > b is b < a; not a < b is b <= a
_GUARDS = {
    operator.lt: ((LT, False), (LE, True)),
    operator.le: ((LE, False), (LT, True)),
    operator.gt: ((LT, True), (LE, False)),
    operator.ge: ((LE, True), (LT, False)),
    operator.eq: ((EQ, False), (NE, False)),
    operator.ne: ((NE, False), (EQ, False)),
}


class Tracer:
    """The nodes and guards of one traced analysis."""

    def __init__(self):
        self.nodes: list = []  # (op, a, b)
        self.guards: list = []  # (op, a, b)
        self._ids: dict = {}  # node -> its index
        self._guarded: set = set()

    def leaves(self, values: Sequence[int], first: int) -> tuple:
        """Syms for the leaves first, first + 1, ... holding `values`."""
        return tuple(Sym(v, self._node(LEAF, first + k, 0), self) for k, v in enumerate(values))

    def _node(self, op: int, a: int, b: int) -> int:
        node = (op, a, b)
        found = self._ids.get(node)
        if found is None:
            found = self._ids[node] = len(self.nodes)
            self.nodes.append(node)
        return found

    def node_of(self, value) -> int:
        """The node computing `value`: a Sym's own, a constant's CONST node."""
        if isinstance(value, Sym):
            return value._node
        if type(value) is bool or not isinstance(value, int):
            raise TypeError(f"a traced integer met {type(value).__name__} {value!r}")
        return self._node(CONST, int(value), 0)

    def compare(self, how, left, right) -> bool:
        """`how(left, right)` on the concrete values, its answer recorded as a guard."""
        answer = how(value_of(left), value_of(right))
        op, swap = _GUARDS[how][0 if answer else 1]
        a, b = self.node_of(left), self.node_of(right)
        guard = (op, b, a) if swap else (op, a, b)
        if guard not in self._guarded:
            self._guarded.add(guard)
            self.guards.append(guard)
        return answer

    def arithmetic(self, op: int, left, right):
        folded = _folded(op, left, right)
        if folded is not None:
            return folded
        value = _ARITHMETIC[op](value_of(left), value_of(right))  # a zero divisor raises here
        if op in (FLOORDIV, MOD) and isinstance(right, Sym):
            self.compare(operator.ne, right, 0)
        return Sym(value, self._node(op, self.node_of(left), self.node_of(right)), self)


def _folded(op: int, left, right):
    """The result without a node where an identity gives it (x + 0, x * 1, x * 0, x // 1)."""
    if op in (ADD, SUB) and type(right) is int and right == 0:
        return left
    if op == ADD and type(left) is int and left == 0:
        return right
    if op == MUL:
        for one, other in ((left, right), (right, left)):
            if type(one) is int and one == 1:
                return other
            if type(one) is int and one == 0:
                return 0
    if op == FLOORDIV and type(right) is int and right == 1:
        return left
    return None


def value_of(x) -> int:
    return x._value if isinstance(x, Sym) else x


def _operators(op) -> tuple:
    """Sym's `x <op> y` and reflected `y <op> x` methods."""
    return (lambda self, other: self._binary(op, other)), (lambda self, other: self._binary(op, other, True))


def _comparison(how):
    return lambda self, other: self._compare(how, other)


class Sym:
    """An integer computed from a call's leaves (see the module docstring)."""

    __slots__ = ("_value", "_node", "_tracer")

    def __init__(self, value: int, node: int, tracer: Tracer):
        self._value, self._node, self._tracer = value, node, tracer

    def _binary(self, op, other, reflected=False):
        if not isinstance(other, (int, Sym)) or type(other) is bool:
            return NotImplemented
        left, right = (other, self) if reflected else (self, other)
        return self._tracer.arithmetic(op, left, right)

    __add__, __radd__ = _operators(ADD)
    __sub__, __rsub__ = _operators(SUB)
    __mul__, __rmul__ = _operators(MUL)
    __floordiv__, __rfloordiv__ = _operators(FLOORDIV)
    __mod__, __rmod__ = _operators(MOD)

    def __neg__(self):
        return self._tracer.arithmetic(SUB, 0, self)

    def __pos__(self):
        return self

    def __abs__(self):
        tracer = self._tracer
        return Sym(abs(self._value), tracer._node(ABS, self._node, 0), tracer)

    def _compare(self, how, other):
        if not isinstance(other, (int, Sym)) or type(other) is bool:
            return NotImplemented
        return self._tracer.compare(how, self, other)

    __lt__, __le__, __gt__ = _comparison(operator.lt), _comparison(operator.le), _comparison(operator.gt)
    __ge__, __eq__, __ne__ = _comparison(operator.ge), _comparison(operator.eq), _comparison(operator.ne)

    def __bool__(self):
        return self._tracer.compare(operator.ne, self, 0)

    def __index__(self):
        """The concrete value, specialized: the program serves only calls where it is the same."""
        self._tracer.compare(operator.eq, self, self._value)
        return self._value

    __int__ = __index__

    def __hash__(self):
        return hash(self.__index__())

    def __repr__(self):  # for messages only: reading it decides nothing
        return f"Sym({self._value})"
