"""The index-width margin where a new shape stops being served by a shape program traced from
a small int32 shape of its class (plans/shape_programs.py): up to it, the program launches it as
the analysis plans it; one step past it the analysis's plan is int64 (another branch) and the
program refuses it. analysis/test_analysis.py holds the margin itself."""

import math

import torch
import triton

from tests.support.c_path import Driver, Table, check_launch, module  # noqa: F401 (a fixture)
from tritonwise import pointwise_dynamic
from tritonwise.analysis.tiling import INT32_LIMIT


@triton.jit
def _add_two(x, y):
    return x + y


def _add():
    return pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])(_add_two)


def _area(fn, args) -> int:
    return math.prod(fn.plan(args, (None,), collapse=True).task.tiling.block)


def test_a_shape_program_serves_up_to_the_margin_and_refuses_past_it(module):
    """The program traced from a shape of int32 indexing launches a shape at the margin as the
    analysis plans it and refuses one step past it (64-bit indexing), launching nothing. int8
    operands broadcast from one element (16 columns): the output at the margin is allocated,
    never touched."""
    fn = _add()
    table = Table(module, fn, Driver(b"ppp"))
    one = torch.zeros(1, 1, dtype=torch.int8)
    rows = lambda n: (one.expand(n, 16), torch.zeros(16, dtype=torch.int8))  # noqa: E731
    k = (INT32_LIMIT - _area(fn, rows(2**27 - 2**10))) // 16
    fits, past = fn.plan(rows(k), (None,), collapse=True), fn.plan(rows(k + 1), (None,), collapse=True)
    assert (fits.task.index_bits, past.task.index_bits, past.task.tiling.block) == (32, 64, fits.task.tiling.block)
    assert past.numel + math.prod(past.task.tiling.block) == INT32_LIMIT + 1
    table.add(rows(k - 16))  # the same specialization classes as k's
    assert check_launch(table, rows(k), None, fits)
    assert table.call(rows(k + 1), None, past)[1] is None
