"""The index-width margin where a plan is derived instead of analysed: a new shape whose numel
plus one block fits int32 is derived from a small int32 template of its class, equal to the
analysis's plan; one step past the margin the analysis's plan is int64 (another layout class)
and none is derived. Both template kinds: contiguous calls (new_shapes.Templates, its own copy
of the margin) and calls of any layout (layout_templates.LayoutTemplates, through retile).
And a shape program (plans/shape_programs.py) serving up to it and refusing past it. Shapes on
the meta device where nothing launches. analysis/test_analysis.py holds the margin itself."""

import math

import torch
import triton

from tests.support.c_path import Driver, Table, check_launch, module  # noqa: F401 (a fixture)
from tritonwise import pointwise_dynamic
from tritonwise.analysis.tiling import INT32_LIMIT
from tritonwise.runtime import hit_path
from tritonwise.runtime.arguments import call_signature


@triton.jit
def _add_two(x, y):
    return x + y


def _add():
    return pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])(_add_two)


def _remember(fn, args):
    """Offer the analysis's plan of `args` as a template (what a first call of its class does)."""
    fn.planner.new_shapes.remember(call_signature(args), fn.plan(args, (None,), collapse=True))


def _area(fn, args) -> int:
    return math.prod(fn.plan(args, (None,), collapse=True).task.tiling.block)


def _derived_and_analysed(fn, templates, args):
    derived = templates.derive(call_signature(args), torch.get_default_dtype())
    return derived, fn.plan(args, (None,), collapse=True)


def test_contiguous_templates_derive_up_to_the_margin_and_not_past_it():
    fn = _add()
    contiguous = lambda n: (torch.empty(n, device="meta"), torch.empty(n, device="meta"))  # noqa: E731
    _remember(fn, contiguous(64))  # numel a multiple of 16: the aligned class
    _remember(fn, contiguous(65))
    fits = INT32_LIMIT - _area(fn, contiguous(INT32_LIMIT - 2**20 + 1))  # odd: the unaligned template's
    past = INT32_LIMIT - _area(fn, contiguous(INT32_LIMIT - 2**20)) + 1  # a multiple of 16: the aligned one's
    derived, analysed = _derived_and_analysed(fn, fn.planner.new_shapes.contiguous, contiguous(fits))
    assert analysed.task.index_bits == derived.task.index_bits == 32
    same = ("index_args", "grid", "constexprs", "numel")
    assert [getattr(derived, f) for f in same] == [getattr(analysed, f) for f in same]
    derived, analysed = _derived_and_analysed(fn, fn.planner.new_shapes.contiguous, contiguous(past))
    assert (derived, analysed.task.index_bits) == (None, 64)


def test_layout_templates_derive_up_to_the_margin_and_not_past_it():
    """A transposed add (tile2d) of 16k rows of 16: k steps numel by 256, a multiple of every
    block, so one step past the fitting k numel plus one block is INT32_LIMIT + 1."""
    fn = _add()
    rows = lambda k: (  # noqa: E731
        torch.empty(16 * k, 16, device="meta"),
        torch.empty(16, 16 * k, device="meta").t(),
    )
    _remember(fn, rows(4))
    k = (INT32_LIMIT - _area(fn, rows(2**23 - 2**10))) // 256
    derived, analysed = _derived_and_analysed(fn, fn.planner.new_shapes.layouts, rows(k))
    assert analysed.task.tiling.scheme == "tile2d"
    assert derived == analysed and derived.task.index_bits == 32
    derived, analysed = _derived_and_analysed(fn, fn.planner.new_shapes.layouts, rows(k + 1))
    assert analysed.numel + math.prod(analysed.task.tiling.block) == INT32_LIMIT + 1
    assert (derived, analysed.task.index_bits) == (None, 64)


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
