"""The pointwise functions the benchmarks time (shared by bench.py and host_overhead.py)."""

import triton
import triton.language as tl

from tritonwise import pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add(x, y):
    return x + y


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add_alpha(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def neg(x):
    return -x


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def copy(x):
    return x


@pointwise_dynamic(promotion_methods=[((0, 1), "DEFAULT"), ((0, 1), "DEFAULT")])
@triton.jit
def polar(abs, angle):
    return abs * tl.cos(angle), abs * tl.sin(angle)


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")], reductions=["sum"])
@triton.jit
def squared_error_sum(x, y):
    d = x - y
    return d * d


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)])
@triton.jit
def row_sum_of_squares(x):
    return x * x
