"""layout.h's run_layout on the CPU, through a stand-in for cuLaunchKernel: a new shape of a call
class and stride classes whose record holds the kernel of its block and specialization is
launched from C with exactly the grid, kernel, index values and output layout of the plan
Python derives (layout_templates.py); any other new shape is refused,
launching nothing. GPU tests run it for real."""

import ctypes
from types import SimpleNamespace

import pytest
import torch
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from tests.support.c_path import Driver, _derive, _function_of, _launched_through_c, module  # noqa: F401 (a fixture)
from tests.support.layout_patterns import (
    _add_two,
    _inputs,
    add_alpha,
    any_patterns,
    contiguous,
    fma,
    full_rank_patterns,
)
from tritonwise import pointwise_dynamic
from tritonwise.plans import layout_templates
from tritonwise.plans.layout_templates import C_SCHEMES, _call_class, add_kernel, c_record, plain_operands
from tritonwise.runtime import hit_path
from tritonwise.runtime.arguments import call_signature

# A full operand beside one of lower rank or with size-1 dims (a bias, a scale): mostly nd tasks.
nd_patterns = st.integers(2, 4).flatmap(
    lambda rank: st.integers(1, rank).flatmap(
        lambda r: st.lists(st.booleans(), min_size=r, max_size=r).map(
            lambda ones: (rank, [contiguous(rank, [False] * rank), contiguous(r, ones)])
        )
    )
)


def _adder():
    return pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])(_add_two)


# (function, the arguments it takes from a pattern's inputs, its kernel's operand kinds)
FUNCTIONS = {
    "add_alpha": (add_alpha, lambda ts: (ts[0], ts[-1], 0.5), b"ppfp"),
    "fma (three inputs, two outputs)": (fma, lambda ts: (ts[0], ts[1 % len(ts)], ts[-1]), b"ppppp"),
}


def _case(patterns, largest):
    three = st.lists(st.lists(st.integers(2, largest), min_size=4, max_size=4), min_size=3, max_size=3)
    return st.tuples(patterns, three)


# Broadcasts of C-contiguous tensors (mostly nd tasks), and permuted, sliced, expanded operands.
cases = _case(nd_patterns, 40) | _case(any_patterns, 12) | _case(full_rank_patterns, 12)


@pytest.mark.parametrize("function", list(FUNCTIONS.values()), ids=list(FUNCTIONS))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=cases, registered=st.booleans())
def test_the_c_path_launches_what_the_derived_plan_would(module, function, case, registered):
    make, pick, kinds = function
    pattern, (first, second, third) = case
    fn, driver = make(), Driver(kinds)
    template_args, seen_args, args = (pick(_inputs(pattern, sizes)) for sizes in (first, second, third))
    outs = (None,) * len(fn._out_index)
    template = fn.plan(template_args, outs, collapse=True)
    fn.planner.new_shapes.remember(call_signature(template_args), template)
    seen = _derive(fn, seen_args)
    assume(seen is not None and seen.task.tiling.scheme in C_SCHEMES and seen.task.rank)
    _launched_through_c(seen, driver)
    record = c_record(seen, tuple(range(len(seen.index_args))), fn.config)
    assert record is not None
    add_kernel(record, seen)
    expected = _derive(fn, args)
    if expected is not None and registered:
        _launched_through_c(expected, driver)
        add_kernel(record, expected)
    operands = plain_operands(call_signature(args))
    records = {_call_class(operands): {seen.task.stride_classes: [record]}} if operands else {}
    driver.n_values = len(seen.index_args)
    driver.index_type = ctypes.c_int32 if seen.task.index_bits == 32 else ctypes.c_int64
    out = module.hit({}, args, hit_path.MISS, {}, records)
    same_kernel = expected is not None and (
        expected.task.tiling.block == seen.task.tiling.block
        and all((a % 16 == 0, a == 1) == (b % 16 == 0, b == 1) for a, b in zip(expected.index_args, seen.index_args))
    )
    event(seen.task.tiling.scheme)
    event("refused" if expected is None else "served" if registered or same_kernel else "no kernel for it")
    if expected is None or not (registered or same_kernel):
        assert type(out) is tuple and out[0] is hit_path.MISS and driver.launches == []
        return
    outputs = out if isinstance(out, tuple) else (out,)
    assert len(outputs) == len(expected.out_dtypes) and all(isinstance(o, torch.Tensor) for o in outputs)
    for o, strides, dtype in zip(outputs, expected.out_strides, expected.out_dtypes):
        assert (o.shape, o.stride(), o.dtype) == (expected.out_shape, strides, dtype)
    ((kernel, grid, threads, values),) = driver.launches
    assert grid == (*expected.grid, 1, 1)[:3] and threads == 32 * expected.num_warps
    assert kernel == _function_of(seen if same_kernel else expected)  # the first kernel of its key stays
    operands = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
    assert values == [*operands, *(o.data_ptr() for o in outputs), *expected.index_args]


def test_threads_launch_while_records_grow(module):
    """Four threads call hit() on new shapes while a fifth publishes the kernels they need: every
    call is served with its plan's launch or refused, and nothing crashes (the stand-in driver
    and the stream query call back into Python, so threads interleave inside hit())."""
    import threading

    fn, driver = add_alpha(), Driver()
    make = lambda n: (torch.randn(n, 64), torch.randn(64, n).t(), 0.5)  # noqa: E731
    template = fn.plan(make(80), (None,), collapse=True)
    fn.planner.new_shapes.remember(call_signature(make(80)), template)
    seen = _derive(fn, make(96))
    _launched_through_c(seen, driver)
    record = c_record(seen, (), fn.config)
    add_kernel(record, seen)
    records = {_call_class(plain_operands(call_signature(make(96)))): {seen.task.stride_classes: [record]}}
    driver.n_values = len(seen.index_args)
    shapes = [make(n) for n in range(16, 400, 16)]
    plans = [_derive(fn, args) for args in shapes]
    assert None not in plans  # one layout class throughout
    failures = []

    def publish():
        for plan in plans:
            _launched_through_c(plan, driver)
            add_kernel(record, plan)

    def call(offset):
        try:
            for k in range(300):
                args, plan = shapes[(k + offset) % len(shapes)], plans[(k + offset) % len(shapes)]
                out = module.hit({}, args, hit_path.MISS, {}, records)
                if not (type(out) is tuple and out[0] is hit_path.MISS):
                    assert (out.shape, out.stride()) == (plan.out_shape, plan.out_strides[0])
        except Exception as e:  # reported below: an assertion in a thread does not fail the test
            failures.append(e)

    threads = [threading.Thread(target=call, args=(k,)) for k in range(4)] + [threading.Thread(target=publish)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert len(driver.launches) > 0


def test_a_task_past_int32_is_launched_with_64_bit_index_values(module):
    """int8 operands broadcast from one element over more than 2**31 elements (the outputs are
    allocated but never touched): the record's index kind is "l", and hit() packs 8-byte values."""
    fn, driver = _adder(), Driver(b"ppp")
    make = lambda rows: (torch.zeros(1, 1, dtype=torch.int8).expand(rows, 4096), torch.zeros(4096, dtype=torch.int8))  # noqa: E731
    rows = [2**19 + 16 * k for k in (1, 2, 3)]  # 2**31 elements and more
    template_args, seen_args, args = (make(r) for r in rows)
    fn.planner.new_shapes.remember(call_signature(template_args), fn.plan(template_args, (None,), collapse=True))
    seen, expected = _derive(fn, seen_args), _derive(fn, args)
    assert seen.task.index_bits == expected.task.index_bits == 64
    for plan in (seen, expected):
        _launched_through_c(plan, driver)
    record = c_record(seen, (), fn.config)
    add_kernel(record, expected)
    assert record.index_kind == "l"
    driver.n_values, driver.index_type = len(seen.index_args), ctypes.c_int64
    records = {_call_class(plain_operands(call_signature(args))): {seen.task.stride_classes: [record]}}
    out = module.hit({}, args, hit_path.MISS, {}, records)
    assert (out.shape, out.stride(), out.dtype) == (expected.out_shape, expected.out_strides[0], torch.int8)
    ((_, grid, _, values),) = driver.launches
    assert values == [args[0].data_ptr(), args[1].data_ptr(), out.data_ptr(), *expected.index_args]
    assert grid == (*expected.grid, 1, 1)[:3]


PUBLISHED_LAYOUTS = {
    "transposed (tile2d)": lambda n: (torch.randn(n, 64), torch.randn(64, n).t(), 0.5),
    "broadcast (nd)": lambda n: (torch.randn(4, n, 64), torch.randn(n, 1), 0.5),
    "contiguous, in place (flat)": lambda n: (lambda x: (x, torch.randn(64 * n + 7), 0.5, x))(torch.randn(64 * n + 7)),
}


@pytest.mark.parametrize("make", list(PUBLISHED_LAYOUTS.values()), ids=list(PUBLISHED_LAYOUTS))
@pytest.mark.parametrize("setting, published", [("1", True), ("0", False)])
def test_publishing_follows_TRITONWISE_C_NEW_SHAPES(monkeypatch, setting, published, make):
    """A derived plan that has launched publishes its record with its kernel, unless
    TRITONWISE_C_NEW_SHAPES=0."""
    monkeypatch.setenv("TRITONWISE_C_NEW_SHAPES", setting)
    # the generated files specialize no index argument (an interpreted plan has no launcher to ask)
    monkeypatch.setattr(layout_templates, "Rebinding", lambda plan: SimpleNamespace(value_positions=lambda: ()))
    fn, driver = add_alpha(), Driver()
    keyed = lambda call: (call[:3], call[3:])  # noqa: E731  (arguments, given outputs)
    (args, outs), (seen_args, seen_outs) = keyed(make(80)), keyed(make(96))
    fn.planner.new_shapes.remember(call_signature(args, outs), fn.plan(args, outs or (None,), collapse=True))
    seen = fn.planner.new_shapes.layouts.derive(call_signature(seen_args, seen_outs), torch.get_default_dtype())
    _launched_through_c(seen, driver)
    fn.planner.new_shapes.layouts.publish(call_signature(seen_args, seen_outs), seen)
    records = [r for by_classes in fn.planner.new_shapes.layouts.c_records.values() for rs in by_classes.values() for r in rs]
    assert bool(records) == published and all(r.kernels for r in records)


# Calls giving an output, each a function of the size n: (x, y, alpha) and the output. In place
# (the output is x), out= of another layout, and what layout.h must refuse as the analysis does:
# an output with a stride-0 dim, one of another shape, one larger than the inputs' shape.
GIVEN_OUTPUT_CALLS = {
    "in place, += a transposed operand (tile2d)": lambda n: _in_place(torch.randn(n, 65), torch.randn(65, n).t()),
    "in place, += a broadcast bias (nd)": lambda n: _in_place(torch.randn(4, n, 64), torch.randn(n, 1)),
    "in place, contiguous (flat)": lambda n: _in_place(torch.randn(64 * n + 7), torch.randn(64 * n + 7)),
    "out= transposed": lambda n: ((torch.randn(n, 65), torch.randn(n, 65), 0.5), torch.empty(65, n).t()),
}
REFUSED = {
    "out= with a stride-0 dim": lambda n: (
        (torch.randn(n, 65), torch.randn(n, 65), 0.5),
        torch.empty(n, 1).expand(n, 65),
    ),
    "out= of another shape": lambda n: ((torch.randn(n, 65), torch.randn(n, 65), 0.5), torch.empty(n, 64)),
    "out= larger than the inputs": lambda n: ((torch.randn(1, 65), torch.randn(1, 65), 0.5), torch.empty(n, 65)),
}


def _in_place(x, y):
    return (x, y, 0.5), x


def _given(fn, args, out):
    """The plan LayoutTemplates derives for the call (args, out0=out), or None."""
    return fn.planner.new_shapes.layouts.derive(call_signature(args, (out,)), torch.get_default_dtype())


@pytest.mark.parametrize("refused", [None, *REFUSED])
@pytest.mark.parametrize("call", list(GIVEN_OUTPUT_CALLS))
def test_a_new_shape_given_its_output_launches_on_it_as_the_derived_plan_would(module, call, refused):
    make, driver, fn = GIVEN_OUTPUT_CALLS[call], Driver(), add_alpha()
    template_call, seen_call = make(80), make(96)
    (template_args, template_out) = template_call
    fn.planner.new_shapes.remember(
        call_signature(template_args, (template_out,)), fn.plan(template_args, (template_out,), True)
    )
    seen = _given(fn, *seen_call)
    assert seen is not None
    _launched_through_c(seen, driver)
    record = c_record(seen, tuple(range(len(seen.index_args))), fn.config)
    expected = _given(fn, *make(112))
    _launched_through_c(expected, driver)
    for plan in (seen, expected):
        add_kernel(record, plan)
    args, out = make(112) if refused is None else REFUSED[refused](112)
    key = call_signature(args, (out,))
    records = {_call_class(*layout_templates.plain_call(key, 3)): {seen.task.stride_classes: [record]}}
    driver.n_values = len(seen.index_args)
    result = module.hit({}, args, hit_path.MISS, {}, records, (out,))
    if refused is not None or _given(fn, args, out) is None:
        assert _given(fn, args, out) is None  # Python refuses it too
        assert result == (hit_path.MISS, key) and driver.launches == []
        return
    assert result is out
    ((_, grid, threads, values),) = driver.launches
    assert grid == (*expected.grid, 1, 1)[:3] and threads == 32 * expected.num_warps
    assert values == [args[0].data_ptr(), args[1].data_ptr(), 0.5, out.data_ptr(), *expected.index_args]


def _reducer(kind: str, dims: tuple, keepdim: bool):
    """sum or max of x + y along `dims` of the broadcast shape."""
    return pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")], reductions=[(kind, dims, keepdim)])(_add_two)


def _same_layout(a, b) -> bool:
    """Whether two plans' tasks are of one layout class as layout.h tells them apart."""
    ta, tb = a.task, b.task
    return (ta.split, tb.split) == (None, None) and (ta.stride_classes, ta.tiling.scheme, ta.tiling.m_dim) == (
        tb.stride_classes,
        tb.tiling.scheme,
        tb.tiling.m_dim,
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=_case(any_patterns | full_rank_patterns, 40), picks=st.data(), registered=st.booleans())
def test_a_new_shape_of_a_reduction_along_dims_launches_what_the_analysis_plans(module, case, picks, registered):
    """A record published from the analysis's plan of one shape (a reduction keeps no Python
    template) serves another shape with the analysis's grid, index values and output layout
    wherever the two tasks share the layout class and the kernel is registered; elsewhere (another
    scheme, split dim, alignment or index width, a split, no kernel) it launches nothing."""
    pattern, (first, _, third) = case
    template_args, args = ((ts[0], ts[-1]) for ts in (_inputs(pattern, first), _inputs(pattern, third)))
    rank = max(t.dim() for t in args)
    assume(rank > 0)
    dims = tuple(sorted(picks.draw(st.sets(st.integers(0, rank - 1), min_size=1))))
    fn = _reducer(picks.draw(st.sampled_from(["sum", "max"])), dims, picks.draw(st.booleans()))
    driver = Driver(b"ppp")
    template = fn.plan(template_args, (None,), collapse=True)
    assume(template.task.split is None)
    _launched_through_c(template, driver)
    record = c_record(template, tuple(range(len(template.index_args))), fn.config, fn.planner.row_rule(args, (), template))
    add_kernel(record, template)
    expected = fn.plan(args, (None,), collapse=True)
    same_layout = _same_layout(template, expected) and (record.aligned, record.index_kind) == (
        expected.task.aligned,
        layout_templates.index_kind(expected.task),
    )
    if same_layout and registered:
        _launched_through_c(expected, driver)
        add_kernel(record, expected)
    records = {_call_class(plain_operands(call_signature(args))): {template.task.stride_classes: [record]}}
    driver.n_values = len(template.index_args)
    driver.index_type = ctypes.c_int32 if template.task.index_bits == 32 else ctypes.c_int64
    out = module.hit({}, args, hit_path.MISS, {}, records)
    same_kernel = same_layout and (
        expected.task.tiling.block == template.task.tiling.block
        and all(
            (a % 16 == 0, a == 1) == (b % 16 == 0, b == 1) for a, b in zip(expected.index_args, template.index_args)
        )
    )
    event(f"{template.task.tiling.scheme}: " + ("served" if same_layout and (registered or same_kernel) else "refused"))
    if not (same_layout and (registered or same_kernel)):
        assert type(out) is tuple and out[0] is hit_path.MISS and driver.launches == []
        return
    assert (out.shape, out.stride(), out.dtype) == (expected.out_shape, expected.out_strides[0], expected.out_dtypes[0])
    ((kernel, grid, threads, values),) = driver.launches
    assert grid == (*expected.grid, 1, 1)[:3] and threads == 32 * expected.num_warps
    assert kernel == _function_of(template if same_kernel else expected)
    assert values == [args[0].data_ptr(), args[1].data_ptr(), out.data_ptr(), *expected.index_args]


def test_a_new_shape_the_split_rule_would_cut_is_left_to_python(module):
    """(512, 8192) rows do not split; (4, 8192) ones would (8 parts): the record of the first
    must not serve the second."""
    fn, driver = _reducer("sum", (1,), False), Driver(b"ppp")
    make = lambda rows: (torch.randn(rows, 8192), torch.randn(rows, 8192))  # noqa: E731
    template = fn.plan(make(512), (None,), collapse=True)
    assert template.task.split is None and fn.plan(make(4), (None,), collapse=True).task.split is not None
    _launched_through_c(template, driver)
    record = c_record(template, tuple(range(len(template.index_args))), fn.config, fn.planner.row_rule(make(4), (), template))
    add_kernel(record, template)
    records = {_call_class(plain_operands(call_signature(make(4)))): {template.task.stride_classes: [record]}}
    driver.n_values = len(template.index_args)
    assert module.hit({}, make(4), hit_path.MISS, {}, records)[0] is hit_path.MISS and driver.launches == []
    assert module.hit({}, make(256 + 16), hit_path.MISS, {}, records) is not None and len(driver.launches) == 1


ROW_CASES = {  # (kind, dims, keepdim, inputs of size n, the two sizes): issue 16's shapes, smaller
    "sum of a long last dim (row_looped)": ("sum", (1,), False, lambda n: (torch.randn(n, 4096),) * 2, (320, 400)),
    "few long rows, then fewer (row_looped, the pipelined block)": (
        "sum",
        (1,),
        False,
        lambda n: (torch.randn(n, 4096),) * 2,
        (320, 240),
    ),
    "few very long rows, then fewer (row_looped, the wider pipelined block)": (
        "sum",
        (1,),
        False,
        lambda n: (torch.randn(n, 32768),) * 2,
        (160, 120),
    ),
    "sum over (0, 2) (row_looped)": ("sum", (0, 2), True, lambda n: (torch.randn(64, n, 64),) * 2, (272, 288)),
    "max over dim 0 (column_looped)": ("max", (0,), False, lambda n: (torch.randn(n, 512),) * 2, (1024, 1040)),
    "sum of a short last dim, broadcast (row_persistent)": (
        "sum",
        (-1,),
        True,
        lambda n: (torch.randn(n, 1, 128), torch.randn(3, 128)),
        (80, 96),
    ),
}


@pytest.mark.parametrize("case", list(ROW_CASES))
def test_row_schemes_launch_new_shapes_as_the_analysis_plans_them(module, case):
    kind, dims, keepdim, make, (first, second) = ROW_CASES[case]
    fn, driver = _reducer(kind, dims, keepdim), Driver(b"ppp")
    template, expected = (fn.plan(make(n), (None,), collapse=True) for n in (first, second))
    assert _same_layout(template, expected) and template.task.tiling.scheme in case
    for plan in (template, expected):
        _launched_through_c(plan, driver)
    record = c_record(template, tuple(range(len(template.index_args))), fn.config, fn.planner.row_rule(make(1), (), template))
    for plan in (template, expected):
        add_kernel(record, plan)
    args = make(second)
    records = {_call_class(plain_operands(call_signature(args))): {template.task.stride_classes: [record]}}
    driver.n_values = len(template.index_args)
    out = module.hit({}, args, hit_path.MISS, {}, records)
    assert (out.shape, out.stride()) == (expected.out_shape, expected.out_strides[0])
    ((function, grid, threads, values),) = driver.launches
    assert grid == (*expected.grid, 1, 1)[:3] and threads == 32 * expected.num_warps
    of_block = {_function_of(p) for p in (template, expected) if p.task.tiling.block == expected.task.tiling.block}
    assert function in of_block  # a kernel of the block the analysis picked
    assert values == [args[0].data_ptr(), args[1].data_ptr(), out.data_ptr(), *expected.index_args]


def test_a_list_of_records_serves_shapes_of_each_alignment(module):
    """Aligned and unaligned shapes of one call class and stride classes have a record each (a
    list, as publish keeps them): each new shape is launched from the record of its layout."""
    fn, driver = _adder(), Driver(b"ppp")
    make = lambda n: (torch.randn(n, 256), torch.randn(256, n).t())  # noqa: E731
    plans = {n: fn.plan(make(n), (None,), collapse=True) for n in (80, 100, 112, 113)}
    assert len({plans[n].task.stride_classes for n in plans}) == 1
    for plan in plans.values():
        _launched_through_c(plan, driver)
    records = [c_record(plans[n], tuple(range(len(plans[n].index_args))), fn.config) for n in (80, 100)]
    for record, n in ((records[0], 112), (records[1], 113)):
        add_kernel(record, plans[n])
    table = {_call_class(plain_operands(call_signature(make(112)))): {plans[80].task.stride_classes: records}}
    for n in (112, 113):
        driver.launches.clear()
        driver.n_values = len(plans[n].index_args)
        args = make(n)
        out = module.hit({}, args, hit_path.MISS, {}, table)
        ((_, grid, _, values),) = driver.launches
        assert plans[n].task.aligned == (n == 112) and grid == (*plans[n].grid, 1, 1)[:3]
        assert values == [args[0].data_ptr(), args[1].data_ptr(), out.data_ptr(), *plans[n].index_args]
