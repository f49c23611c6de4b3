"""Shape programs (plans/shape_programs.py, runtime/program.h) on the CPU, through a stand-in for
cuLaunchKernel: a program traced from the analysis's plan of one shape launches another shape
only with exactly what the analysis plans for that shape (grid, index values, output layout) and
only where the analysis would run the same kernel (layout class, block, Triton's specialization
of the index values); anything else launches nothing. GPU tests run it for real."""

import operator
import random
import threading
from types import SimpleNamespace

import pytest
import torch
import triton
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from tests.support.c_path import Driver, Table, _launched_through_c, check_launch, module  # noqa: F401 (a fixture)
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
from tritonwise.plans import symbolic
from tritonwise.analysis import tiling
from tritonwise.plans import shape_programs
from tritonwise.schemes import registry
from tritonwise.schemes.nd import Nd
from tritonwise.plans.shape_programs import ShapePrograms
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

# (function, the arguments it takes from a pattern's inputs, its kernel's operand kinds)
FUNCTIONS = {
    "add_alpha": (add_alpha, lambda ts: (ts[0], ts[-1], 0.5), b"ppfp"),
    "fma (three inputs, two outputs)": (fma, lambda ts: (ts[0], ts[1 % len(ts)], ts[-1]), b"ppppp"),
}


def _adder():
    return pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])(_add_two)


def _reducer(kind: str, dims: tuple, keepdim: bool):
    """sum or max of x + y along `dims` of the broadcast shape."""
    return pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")], reductions=[(kind, dims, keepdim)])(_add_two)


def _plan_or_none(fn, args, outs=None):
    try:
        return fn.plan(args, outs or (None,) * len(fn._out_index), collapse=True)
    except (RuntimeError, TypeError):
        return None


def _case(patterns, largest):
    sizes = st.lists(st.lists(st.integers(2, largest), min_size=4, max_size=4), min_size=2, max_size=2)
    return st.tuples(patterns, sizes)


cases = _case(nd_patterns, 40) | _case(any_patterns, 12) | _case(full_rank_patterns, 12)


@pytest.mark.parametrize("function", list(FUNCTIONS.values()), ids=list(FUNCTIONS))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=cases)
def test_a_program_launches_a_new_shape_as_the_analysis_plans_it(module, function, case):
    make, pick, kinds = function
    pattern, (first, second) = case
    fn, driver = make(), Driver(kinds)
    table = Table(module, fn, driver)
    template_args, args = (pick(_inputs(pattern, sizes)) for sizes in (first, second))
    template = table.add(template_args)
    assume(template.task.rank > 0)
    served = check_launch(table, args, None, _plan_or_none(fn, args))
    event(f"{template.task.tiling.scheme}: " + ("served" if served else "refused"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=_case(any_patterns | full_rank_patterns, 40), picks=st.data())
def test_a_program_of_a_reduction_along_dims_launches_what_the_analysis_plans(module, case, picks):
    """A split reduction (its partials combined after the launch) is never traced, nor served."""
    pattern, (first, second) = case
    template_args, args = ((ts[0], ts[-1]) for ts in (_inputs(pattern, first), _inputs(pattern, second)))
    rank = max(t.dim() for t in args)
    assume(rank > 0)
    dims = tuple(sorted(picks.draw(st.sets(st.integers(0, rank - 1), min_size=1))))
    fn = _reducer(picks.draw(st.sampled_from(["sum", "max"])), dims, picks.draw(st.booleans()))
    table = Table(module, fn, Driver(b"ppp"))
    template = table.add(template_args)
    expected = _plan_or_none(fn, args)
    served = check_launch(table, args, None, expected)
    event((template.task.tiling.scheme if template.task.split is None else "split") + (": served" if served else ""))
    assert not served or expected.task.split is None


def test_a_shape_the_split_rule_would_cut_is_left_to_python(module, monkeypatch):
    """(512, 8192) rows do not split; (4, 8192) ones would (8 parts, where few rows split from a
    reduced extent of 4096, as here): the program of the first serves another unsplit shape, never
    the second."""
    from tritonwise.analysis import plan

    monkeypatch.setattr(plan, "SPLIT_MIN_COLS_FEW", 4096)
    fn = _reducer("sum", (1,), False)
    table = Table(module, fn, Driver(b"ppp"))
    make = lambda rows: (torch.randn(rows, 8192), torch.randn(rows, 8192))  # noqa: E731
    template = table.add(make(512))
    assert template.task.split is None and fn.plan(make(4), (None,), collapse=True).task.split is not None
    assert table.call(make(4))[1] is None
    assert check_launch(table, make(528), None, fn.plan(make(528), (None,), collapse=True))


def test_a_column_program_serves_only_shapes_the_split_rule_leaves_whole(module):
    """A column sum's program traced on an unsplit (2048, 64) serves (3072, 64), and one traced on
    an unsplit (2048, 8) (one tile, read by one program of 2**14 elements) serves (1024, 8);
    (16384, 64) would split into 16 parts and (4096, 8) into 4 (a run shorter than 16), so they
    are left to Python."""
    fn = _reducer("sum", (0,), False)
    table = Table(module, fn, Driver(b"ppp"))
    make = lambda rows, cols: (torch.randn(rows, cols), torch.randn(rows, cols))  # noqa: E731
    for rows, cols in ((2048, 64), (2048, 8)):
        assert table.add(make(rows, cols)).task.split is None
    for rows, cols in ((16384, 64), (4096, 8)):
        assert fn.plan(make(rows, cols), (None,), collapse=True).task.split is not None
        assert table.call(make(rows, cols))[1] is None
    for rows, cols in ((3072, 64), (1024, 8)):
        assert check_launch(table, make(rows, cols), None, fn.plan(make(rows, cols), (None,), collapse=True))


def test_a_narrow_column_program_never_serves_a_batch_the_rule_splits(module):
    """A sum over the middle dim traced on an unsplit (128, 16384, 8) (128 programs of narrow
    tiles: 64 tiles of 16, below 2**19 reduced elements) serves (96, 16384, 8), and leaves
    (64, 16384, 8) to Python: 64 narrow programs count as few and split (SPLIT_FEW_NARROW)."""
    fn = _reducer("sum", (1,), False)
    table = Table(module, fn, Driver(b"ppp"))
    make = lambda *shape: (torch.randn(shape), torch.randn(shape))  # noqa: E731
    assert table.add(make(128, 16384, 8)).task.split is None
    assert fn.plan(make(64, 16384, 8), (None,), collapse=True).task.split is not None
    assert table.call(make(64, 16384, 8))[1] is None
    assert check_launch(table, make(96, 16384, 8), None, fn.plan(make(96, 16384, 8), (None,), collapse=True))


def test_a_row_program_serves_only_rows_of_its_count_of_whole_blocks(module):
    """A row sum's kernel compiles in a row's count of whole blocks (WHOLE_BLOCKS) and the width
    its last columns are read in (REST_BLOCK): the program traced on (8, 6160), three blocks of
    2048 and 16 columns read 256 at a time, serves (24, 6176), three and 32, and leaves to Python
    (8, 4112), two and 16, and (8, 6432), three and 288, read in a whole block."""
    fn = _reducer("sum", (1,), False)
    table = Table(module, fn, Driver(b"ppp"))
    make = lambda rows, cols: (torch.randn(rows, cols), torch.randn(rows, cols))  # noqa: E731
    assert table.add(make(8, 6160)).task.row_constexprs == {"WHOLE_BLOCKS": 3, "REST_BLOCK": 256}
    assert fn.plan(make(8, 4112), (None,), collapse=True).task.row_constexprs["WHOLE_BLOCKS"] == 2
    assert table.call(make(8, 4112))[1] is None
    assert fn.plan(make(8, 6432), (None,), collapse=True).task.row_constexprs == {"WHOLE_BLOCKS": 3, "REST_BLOCK": 2048}
    assert table.call(make(8, 6432))[1] is None
    assert check_launch(table, make(24, 6176), None, fn.plan(make(24, 6176), (None,), collapse=True))


def test_a_program_over_several_reduced_dims_serves_only_rows_of_its_inner_extent(module):
    """Over dims (0, 2) the kernel compiles in the innermost reduced extent where that is 4, 8
    or 16 (INNER_EXTENT). Rows of 1536 columns throughout (three whole blocks of 512), kept
    extents the split rule leaves alone: the program traced on (96, 272, 16) serves (96, 304, 16)
    and leaves to Python (192, 272, 8), whose 8 is compiled in, and (32, 272, 48), divided at run
    time; the program traced on (32, 272, 48) serves (24, 304, 64), also divided, and not
    (192, 272, 8)."""
    fn = _reducer("sum", (0, 2), False)
    make = lambda *shape: (torch.randn(shape), torch.randn(shape))  # noqa: E731
    compiled = Table(module, fn, Driver(b"ppp"))
    assert compiled.add(make(96, 272, 16)).task.row_constexprs == {"WHOLE_BLOCKS": 3, "REST_BLOCK": 512, "INNER_EXTENT": 16}
    assert fn.plan(make(192, 272, 8), (None,), collapse=True).task.row_constexprs["INNER_EXTENT"] == 8
    assert compiled.call(make(192, 272, 8))[1] is None
    assert compiled.call(make(32, 272, 48))[1] is None
    assert check_launch(compiled, make(96, 304, 16), None, fn.plan(make(96, 304, 16), (None,), collapse=True))
    divided = Table(module, fn, Driver(b"ppp"))
    assert divided.add(make(32, 272, 48)).task.row_constexprs["INNER_EXTENT"] == 0
    assert divided.call(make(192, 272, 8))[1] is None
    assert check_launch(divided, make(24, 304, 64), None, fn.plan(make(24, 304, 64), (None,), collapse=True))


def _rows_into(rows: int, offset=None):
    """(x, y) of `rows` rows of 64 and an output of `rows` sums: its own memory, or (`offset`) a
    view `offset` elements into x's."""
    memory = torch.randn(rows * 64 + 8)
    x = memory[: rows * 64].view(rows, 64)
    out = torch.empty(rows) if offset is None else memory[offset : offset + rows]
    return (x, torch.randn(rows, 64)), out


@triton.jit
def _sum_of_seventeen(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16):
    return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15 + a16


def test_a_program_of_seventeen_inputs_and_a_given_output_serves_a_new_shape(module):
    """One extent per tensor input and output: more operands than the 16 a class's leaves are
    sized for per rank still fit a program."""
    fn = pointwise_dynamic(promotion_methods=[(*range(17), "DEFAULT")])(_sum_of_seventeen)
    table = Table(module, fn, Driver(b"p" * 18))
    make = lambda n: (tuple(torch.randn(n) for _ in range(17)), torch.empty(n))  # noqa: E731
    for n in (96, 112):
        args, out = make(n)
        table.add(args, (out,))
    args, out = make(128)
    assert check_launch(table, args, (out,), fn.plan(args, (out,), collapse=True))


@pytest.mark.parametrize("offset, served", [(None, True), (4, False)])
def test_a_reduction_along_dims_writes_a_given_output_from_c(module, offset, served):
    """out0= of a sum along dim 1: a new shape's program launches on it as the analysis plans, the
    output's extent over the result shape traced with the rest; an output inside an input's
    memory misses, and Python refuses it as torch does."""
    fn = _reducer("sum", (1,), False)
    table = Table(module, fn, Driver(b"ppp"))
    for rows in (96, 112):
        args, out = _rows_into(rows)
        table.add(args, (out,))
    args, out = _rows_into(128, offset)
    assert check_launch(table, args, (out,), fn.plan(args, (out,), collapse=True)) == served
    if not served:
        with pytest.raises(RuntimeError, match="partially overlaps input 0"):
            fn(*args, out0=out)


# Calls giving an output, each a function of the size n: (x, y, alpha) and the output. In place
# (the output is x), out= of another layout, and what must be refused as the analysis refuses it:
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


@pytest.mark.parametrize("refused", [None, *REFUSED])
@pytest.mark.parametrize("call", list(GIVEN_OUTPUT_CALLS))
def test_a_new_shape_given_its_output_launches_on_it_as_the_analysis_plans(module, call, refused):
    make, fn = GIVEN_OUTPUT_CALLS[call], add_alpha()
    table = Table(module, fn, Driver())
    for n in (96, 97, 112):  # both alignments
        args, out = make(n)
        table.add(args, (out,))
    args, out = make(113) if refused is None else REFUSED[refused](113)
    expected = _plan_or_none(fn, args, (out,))
    served = check_launch(table, args, (out,), expected)
    assert served == (refused is None)


def _sharing(n: int, offset: int):
    """(args, out): x and an output `offset` elements further into the same memory (0: the
    input itself; a multiple of 4 keeps both 16-byte aligned, one class)."""
    memory = torch.randn(n * 65 + offset)
    x = memory[: n * 65].view(n, 65)
    return (x, torch.randn(n, 65), 0.5), memory[offset : offset + n * 65].view(n, 65)


@pytest.mark.parametrize("offset, served", [(0, True), (4, False), (96 * 65, True)])
def test_a_programs_overlap_check_reads_the_extents_it_computes(module, offset, served):
    """Given outputs of a new shape, checked against the inputs over the dense extents the
    program computes for that shape: the input itself and disjoint memory launch from C; an
    output overlapping an input partially misses, and Python refuses it as torch does."""
    fn = add_alpha()
    table = Table(module, fn, Driver())
    for n in (64, 80):
        args, out = _sharing(n, n * 65)  # disjoint outputs: the program of the class
        table.add(args, (out,))
    args, out = _sharing(96, offset)
    expected = fn.plan(args, (out,), collapse=True)
    assert check_launch(table, args, (out,), expected) == served
    if not served:
        with pytest.raises(RuntimeError, match="partially overlaps input 0"):
            fn(*args, out0=out)


ROW_CASES = {  # (kind, dims, keepdim, inputs of size n, the two sizes)
    "sum of a long last dim (row_looped)": ("sum", (1,), False, lambda n: (torch.randn(n, 4096),) * 2, (320, 352)),
    "few long rows, then fewer (row_looped, one row a program)": (
        "sum",
        (1,),
        False,
        lambda n: (torch.randn(n, 4096),) * 2,
        (240, 224),
    ),
    "sum over (0, 2) (row_looped)": ("sum", (0, 2), True, lambda n: (torch.randn(64, n, 64),) * 2, (272, 304)),
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
    fn = _reducer(kind, dims, keepdim)
    table = Table(module, fn, Driver(b"ppp"))
    template = table.add(make(first))
    assert template.task.tiling.scheme in case
    assert check_launch(table, make(second), None, fn.plan(make(second), (None,), collapse=True))


@pytest.mark.parametrize("first, same_side, across", [(4, 3, 5), (5, 6, 4)], ids=["below the cap", "above it"])
def test_a_program_never_serves_a_shape_across_the_grid_cap(module, first, same_side, across):
    """With max_grid_size (4,), a row sum of 4 rows (one tile each) fits the grid and 5 rows stride
    over it: the kernels differ in GRID_STRIDE and the grid, so a program traced on one side
    serves shapes of its side and misses the other."""
    from tritonwise import CodeGenConfig

    config = CodeGenConfig(max_tile_size=64, max_grid_size=(4,))
    fn = pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")], reductions=[("sum", -1)], config=config)(_add_two)
    make = lambda n: (torch.randn(n, 24), torch.randn(24))  # noqa: E731
    table = Table(module, fn, Driver(b"ppp"))
    template = table.add(make(first))
    plans = {n: fn.plan(make(n), (None,), collapse=True) for n in (same_side, across)}
    assert plans[same_side].task.grid_strides == template.task.grid_strides != plans[across].task.grid_strides
    assert check_launch(table, make(same_side), None, plans[same_side])
    assert not check_launch(table, make(across), None, plans[across])


FAMILIES = {  # the cases of benchmarks/new_shape.py: (function, operands for size n, kinds)
    "add 1-D (flat)": (_adder, lambda n: (torch.randn(64 * n + 7),) * 2, b"ppp"),
    "3-D broadcast + scalar (nd)": (add_alpha, lambda n: (torch.randn(4, n, 64), torch.randn(n, 1), 0.5), b"ppfp"),
    "2-D + transposed 2-D (tile2d)": (_adder, lambda n: (torch.randn(n, 65), torch.randn(65, n).t()), b"ppp"),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_programs_of_a_few_shapes_serve_most_new_shapes(family):
    """As in the benchmark: the programs of 40 shapes serve at least 90% of 60 shapes never seen,
    each as the analysis plans it."""
    make, operands, kinds = FAMILIES[family]
    from tritonwise.runtime import native

    module = native.launch_module()
    if module is None:
        pytest.skip("no C compiler here")
    fn, rng = make(), random.Random(0)
    table = Table(module, fn, Driver(kinds))
    seen = set()
    for n in rng.sample(range(2, 400), 40):
        seen.add(n)
        traced = len(table.programs and next(iter(table.programs.values())))
        if table.call(operands(n), None, fn.plan(operands(n), (None,), True))[1] is None or not traced:
            table.add(operands(n))  # a miss traces a program, as publish does
    new = [n for n in rng.sample(range(2, 400), 100) if n not in seen][:60]
    served = 0
    for n in new:
        args = operands(n)
        expected = fn.plan(args, (None,), collapse=True)
        result, launch = table.call(args, None, expected)
        if launch is not None:
            served += 1
            assert launch[1] == (*expected.grid, 1, 1)[:3]
            assert launch[3][-len(expected.index_args) :] == list(expected.index_args)
    assert served >= 0.9 * len(new), f"{served} of {len(new)} served"


def test_a_launch_hook_leaves_the_call_to_python(module):
    fn = _adder()
    table = Table(module, fn, Driver(b"ppp"))
    table.add((torch.randn(16, 16),) * 2)
    stream = lambda device: 0x5000  # noqa: E731
    hooked = SimpleNamespace(launch_enter_hook=print, launch_exit_hook=None)
    hit_path.configure(module, raw_stream=stream, hooks=hooked, current_device=None)
    try:
        assert table.call((torch.randn(32, 16),) * 2)[1] is None
    finally:
        none = SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None)
        hit_path.configure(module, raw_stream=stream, hooks=none, current_device=None)
    assert table.call((torch.randn(32, 16),) * 2)[1] is not None


@pytest.mark.parametrize("setting, published", [("1", True), ("0", False)])
def test_publishing_follows_TRITONWISE_C_NEW_SHAPES(monkeypatch, module, setting, published):
    """A launched plan publishes its program, unless TRITONWISE_C_NEW_SHAPES=0."""
    monkeypatch.setenv("TRITONWISE_C_NEW_SHAPES", setting)
    # an interpreted plan has no launch.c launcher to ask what Triton specializes: nothing here
    monkeypatch.setattr(shape_programs, "Rebinding", lambda plan: SimpleNamespace(value_positions=lambda: ()))
    fn, args = _adder(), (torch.randn(8, 8),) * 2
    plan = fn.plan(args, (None,), collapse=True)
    _launched_through_c(plan, Driver(b"ppp"))
    programs = ShapePrograms(fn.planner)
    programs.publish(call_signature(args), args, (None,), plan)
    assert bool(programs.programs) == published


def test_threads_launch_while_programs_grow(module):
    """Four threads call hit() on new shapes while a fifth adds programs: every call is served
    with its plan's launch or refused, and nothing crashes (the stand-in driver and the stream
    query call back into Python, so threads interleave inside hit())."""
    fn = add_alpha()
    table = Table(module, fn, Driver())
    make = lambda n: (torch.randn(n, 64), torch.randn(64, n).t(), 0.5)  # noqa: E731
    shapes = [make(n) for n in range(16, 400, 16)]
    plans = [fn.plan(args, (None,), collapse=True) for args in shapes]
    table.driver.n_values = len(plans[0].index_args)
    failures = []

    def publish():
        for args in shapes:
            table.add(args)

    def call(offset):
        try:
            for k in range(300):
                args, plan = shapes[(k + offset) % len(shapes)], plans[(k + offset) % len(shapes)]
                out = module.hit({}, args, hit_path.MISS, table.programs)
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


# -- the symbolic integers and the evaluator ----------------------------------------------------


def test_the_opcodes_are_the_evaluators(module):
    ops = module.opcodes()
    s = symbolic
    assert ops["nodes"] == (s.LEAF, s.CONST, s.ADD, s.SUB, s.MUL, s.FLOORDIV, s.MOD, s.ABS)
    assert ops["guards"] == (symbolic.LT, symbolic.LE, symbolic.EQ, symbolic.NE)


OPERATIONS = [operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod, abs]
COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


def _program_of(module, tracer, result):
    pack = lambda rows: b"".join(int(v).to_bytes(8, "little", signed=True) for row in rows for v in row)  # noqa: E731
    node = tracer.node_of(result)  # before packing: a constant result adds a node
    return module.program(
        nodes=pack(tracer.nodes), guards=pack(tracer.guards), values=pack([(node,)]), grid=node, out_shape=b"",
        out_strides=(), out_dtypes=(), device=None, device_index=0, cu_launch=0, function=0, threads=32, shared=0,
        kinds=b"", index_kind="l", scratch=0, extents=b"",
    )


def _run(leaves, script):
    """Evaluate `script` (a list of (operation, i, j) steps over a growing list of values that
    starts with `leaves`) on Syms or ints; the last value and every comparison's answer."""
    values, answers = list(leaves), []
    for how, i, j in script:
        a, b = values[i % len(values)], values[j % len(values)]
        if how in COMPARISONS:
            answers.append(how(a, b))
        elif how is abs:
            values.append(abs(a))
        elif how in (operator.floordiv, operator.mod):  # by a divisor that is never 0
            values.append(how(a, abs(b) + 1))
        else:
            values.append(how(a, b))
    return values[-1], answers


steps = st.tuples(st.sampled_from(OPERATIONS + COMPARISONS), st.integers(0, 20), st.integers(0, 20))
scripts = st.lists(steps, max_size=20)
leaf_values = st.lists(st.integers(-(2**20), 2**20), min_size=3, max_size=3)


@settings(max_examples=300, deadline=None)
@given(script=scripts, traced=leaf_values, other=leaf_values)
def test_a_program_serves_exactly_the_leaves_that_answer_alike(module, script, traced, other):
    """A program traced on some leaves serves other leaves where every comparison answers as it
    did (then with the script's own result), and refuses them where one answers otherwise."""
    tracer = symbolic.Tracer()
    result, answers = _run(tracer.leaves(traced, 0), script)
    expected, other_answers = _run(other, script)
    if not isinstance(result, symbolic.Sym):
        return  # the script's result is a constant
    values = module.evaluate(_program_of(module, tracer, result), tuple(other))
    if other_answers != answers:
        assert values is None
    elif values is not None:
        assert values[tracer.node_of(result)] == expected
    # else refused although every comparison agrees: a zero divisor or an int64 overflow on the
    # other leaves (Python's integers do not overflow), both misses to Python


def test_reading_a_value_specializes_on_it(module):
    tracer = symbolic.Tracer()
    (x,) = tracer.leaves((5,), 0)
    assert [0, 1, 2, 3, 4, 5][x] == 5 and hash(x + 1) == hash(6)
    program = _program_of(module, tracer, x + 1)
    assert module.evaluate(program, (5,)) is not None and module.evaluate(program, (7,)) is None


def test_overflow_refuses_rather_than_wraps(module):
    tracer = symbolic.Tracer()
    (x,) = tracer.leaves((2,), 0)
    program = _program_of(module, tracer, x * x * x)
    assert module.evaluate(program, (2**20,))[-1] == 2**60
    assert module.evaluate(program, (2**21,)) is None  # 2**63 does not fit


class _WideRows(Nd):
    """A made-up seventh scheme: nd's tiles, but its own blocks and pick (the widest block whose
    columns the innermost extent fills at least half, then the most rows), for tasks of rank 3 or
    more. One class, nd's template, one registry entry: nothing of it is in C."""

    name = "wide_rows"

    @property
    def template(self) -> str:
        return "nd.py.j2"

    def applies(self, task_shape, strides, split, config) -> bool:
        return len(task_shape) >= 3 and super().applies(task_shape, strides, split, config)

    def block_choices(self, rank, itemsize, aligned, config) -> tuple:
        return ((4, 512), (16, 128), (64, 32))

    def pick_block(self, task_shape, m_dim, choices, itemsize) -> tuple:
        fitting = [b for b in choices if 2 * task_shape[-1] >= b[1]]
        return max(fitting, key=lambda b: b[1]) if fitting else choices[-1]


def test_a_made_up_scheme_is_served_with_no_change_in_c(module, monkeypatch):
    schemes = {"wide_rows": _WideRows(), **registry.SCHEMES}
    monkeypatch.setattr(registry, "SCHEMES", schemes)
    tiling._block_choices.cache_clear()
    try:
        fn = add_alpha()
        table = Table(module, fn, Driver())
        make = lambda n, m: (torch.randn(3, n, m), torch.randn(n, 1), 0.5)  # noqa: E731
        template = table.add(make(48, 300))
        assert template.task.tiling.scheme == "wide_rows" and template.task.tiling.block == (4, 512)
        assert check_launch(table, make(96, 316), None, fn.plan(make(96, 316), (None,), True))
        narrow = fn.plan(make(48, 40), (None,), True)  # another block: the program refuses it
        assert narrow.task.tiling.block == (64, 32) and table.call(make(48, 40), None, narrow)[1] is None
    finally:
        tiling._block_choices.cache_clear()
