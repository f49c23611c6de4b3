"""The C hit path (launch.c's hit, runtime/hit_path.py) on the CPU: its signature against
call_signature's for every argument kind, and whole hits through a stand-in for cuLaunchKernel
that reads the parameter block as the driver does. GPU tests run it for real (test_gpu_hit_path)."""

import ctypes
import os
import subprocess
import sys
import threading
from collections import OrderedDict
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tritonwise import StridedBuffer
from tritonwise.runtime import arguments, aten, hit_path, native
from tritonwise.runtime.dispatch import PlanCache
from tritonwise.runtime.launcher import CLaunch

LAUNCH_KERNEL = ctypes.CFUNCTYPE(
    ctypes.c_int,
    *[ctypes.c_void_p] + [ctypes.c_uint] * 7,
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_void_p,
)
# add(x, y, alpha) as a kernel takes them: two pointers, a float, the output, one int32 index
# argument (fixed), then the two scratch pointers Triton appends.
PARAM_TYPES = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_float, ctypes.c_uint64, ctypes.c_int32]
PARAM_TYPES += [ctypes.c_uint64, ctypes.c_uint64]
FIXED = bytes(ctypes.c_int32(1000)).ljust(8, b"\0") + bytes(16)


class FakeDriver:
    def __init__(self, result=0):
        self.launches, self.result = [], result
        self.cuLaunchKernel = LAUNCH_KERNEL(self._launch)
        self.address = ctypes.cast(self.cuLaunchKernel, ctypes.c_void_p).value

    def _launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        values = [ctypes.cast(params[i], ctypes.POINTER(t)).contents.value for i, t in enumerate(PARAM_TYPES)]
        self.launches.append(((function, gx, gy, gz, bx, shared, stream), values))
        return self.result


class Hooks:
    """Triton's knobs.runtime as hit() reads it: hook chains whose `calls` say if they run."""

    def __init__(self, enter=(), leave=()):
        self.launch_enter_hook = SimpleNamespace(calls=list(enter))
        self.launch_exit_hook = SimpleNamespace(calls=list(leave))


@pytest.fixture(scope="session")
def aten_helpers():
    try:
        return aten.helpers()
    except native.BUILD_ERRORS as e:
        if "no compiler found" in str(e):
            pytest.skip(str(e))
        raise


@pytest.fixture(params=["torch's Python API", "ATen helpers"])
def module(request):
    """launch.c, configured with stand-ins, allocating and reading pointers each way."""
    module = native.launch_module()
    if module is None:
        pytest.skip("no C compiler or Python headers: launch.c cannot be built here")
    hit_path.configure(module, raw_stream=lambda device: 0x5000 + device, hooks=Hooks(), current_device=None)
    with_aten = request.param == "ATen helpers"
    aten.use(module, request.getfixturevalue("aten_helpers") if with_aten else None)
    yield module
    aten.use(module, None)
    if hit_path.entry is not None:  # a GPU process already serves hits: give back the real objects
        hit_path.configure(module)
        aten.use(module, request.getfixturevalue("aten_helpers"))


def _record(driver, outputs=1, shape=(4, 3), dtype=torch.float32, extents=()):
    layouts = tuple(((3, 1), dtype) for _ in range(outputs))
    launch = CLaunch(driver.address, 0x1234, (7, 1, 1), 128, 0, 0, b"ppf" + b"p" * outputs, FIXED)
    return hit_path.record(shape, layouts, torch.device("cpu"), launch, extents)


ARGS_OF_EVERY_KIND = [
    (torch.randn(4, 3), torch.randn(4, 3), 0.5),
    (torch.randn(4, 3).t(), torch.randn(3)[1:], 2),  # strided, a view 4 bytes past alignment
    (torch.randn(2, 3, dtype=torch.float16), torch.tensor(1.5), True),  # 0-d tensor, bool
    (torch.randn(3, requires_grad=True), torch.nn.Parameter(torch.randn(3))),  # grad, a subclass
    (torch.randn(3, dtype=torch.complex64).conj().imag, torch.randn(3)),  # the negative bit
    (StridedBuffer(torch.randn(12), (3, 4), (1, 3)), 2**31, -(2**63), 2**63, 2**64),  # int widths
    (np.float32(1.0), np.int64(3), None, "text", torch.randn(2, device="meta")),
    (torch.empty(0), torch.randint(0, 9, (5,), dtype=torch.int8)),
    (2**31 - 1, -(2**31), 2**31, -(2**31) - 1, 0, True, False, 1.5, float("nan"), -0.0),  # scalars' classes in C
    (),
]


@pytest.mark.parametrize("args", ARGS_OF_EVERY_KIND, ids=range(len(ARGS_OF_EVERY_KIND)))
def test_signature_is_call_signatures(module, args):
    assert module.signature(args) == arguments.call_signature(args)


def test_a_tensor_whose_key_cannot_be_read_raises_as_call_signature_does(module):
    sparse = torch.randn(3, 3).to_sparse()  # a plain torch.Tensor without a data pointer
    with pytest.raises(RuntimeError) as python:
        arguments.call_signature((sparse,))
    with pytest.raises(RuntimeError) as c:
        module.signature((sparse,))
    assert str(c.value) == str(python.value)
    assert module.hit({}, (sparse,), hit_path.MISS) is hit_path.MISS  # the Python path reports it


def test_a_launch_record_is_typed_and_refuses_fields_that_do_not_fit(module):
    """plan.hit is launch.c's Record, read by name; fields that would make hit() read past a
    tuple or launch through a null address are refused when the record is built."""
    driver = FakeDriver()
    record = _record(driver, outputs=2)
    assert (record.shape, record.grid_x, record.grid_y, record.threads, record.kinds) == ((4, 3), 7, 1, 128, b"ppfpp")
    assert record.layouts == (((3, 1), torch.float32),) * 2 and record.fixed == FIXED
    good = CLaunch(driver.address, 0x1234, (7, 1, 1), 128, 0, 0, b"ppfp", FIXED)
    for shape, layouts, launch in [
        ((4, 3), (((1,), torch.float32),), good),  # strides of another rank
        ((4, 3), (((3, 1), torch.float32),), good._replace(fixed=b"123")),  # not whole 8-byte slots
        ((4, 3), (((3, 1), torch.float32),), good._replace(cu_launch=0)),
    ]:
        with pytest.raises(ValueError, match="record"):
            hit_path.record(shape, layouts, torch.device("cpu"), launch)


def test_a_hit_allocates_and_launches_as_the_python_path_would(module):
    driver = FakeDriver()
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    plans = OrderedDict({arguments.call_signature((x, y, 0.5)): SimpleNamespace(hit=_record(driver))})
    out = module.hit(plans, (x, y, 0.5), hit_path.MISS)
    assert isinstance(out, torch.Tensor) and out.shape == (4, 3) and out.stride() == (3, 1)
    assert driver.launches == [
        ((0x1234, 7, 1, 1, 128, 0, 0x5000), [x.data_ptr(), y.data_ptr(), 0.5, out.data_ptr(), 1000, 0, 0])
    ]


def test_two_outputs_come_back_as_a_tuple(module):
    driver = FakeDriver()
    global PARAM_TYPES
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    plans = {arguments.call_signature((x, y, 1.0)): SimpleNamespace(hit=_record(driver, outputs=2))}
    saved = PARAM_TYPES
    PARAM_TYPES = saved[:4] + [ctypes.c_uint64] + saved[4:]
    try:
        outs = module.hit(plans, (x, y, 1.0), hit_path.MISS)
    finally:
        PARAM_TYPES = saved
    assert isinstance(outs, tuple) and len(outs) == 2 and outs[0].data_ptr() != outs[1].data_ptr()
    assert driver.launches[0][1][3:5] == [outs[0].data_ptr(), outs[1].data_ptr()]


@pytest.mark.parametrize(
    "case",
    [
        "no plan",
        "a plan without a record",
        "another dtype",
        "a hook installed",
        "another device current",
        "a failed launch",
        "a value too wide",
    ],
)
def test_what_python_must_decide_misses_with_the_signature_and_launches_nothing(module, case):
    driver = FakeDriver(result=700 if case == "a failed launch" else 0)
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    plan = SimpleNamespace(hit=None if case == "a plan without a record" else _record(driver))
    plans = {} if case == "no plan" else {arguments.call_signature((x, y, 0.5)): plan}
    args = (x, y, 0.5)
    if case == "another dtype":
        args = (x.double(), y, 0.5)
    if case == "a hook installed":
        hit_path.configure(module, raw_stream=lambda device: 0x5000, hooks=Hooks(enter=[print]))
    if case == "another device current":  # the record launches on device 0
        hit_path.configure(module, raw_stream=lambda device: 0x5000, hooks=Hooks(), current_device=lambda: 1)
    if case == "a value too wide":
        launch = CLaunch(driver.address, 0x1234, (7, 1, 1), 128, 0, 0, b"ppbp", FIXED)  # alpha as int8: 0.5 is no int
        plan.hit = hit_path.record((4, 3), (((3, 1), torch.float32),), torch.device("cpu"), launch)
    assert module.hit(plans, args, hit_path.MISS) == (hit_path.MISS, arguments.call_signature(args))
    assert len(driver.launches) == (1 if case == "a failed launch" else 0)  # tried once, then Python's turn


OUTPUTS_OF_EVERY_KIND = [
    (torch.randn(4, 3),),
    (None,),
    (None, torch.randn(4, 3).t()),
    (torch.randn(3)[1:], None),  # 4 bytes past alignment
    (StridedBuffer(torch.randn(12), (3, 4), (1, 3)),),
    (torch.nn.Parameter(torch.randn(3)), 2.5),
]


@pytest.mark.parametrize("outs", OUTPUTS_OF_EVERY_KIND, ids=range(len(OUTPUTS_OF_EVERY_KIND)))
def test_signature_with_outputs_is_call_signatures(module, outs):
    args = (torch.randn(4, 3), 0.5)
    assert module.signature(args, outs) == arguments.call_signature(args, outs)


def _extents(args: tuple, out: torch.Tensor) -> list:
    """What the binder gives a plan of given outputs: the dense extent of each tensor input, then
    of the output."""
    return [arguments.dense_extent(t.shape, t.stride()) for t in args + (out,) if isinstance(t, torch.Tensor)]


def _served_on(module, driver, args: tuple, out: torch.Tensor):
    """hit() of a plan cached for `args` and the given output `out`, with the extents the binder
    gives such a plan: what it returns."""
    plans = {arguments.call_signature(args, (out,)): SimpleNamespace(hit=_record(driver, extents=_extents(args, out)))}
    return module.hit(plans, args, hit_path.MISS, {}, (out,))


def test_a_hit_launches_on_the_given_output_and_returns_it(module):
    driver = FakeDriver()
    x, y, out = torch.randn(4, 3), torch.randn(4, 3), torch.empty(4, 3)
    assert _served_on(module, driver, (x, y, 0.5), out) is out
    assert driver.launches[0][1][:4] == [x.data_ptr(), y.data_ptr(), 0.5, out.data_ptr()]


def _overlapping(case: str):
    """(args, out) where out shares memory with input 0 as `case` says."""
    base = torch.randn(40)
    x, y = base[:12].view(4, 3), torch.randn(4, 3)
    outs = {
        "the input itself": x,
        "the same memory, another view": base[:12].view(4, 3)[:],
        "disjoint": base[12:24].view(4, 3),
        "shifted by one element": base[1:13].view(4, 3),
        "the same memory, transposed": base[:12].view(3, 4).t(),
        "not dense (Python checks no such output)": base[::2][:12].view(4, 3),
    }
    return (x, y, 0.5), outs[case]


@pytest.mark.parametrize(
    "case, served",
    [
        ("the input itself", True),
        ("the same memory, another view", True),
        ("disjoint", True),
        ("shifted by one element", False),
        ("the same memory, transposed", False),
        ("not dense (Python checks no such output)", True),
    ],
)
def test_a_given_output_overlapping_an_input_partially_is_pythons_to_refuse(module, case, served):
    driver = FakeDriver()
    args, out = _overlapping(case)
    plan = SimpleNamespace(out_extents=(arguments.dense_extent(out.shape, out.stride()),), name="f")
    in_extents = [arguments.dense_extent(a.shape, a.stride()) for a in args[:2]]
    try:
        arguments.check_partial_overlap("f", 0, out, plan.out_extents[0], args[:2], in_extents)
        python_serves = True
    except RuntimeError:
        python_serves = False
    assert python_serves == served  # the case is what its name says
    result = _served_on(module, driver, args, out)
    if served:
        assert result is out and len(driver.launches) == 1
    else:
        assert result == (hit_path.MISS, arguments.call_signature(args, (out,))) and driver.launches == []


def test_a_hit_moves_its_plan_to_the_lru_end(module):
    driver = FakeDriver()
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    key = arguments.call_signature((x, y, 0.5))
    plans = OrderedDict([(key, SimpleNamespace(hit=_record(driver))), ("other", SimpleNamespace(hit=None))])
    module.hit(plans, (x, y, 0.5), hit_path.MISS)
    assert list(plans) == ["other", key]


def test_hits_from_many_threads_each_launch_their_own_operands(module):
    driver = FakeDriver()
    pairs = [(torch.randn(4, 3), torch.randn(4, 3)) for _ in range(8)]
    plans = {arguments.call_signature((*pairs[0], 0.5)): SimpleNamespace(hit=_record(driver))}
    results, errors = {}, []

    def work(k):
        try:
            x, y = pairs[k]
            results[k] = [module.hit(plans, (x, y, 0.5), hit_path.MISS) for _ in range(50)]
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(driver.launches) == 400
    launched = {(values[0], values[1]) for _, values in driver.launches}
    assert launched == {(x.data_ptr(), y.data_ptr()) for x, y in pairs}
    assert all(out is not hit_path.MISS for outs in results.values() for out in outs)


def _with_param_types(types):
    global PARAM_TYPES
    saved, PARAM_TYPES = PARAM_TYPES, types
    return saved


class Recording(torch.overrides.TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def test_under_a_torch_function_mode_outputs_are_allocated_where_the_mode_sees_them(module):
    driver = FakeDriver()
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    plans = {arguments.call_signature((x, y, 0.5)): SimpleNamespace(hit=_record(driver))}
    with Recording() as mode:
        out = module.hit(plans, (x, y, 0.5), hit_path.MISS)
    assert "empty_strided" in mode.calls and driver.launches[0][1][3] == out.data_ptr()


EMPTY_STRIDED = ctypes.PYFUNCTYPE(ctypes.py_object, *[ctypes.py_object] * 4)


@pytest.mark.parametrize(
    "shape, strides, dtype, device",
    [
        ((4, 3), (3, 1), torch.float32, "cpu"),
        ((), (), torch.bool, "cpu"),
        ((0, 5), (5, 1), torch.complex128, "cpu"),
        ((2, 3, 4), (1, 2, 6), torch.bfloat16, "cpu"),  # column-major
        ((8, 2), (0, 1), torch.int8, "cpu"),  # overlapping, as torch allows
        ((1024, 1024), (1024, 1), torch.float16, "meta"),
    ],
)
def test_the_aten_allocation_is_torch_empty_strided(aten_helpers, shape, strides, dtype, device):
    empty_strided = EMPTY_STRIDED(aten_helpers.addresses()[0])
    got = empty_strided(shape, strides, dtype, torch.device(device))
    want = torch.empty_strided(shape, strides, dtype=dtype, device=device)
    assert type(got) is torch.Tensor and not got.requires_grad
    assert (got.shape, got.stride(), got.dtype, got.device) == (want.shape, want.stride(), want.dtype, want.device)


def test_the_aten_allocation_reports_what_torch_reports(aten_helpers):
    empty_strided = EMPTY_STRIDED(aten_helpers.addresses()[0])
    with pytest.raises(RuntimeError, match="negative"):
        torch.empty_strided((-1,), (1,), dtype=torch.float32, device="cpu")
    with pytest.raises(RuntimeError, match="negative"):
        empty_strided((-1,), (1,), torch.float32, torch.device("cpu"))


def test_data_pointers_of_every_kind_of_operand(module):
    driver = FakeDriver()
    base = torch.randn(64)
    operands = [torch.randn(5), torch.nn.Parameter(torch.randn(3)), StridedBuffer(base, (8, 8), (1, 8)), base[7:]]
    saved = _with_param_types([ctypes.c_uint64] * 4)
    try:
        code = module.launch(driver.address, 1, 1, 1, 1, 32, 0, 0, b"pppp", b"", operands, [])
    finally:
        _with_param_types(saved)
    assert code == 0 and driver.launches[0][1] == [o.data_ptr() for o in operands]
    sparse = torch.randn(3, 3).to_sparse()  # no storage: data_ptr() raises, whichever way it is asked
    with pytest.raises(RuntimeError):
        module.launch(driver.address, 1, 1, 1, 1, 32, 0, 0, b"p", b"", [sparse], [])


def test_with_the_aten_helpers_outputs_skip_torchs_python_api(module, aten_helpers):
    def refuse(*args, **kwargs):
        raise AssertionError("torch.empty_strided called through Python")

    driver = FakeDriver()
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    plans = {arguments.call_signature((x, y, 0.5)): SimpleNamespace(hit=_record(driver))}
    stream = lambda device: 0x5000  # noqa: E731
    module.configure(torch.Tensor, arguments._tensor_key, arguments._other_key, refuse, stream, Hooks(), None,
                     arguments.INT32_RANGE)
    aten.use(module, aten_helpers)
    assert isinstance(module.hit(plans, (x, y, 0.5), hit_path.MISS), torch.Tensor)
    aten.use(module, None)
    assert module.hit(plans, (x, y, 0.5), hit_path.MISS)[0] is hit_path.MISS  # allocation raised: Python's turn
    assert len(driver.launches) == 1


@pytest.mark.parametrize("setting", ["0", "wait", "1"])
def test_the_helpers_are_handed_over_once_as_tritonwise_aten_says(monkeypatch, aten_helpers, setting):
    handed = []
    launch_module = SimpleNamespace(use_aten=lambda *addresses: handed.append(addresses))
    monkeypatch.setattr(aten, "_started", None)
    monkeypatch.setenv("TRITONWISE_ATEN", setting)
    aten.start(launch_module)
    if setting == "1":  # built (here: found built) on a background thread
        aten._started.join(timeout=60)
    aten.start(launch_module)
    assert handed == ([] if setting == "0" else [aten_helpers.addresses()])


def test_wait_for_build_returns_once_the_background_build_has_handed_over(monkeypatch):
    """The test session waits so before removing its cache directory, which the build writes into."""
    handed, release = [], threading.Event()

    def slow_build():
        release.wait(timeout=60)
        return SimpleNamespace(addresses=lambda: (1, 2, 3))

    monkeypatch.setattr(aten, "_started", None)
    monkeypatch.setattr(aten, "helpers", slow_build)
    monkeypatch.setenv("TRITONWISE_ATEN", "1")
    aten.start(SimpleNamespace(use_aten=lambda *addresses: handed.append(addresses)))
    aten.wait_for_build(timeout=0.05)
    assert handed == []  # still building: the wait ran out
    release.set()
    aten.wait_for_build()
    assert handed == [(1, 2, 3)]


@pytest.mark.parametrize("cache", ["configured", "private"])
def test_a_process_ending_before_the_helpers_build_waits_for_it(tmp_path, cache):
    """The helpers build on a background thread; a process that ends first must let the build
    finish (and hand its result over), else no short process would ever leave them built. Not
    where the cache is the process's private directory (a configured one others can write to):
    that directory goes at exit, build and all."""
    marker, directory = tmp_path / "handed over", tmp_path / "cache"
    directory.mkdir(mode=0o700)
    if cache == "private":
        directory.chmod(0o777)  # writable by every user: not trusted, so the process works in its own
    code = f"""
import time
from types import SimpleNamespace
from tritonwise.runtime import aten
def slow_build():
    time.sleep(1.0)  # a compile still running when the script below ends
    return SimpleNamespace(addresses=lambda: (1, 2, 3))
aten.helpers = slow_build
aten.start(SimpleNamespace(use_aten=lambda *addresses: open({str(marker)!r}, "w").write(str(addresses))))
"""
    env = {**os.environ, "TRITONWISE_ATEN": "1", "TRITONWISE_CACHE_DIR": str(directory)}
    env.pop("TRITONWISE_CACHE_OVERLAY", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    waited = cache == "configured"
    assert marker.exists() == waited
    assert ("finishing the build of its ATen helpers" in done.stderr) == waited


def test_launch_c_builds_wherever_a_c_compiler_is():
    """The stand-in tests above skip without launch.c; that must not hide a launcher that no
    longer compiles."""
    try:
        native.compiler("CC", "cc", "gcc")
    except OSError:
        pytest.skip("no C compiler here")
    assert native.launch_module() is not None, "launch.c failed to build: see the warning logged"


class Function:
    """What call.h's __call__ reads of a pointwise function: `_c_tables` (its PlanCache's plans,
    shape programs, output names) and a fallback."""

    def __init__(self, plans, programs=None):
        self._plans = PlanCache()
        self._plans.by_key.update(plans)
        self._c_tables = hit_path.call_tables(self._plans, programs or {}, {"out0": 0})

    def _call_missed(self, args, kwargs, key):
        return ("Python", args, kwargs, key)


def test_the_call_tables_are_typed_and_refuse_fields_that_do_not_fit(module):
    plans = {}
    tables = hit_path.call_tables(SimpleNamespace(by_key=plans), {}, {"out0": 0})
    assert tables.plans is plans and tables.programs == {} and tables.outputs == {"out0": 0}
    with pytest.raises(TypeError):
        module.call_tables(plans=[], programs={}, outputs={})


@pytest.fixture
def function_class(module):
    switch = SimpleNamespace(entry=module.hit)
    cls = type("Served", (Function,), {})
    cls.__call__ = module.call_method(Function._call_missed, switch)
    return cls, switch


def test_the_c_call_serves_a_cached_call_and_counts_the_hit(function_class):
    cls, _ = function_class
    driver = FakeDriver()
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    f = cls({arguments.call_signature((x, y, 0.5)): SimpleNamespace(hit=_record(driver))})
    for call in (lambda: f(x, y, 0.5), lambda: f.__call__(x, y, 0.5), lambda: cls.__call__(f, x, y, 0.5)):
        out = call()
        assert isinstance(out, torch.Tensor) and driver.launches[-1][1][3] == out.data_ptr()
    assert f._plans.hits == 3 and len(driver.launches) == 3


def test_the_c_call_hands_what_it_does_not_serve_to_the_fallback(function_class):
    cls, switch = function_class
    driver = FakeDriver()
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    f = cls({arguments.call_signature((x, y, 0.5)): SimpleNamespace(hit=_record(driver))})
    wide = x.double()

    def fallen(result, args, kwargs, key):
        assert result[0] == "Python" and len(result[1]) == len(args)
        assert all(a is b for a, b in zip(result[1], args)) and result[2] == kwargs and result[3] == key

    fallen(f(wide, y, 0.5), (wide, y, 0.5), {}, arguments.call_signature((wide, y, 0.5)))  # a miss
    fallen(f(x, y, 0.5, alpha=2), (x, y, 0.5), {"alpha": 2}, None)  # not an output's name: Python refuses it
    fallen(f(), (), {}, ())
    switch.entry = None  # the Python path, as tests and benchmarks ask for it
    fallen(f(x, y, 0.5), (x, y, 0.5), {}, None)
    assert driver.launches == [] and f._plans.hits == 0


def test_the_c_call_serves_given_outputs_by_name(function_class):
    cls, _ = function_class
    driver = FakeDriver()
    x, y, out = torch.randn(4, 3), torch.randn(4, 3), torch.empty(4, 3)
    f = cls(
        {
            arguments.call_signature((x, y, 0.5)): SimpleNamespace(hit=_record(driver)),
            arguments.call_signature((x, y, 0.5), (out,)): SimpleNamespace(
                hit=_record(driver, extents=_extents((x, y, 0.5), out))
            ),
        }
    )
    assert f(x, y, 0.5, out0=out) is out and driver.launches[-1][1][3] == out.data_ptr()
    allocated = f(x, y, 0.5, out0=None, unknown=None)  # asks for nothing, as in Python
    assert allocated is not out and driver.launches[-1][1][3] == allocated.data_ptr()
    assert f._plans.hits == 2


def test_the_c_call_lets_the_fallbacks_exception_through(module):
    def fallback(function, args, kwargs, key):
        raise ValueError(f"argument 'x' of {function!r}: expected a tensor")

    cls = type("Refusing", (Function,), {"__call__": module.call_method(fallback, SimpleNamespace(entry=None))})
    with pytest.raises(ValueError, match="argument 'x'"):
        cls({})(1, 2)


def test_processes_that_need_launch_c_at_once_compile_it_once(tmp_path):
    """The ranks of a distributed job start together in one empty cache: the first compiles
    launch.c (and likewise aten.cpp), the others wait for its file instead of compiling too."""
    try:
        cc = native.compiler("CC", "cc", "gcc")
    except OSError:
        pytest.skip("no C compiler here")
    log, wrapper = tmp_path / "compiles", tmp_path / "cc"
    wrapper.write_text(f'#!/bin/sh\necho compile >> "{log}"\nsleep 1\nexec "{cc}" "$@"\n')
    wrapper.chmod(0o755)
    env = {**os.environ, "CC": str(wrapper), "TRITONWISE_CACHE_DIR": str(tmp_path / "cache")}
    code = "from tritonwise.runtime import native; assert native.launch_module() is not None"
    ranks = [subprocess.Popen([sys.executable, "-c", code], env=env) for _ in range(4)]
    assert [rank.wait(timeout=300) for rank in ranks] == [0] * 4
    assert log.read_text().split() == ["compile"]
