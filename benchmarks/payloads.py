"""The pointwise functions the benchmarks time, shared by every script; `functions()` makes a
new set with no plans yet (sweep.py plans each tiling variant afresh)."""

from types import SimpleNamespace

import triton
import triton.language as tl

from tritonwise import pointwise_dynamic

OPTIONS = {  # each function's pointwise_dynamic arguments
    "add": dict(promotion_methods=[(0, 1, "DEFAULT")]),
    "add_alpha": dict(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")]),
    "neg": dict(promotion_methods=[(0, "DEFAULT")]),
    "copy": dict(promotion_methods=[(0, "DEFAULT")]),
    "polar": dict(promotion_methods=[((0, 1), "DEFAULT"), ((0, 1), "DEFAULT")]),
    "squared_error_sum": dict(promotion_methods=[(0, 1, "DEFAULT")], reductions=["sum"]),
    "row_sum_of_squares": dict(promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)]),
}


@pointwise_dynamic(**OPTIONS["add"])
@triton.jit
def add(x, y):
    return x + y


@pointwise_dynamic(**OPTIONS["add_alpha"])
@triton.jit
def add_alpha(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(**OPTIONS["neg"])
@triton.jit
def neg(x):
    return -x


@pointwise_dynamic(**OPTIONS["copy"])
@triton.jit
def copy(x):
    return x


@pointwise_dynamic(**OPTIONS["polar"])
@triton.jit
def polar(abs, angle):
    return abs * tl.cos(angle), abs * tl.sin(angle)


@pointwise_dynamic(**OPTIONS["squared_error_sum"])
@triton.jit
def squared_error_sum(x, y):
    d = x - y
    return d * d


@pointwise_dynamic(**OPTIONS["row_sum_of_squares"])
@triton.jit
def row_sum_of_squares(x):
    return x * x


def functions() -> SimpleNamespace:
    """A new function of each payload above: no plans, memos or shape programs yet."""
    return SimpleNamespace(**{name: pointwise_dynamic(globals()[name].payload, **kw) for name, kw in OPTIONS.items()})
