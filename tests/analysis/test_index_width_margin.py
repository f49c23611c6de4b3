"""The index-width margin where a plan is derived instead of analysed: a new shape whose numel
plus one block fits int32 is derived from a small int32 template of its class, equal to the
analysis's plan; one step past the margin the analysis's plan is int64 (another layout class)
and none is derived. Both template kinds: contiguous calls (new_shapes.Templates, its own copy
of the margin) and calls of any layout (layout_templates.LayoutTemplates, through retile).
And layout.h's run_layout, the C hit path's copy, serving up to it and refusing past it. Shapes on
the meta device where nothing launches. analysis/test_analysis.py holds the margin itself."""

import math

import torch
import triton

from tests.support.c_path import Driver, _derive, _launched_through_c, module  # noqa: F401 (a fixture)
from tritonwise import pointwise_dynamic
from tritonwise.analysis.tiling import INT32_LIMIT
from tritonwise.plans.layout_templates import _call_class, add_kernel, c_record, plain_operands
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


def test_the_c_path_serves_up_to_the_margin_and_refuses_past_it(module):
    """layout.h's run_layout (its own copy of the margin) launches a shape at the margin with the
    int32 record's kernel, as Python derives it, and refuses one step past it, launching nothing.
    int8 operands broadcast from one element (16 columns): the output at the margin is allocated,
    never touched."""
    fn, driver = _add(), Driver(b"ppp")
    one = torch.zeros(1, 1, dtype=torch.int8)
    rows = lambda n: (one.expand(n, 16), torch.zeros(16, dtype=torch.int8))  # noqa: E731
    _remember(fn, rows(64))
    seen = _derive(fn, rows(96))
    k = (INT32_LIMIT - _area(fn, rows(2**27 - 2**10))) // 16
    fits, past = _derive(fn, rows(k)), fn.plan(rows(k + 1), (None,), collapse=True)
    assert (fits.task.index_bits, past.task.index_bits, past.task.tiling.block) == (32, 64, fits.task.tiling.block)
    assert past.numel + math.prod(past.task.tiling.block) == INT32_LIMIT + 1
    for plan in (seen, fits):
        _launched_through_c(plan, driver)
    record = c_record(seen, (), fn.config)
    add_kernel(record, fits)
    driver.n_values = len(seen.index_args)
    records = {_call_class(plain_operands(call_signature(rows(k)))): {seen.task.stride_classes: [record]}}
    out = module.hit({}, rows(k), hit_path.MISS, {}, records)
    assert (out.shape, out.stride()) == (fits.out_shape, fits.out_strides[0])
    ((_, _, _, values),) = driver.launches
    assert values[3:] == list(fits.index_args)
    refused = module.hit({}, rows(k + 1), hit_path.MISS, {}, records)
    assert type(refused) is tuple and refused[0] is hit_path.MISS and len(driver.launches) == 1
