"""The compiled-kernel store on a CPU machine: the identity (key) of a launch matches what
Triton's JIT would compile, entries verify before use, damaged / foreign / skewed entries are
never served and get rebuilt, concurrent writers are safe, and `generate --compile` fills the
store for GPUs this machine does not have. Compiling for a GPUTarget needs no device."""

from __future__ import annotations

import ctypes
import dataclasses
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
import triton

from tests.support.kernel_store_calls import AXPBY, AXPBY_KINDS, CALLS, SM90, SM100, identity_of, launch_of, store_axpby
from tests.support.paths import ROOT
import tritonwise
from tritonwise import pointwise_dynamic
from tritonwise.codegen.render import payload_alias
from tritonwise.runtime import cache, inventory, kernel_store, kernels, loader

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") == "1", reason="TRITON_INTERPRET=1: @triton.jit interprets, nothing compiles"
)
@pytest.fixture
def store_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    return tmp_path / "cache"


# ---------------------------------------------------------------------------------------------
# The identity.


@pytest.mark.parametrize("call", list(CALLS))
def test_specialization_and_options_are_what_tritons_jit_compiles(store_dir, call):
    jit = pytest.importorskip("triton.runtime.jit")
    if not hasattr(jit, "create_function_from_signature"):
        pytest.skip("this Triton binds arguments differently")
    kernel, values, plan = launch_of(AXPBY, *CALLS[call]())
    backend = kernels._backend(SM90)
    jit_kwargs = kernels.jit_options(kernel, plan.num_warps)
    binder = jit.create_function_from_signature(kernel.signature, kernel.params, backend)
    bound, specialization, options = binder(*values, **jit_kwargs)
    options, signature, constexprs, attrs = kernel._pack_args(backend, jit_kwargs, bound, specialization, options)

    mine, divisible, constants = kernels.specialize(kernel, values)
    assert dict(mine) == signature
    assert {(i,): v for i, v in constants} == constexprs
    assert {(i,): backend.parse_attr("D") for i in divisible} == {k: v for k, v in attrs.items() if v}
    theirs = {k: v for k, v in options.__dict__.items() if k != "extern_libs"}
    assert {k: v for k, v in kernels.parsed_options(SM90, jit_kwargs) if k != "extern_libs"} == theirs


def test_identity_names_everything_that_changes_the_binary(store_dir):
    _, base = identity_of("nd aligned")
    assert base.triton == triton.__version__ and base.target == SM90 and base.file.endswith(".py")
    keys = {base.key}
    for field, value in [
        ("file", "other.py"),
        ("source", "0" * 64),
        ("triton", "0.0.0"),
        ("target", SM100),
        ("attrs", ()),
        ("constexprs", ((12, 1), (13, 1))),
        ("options", ()),
        ("env", (("TRITON_PTXAS_PATH", "/elsewhere/ptxas"),)),
    ]:
        changed = dataclasses.replace(base, **{field: value})
        assert changed.key not in keys, field
        keys.add(changed.key)
    assert ".sm90." in base.entry_name and base.entry_name.startswith(f"{cache.KERNELS}/")


def test_every_length_of_a_flat_class_shares_one_identity(store_dir):
    """No length is specialized: whole flat tiles are unmasked, the last one masked."""
    identities = set()
    for n in (64, 1024, 1025, 3 * 1024 + 7):
        kernel, values, plan = launch_of(AXPBY, torch.randn(n), torch.randn(n), 2.0, 3, True)
        assert plan.spec.scheme == "flat"
        identities.add(kernels.identity(plan.spec.file_name, kernel, values, plan.num_warps, SM90))
    assert len(identities) == 1


def test_other_values_of_one_class_share_the_identity_and_misalignment_does_not(store_dir):
    _, first = identity_of("nd aligned")
    kernel, values, plan = launch_of(AXPBY, torch.randn(96, 32), torch.randn(32), -1.0, 7, False)
    assert kernels.identity(plan.spec.file_name, kernel, values, plan.num_warps, SM90) == first
    x = torch.randn(64 * 32 + 4)[4:].view(64, 32)  # 16 bytes off: still aligned
    kernel, values, plan = launch_of(AXPBY, x, torch.randn(32), 2.0, 3, True)
    assert kernels.identity(plan.spec.file_name, kernel, values, plan.num_warps, SM90) == first
    x = torch.randn(64 * 32 + 1)[1:].view(64, 32)  # 4 bytes off
    kernel, values, plan = launch_of(AXPBY, x, torch.randn(32), 2.0, 3, True)
    assert kernels.identity(plan.spec.file_name, kernel, values, plan.num_warps, SM90).key != first.key


IDENTITY_CHILD = r"""
import sys, torch
from tests.support import kernel_store_calls as t
kernel, ident = t.identity_of("nd aligned")
print(ident.key)
"""


def test_identity_is_the_same_in_another_process_and_cache_directory(store_dir, tmp_path):
    _, ident = identity_of("nd aligned")
    env = dict(os.environ, PYTHONPATH=str(ROOT), TRITONWISE_CACHE_DIR=str(tmp_path / "elsewhere"))
    code = IDENTITY_CHILD
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-1] == ident.key


# ---------------------------------------------------------------------------------------------
# Entries: round trip, verification, damage, foreign and skewed entries, concurrency.


def fake_stored(ident, binary=b"\x7fELF not a real cubin"):
    return kernel_store.StoredKernel(ident, binary, "k", 4, 0, {"num_ctas": 1})


def test_an_entry_reads_back_as_written_and_is_readable_by_others(store_dir):
    _, ident = identity_of("nd aligned")
    path = kernel_store.save(fake_stored(ident))
    assert kernel_store.load(ident) == fake_stored(ident)
    assert path.stat().st_mode & 0o777 == 0o644 & ~cache.umask()


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data.replace(b"not a real", b"NOT A REAL"),  # a byte of the binary changed
        lambda data: data.replace(b'"num_warps":4', b'"num_warps":8'),  # the launch metadata changed
        lambda data: b"garbage",
    ],
)
def test_a_damaged_entry_is_never_served(store_dir, damage):
    _, ident = identity_of("nd aligned")
    path = kernel_store.save(fake_stored(ident))
    path.write_bytes(damage(path.read_bytes()))
    assert kernel_store.load(ident) is None


@pytest.mark.parametrize("field, value", [("triton", "3.0.0"), ("target", SM100), ("source", "f" * 64)])
def test_an_entry_for_another_identity_under_the_name_is_never_served(store_dir, field, value):
    """Version skew: an entry for another Triton, GPU or kernel source, even under this name."""
    _, ident = identity_of("nd aligned")
    foreign = fake_stored(dataclasses.replace(ident, **{field: value}))
    path = store_dir / ident.entry_name
    cache.atomic_write(path, kernel_store.encode(foreign))
    assert kernel_store.decode(path.read_bytes()) == foreign  # a valid entry, just not this one
    assert kernel_store.load(ident) is None


def test_a_damaged_entry_is_rebuilt_by_compiling(store_dir):
    kernel, ident = identity_of("nd aligned")
    path = store_dir / ident.entry_name
    path.parent.mkdir(parents=True)
    path.write_bytes(b"tritonwise-kernel 1\ntruncated")
    stored = kernels.stored_or_compiled(kernel, ident)
    assert stored.binary.startswith(b"\x7fELF") and ident.file.startswith(stored.name + "_")
    assert kernel_store.load(ident) == stored
    assert kernel_store.decode(path.read_bytes()) == stored


def test_concurrent_writers_and_readers_see_whole_entries(store_dir):
    _, ident = identity_of("nd aligned")
    entries = [fake_stored(ident, bytes([k]) * 200_000) for k in range(4)]
    seen, errors = [], []

    def write(entry):
        for _ in range(20):
            kernel_store.save(entry)

    def read():
        for _ in range(200):
            got = kernel_store.load(ident)
            if got is not None and got not in entries:
                errors.append(got)
            seen.append(got)

    threads = [threading.Thread(target=write, args=(e,)) for e in entries] + [threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and kernel_store.load(ident) in entries
    assert not [p for p in (store_dir / cache.KERNELS).iterdir() if p.suffix != ".bin"]  # no temporaries left


# ---------------------------------------------------------------------------------------------
# Cross-compiling: `generate --compile --arch` on a machine without a GPU.

PAYLOAD_MODULE = '''
import triton
import tritonwise
from tritonwise import pointwise_dynamic


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def aot_axpy(x, y, alpha):
    return x + y * alpha
'''


def generate(module_dir: Path, cache_path: Path, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{module_dir}", TRITONWISE_CACHE_DIR=str(cache_path))
    env["TRITON_CACHE_DIR"] = str(cache_path.parent / "triton")
    command = [sys.executable, "-m", "tritonwise", "generate", "aot_store_payload", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def payload_module(tmp_path, monkeypatch):
    (tmp_path / "aot_store_payload.py").write_text(PAYLOAD_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_generate_compile_cross_builds_what_a_deployment_looks_up(store_dir, payload_module, monkeypatch):
    result = generate(payload_module, store_dir, "--ranks", "2", "--compile", "--arch", "sm_90,sm_100")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "compiled kernels" in result.stdout and "[####" in result.stderr  # the progress bar
    entries = inventory.kernels(cache.configured_dir())
    assert entries and {".sm90." in p.name for p in entries} == {True, False}
    assert all(kernel_store.decode(p.read_bytes()) is not None for p in entries)
    assert f" and {len(entries)} newly compiled kernels ({len(entries)} in the store)" in result.stdout
    again = generate(payload_module, store_dir, "--ranks", "2", "--compile", "--arch", "sm_90,sm_100")
    assert f" and 0 newly compiled kernels ({len(entries)} in the store)" in again.stdout, again.stderr[-3000:]

    import aot_store_payload

    def no_compiling(*args, **kwargs):
        raise AssertionError("triton.compile was called")

    monkeypatch.setattr(triton, "compile", no_compiling)
    # New shapes of the classes generated for rank 2 (flat; tile2d with extents of 3 to 4).
    for x, y in [(torch.randn(40, 24), torch.randn(40, 24)), (torch.randn(4, 3).t(), torch.randn(3, 4))]:
        kernel, values, plan = launch_of(aot_store_payload.aot_axpy, x, y, 0.5)
        for target in (SM90, SM100):
            stored = kernel_store.load(kernels.identity(plan.spec.file_name, kernel, values, plan.num_warps, target))
            assert stored is not None and stored.binary.startswith(b"\x7fELF"), (plan.spec.file_name, target)
        assert kernels.compile_ahead(plan.spec.file_name, kernel, values, plan.num_warps, [SM90, SM100]) == 0


def test_generate_shapes_builds_the_kernels_of_deployment_sized_calls(store_dir, payload_module):
    result = generate(payload_module, store_dir, "--shapes", "48x80", "--compile", "--arch", "sm_90")
    assert result.returncode == 0, result.stderr[-3000:]
    import aot_store_payload

    y = torch.randn(64, 80)
    for x, other in [(torch.randn(64, 80), y), (torch.randn(64, 80), y[0]), (torch.randn(80, 64).t(), y)]:
        kernel, values, plan = launch_of(aot_store_payload.aot_axpy, x, other, 0.5)
        ident = kernels.identity(plan.spec.file_name, kernel, values, plan.num_warps, SM90)
        assert kernel_store.load(ident) is not None, plan.spec.file_name


def test_generate_into_an_unwritable_directory_fails_loudly(tmp_path, payload_module):
    blocker = tmp_path / "a_file"
    blocker.write_text("no directory can be made below a file\n")
    result = generate(payload_module, blocker / "cache", "--ranks", "1")
    assert result.returncode != 0
    assert "cannot write to the tritonwise cache directory" in result.stderr and str(blocker) in result.stderr


def test_generate_compile_without_a_gpu_asks_for_targets(tmp_path, payload_module):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: --compile targets it")
    result = generate(payload_module, tmp_path / "cache", "--ranks", "1", "--compile")
    assert result.returncode != 0 and "--arch" in result.stderr


def test_targets_parse_from_their_usual_names():
    assert [kernels.parse_target(t) for t in ("sm_90", "sm90a", "100", "gfx942")] == [
        SM90,
        SM90,
        SM100,
        ("hip", "gfx942", 64),
    ]
    with pytest.raises(ValueError, match="unknown GPU architecture 'ampere'"):
        kernels.parse_target("ampere")


# ---------------------------------------------------------------------------------------------
# A plan's first launch, with a stand-in for the CUDA driver: compiled and stored once, then
# (in what stands for a new process) loaded from the store without triton.compile.

LAUNCH_KERNEL = ctypes.CFUNCTYPE(
    ctypes.c_int, *[ctypes.c_void_p] + [ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
)


class StandInDriver:
    """cuLaunchKernel recording (function, grid, threads, shared) and loads recording binaries."""

    def __init__(self):
        self.launches, self.loaded = [], []
        self.cuLaunchKernel = LAUNCH_KERNEL(self._launch)

    def _launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launches.append((function, (gx, gy, gz), bx, shared))
        return 0

    def load_function(self, binary, name, device_index):
        self.loaded.append((binary[:4], name, device_index))
        return 0xF00D


@pytest.fixture
def stand_in_gpu(monkeypatch, store_dir):
    from tritonwise.runtime import cuda_driver, native

    if native.launch_module() is None:
        pytest.skip("no C compiler or Python headers: launch.c cannot be built here")
    monkeypatch.setenv("TRITONWISE_KERNEL_STORE", "1")
    fake = StandInDriver()
    sizes = {"*": 8, "i32": 4, "i64": 8, "fp32": 4, "u1": 1}

    def param_sizes(function):
        signature = kernels._loaded[next(iter(kernels._loaded))].src.signature.values()
        return [sizes[t[0] if t.startswith("*") else t] for t in signature if t != "constexpr"] + [8, 8]

    monkeypatch.setattr(cuda_driver, "driver", lambda: fake)
    monkeypatch.setattr(cuda_driver, "param_sizes", param_sizes)
    monkeypatch.setattr(cuda_driver, "load_function", fake.load_function)
    monkeypatch.setattr(kernels, "device_target", lambda index: SM90)
    monkeypatch.setattr(kernels, "_loaded", {})
    monkeypatch.setattr(kernels, "_specialized", {})
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0, raising=False)
    return fake


def gpu_plan(fn, *args):
    """The plan of a call as it would be on cuda:0, built from CPU tensors."""
    outs = fn.outputs({})
    plan = fn.plan(args, outs, True)
    alias = payload_alias(plan.spec.payload_name, plan.spec.kernel_name)
    module = loader.load(plan.path, plan.spec.kernel_name, alias, fn.payload_info, "gpu")
    plan = dataclasses.replace(plan, launch=module.launch, device=torch.device("cuda", 0), interpreted=False)
    return plan, list(args), [torch.empty(plan.out_shape)]


def test_first_launch_compiles_stores_then_loads_without_compiling(stand_in_gpu, monkeypatch):
    plan, inputs, outputs = gpu_plan(AXPBY, *CALLS["nd aligned"]())
    launch = kernels.first_launch(plan, inputs, outputs)
    assert launch.__qualname__.startswith("own_launcher")
    assert len(inventory.kernels(cache.configured_dir())) == 1 and stand_in_gpu.loaded[0][0] == b"\x7fELF"
    launch(inputs, outputs)
    threads = 32 * plan.num_warps
    assert stand_in_gpu.launches == [(0xF00D, (plan.grid[0], 1, 1), threads, 0)] * 2

    def no_compiling(*args, **kwargs):
        raise AssertionError("triton.compile was called")

    monkeypatch.setattr(triton, "compile", no_compiling)
    monkeypatch.setattr(kernels, "_loaded", {})  # as a new process: nothing loaded yet
    monkeypatch.setattr(kernels, "_specialized", {})
    fresh = pointwise_dynamic(store_axpby, is_tensor=AXPBY_KINDS, promotion_methods=[(0, 1, 2, "DEFAULT")])
    plan, inputs, outputs = gpu_plan(fresh, *CALLS["nd aligned"]())
    assert kernels.first_launch(plan, inputs, outputs).__qualname__.startswith("own_launcher")
    assert len(stand_in_gpu.loaded) == 2 and len(stand_in_gpu.launches) == 3


def test_first_launch_frozen_compiles_nothing_and_names_the_call(stand_in_gpu):
    plan, inputs, outputs = gpu_plan(AXPBY, *CALLS["tile2d, n == 1"]())
    frozen_call = r"store_axpby\(float32\[7, 5\] strides \(1, 7\), float32\[7, 5\]"
    with tritonwise.frozen(), pytest.raises(tritonwise.FrozenError, match=frozen_call):
        kernels.first_launch(plan, inputs, outputs)
    assert not inventory.kernels(cache.configured_dir()) and not stand_in_gpu.launches


@pytest.mark.parametrize("n", [64, 63])  # size0 specialized (a multiple of 16) or not
def test_a_derived_plan_runs_the_templates_kernel_on_its_own_grid(stand_in_gpu, monkeypatch, n):
    plan, inputs, outputs = gpu_plan(AXPBY, torch.randn(n), torch.randn(n), 2.0, 3, True)
    plan.direct = kernels.first_launch(plan, inputs, outputs)
    derived = dataclasses.replace(plan, grid=(3,), index_args=(3 * 1024 + n % 16, 3))
    monkeypatch.setattr(triton, "compile", None)  # nothing compiles or loads again
    kernels.Rebinding(plan).launcher(derived)(inputs, outputs)
    threads = 32 * plan.num_warps
    assert stand_in_gpu.launches == [(0xF00D, (plan.grid[0], 1, 1), threads, 0), (0xF00D, (3, 1, 1), threads, 0)]
    assert len(stand_in_gpu.loaded) == 1


def test_a_plan_another_specialization_would_run_is_not_derived(stand_in_gpu):
    plan, inputs, outputs = gpu_plan(AXPBY, *CALLS["nd aligned"]())
    plan.direct = kernels.first_launch(plan, inputs, outputs)
    assert kernels._kernel_of(plan).arg_names[len(inputs) + len(outputs)] == "size1"
    unaligned = dataclasses.replace(plan, index_args=(33, *plan.index_args[1:]))  # size1 is specialized on % 16
    assert kernels.Rebinding(plan).launcher(plan) is not None
    assert kernels.Rebinding(plan).launcher(unaligned) is None


def test_a_payload_scalar_specialized_on_its_value_is_never_derived(stand_in_gpu, monkeypatch):
    plan, inputs, outputs = gpu_plan(AXPBY, torch.randn(64), torch.randn(64), 2.0, 3, True)
    plan.direct = kernels.first_launch(plan, inputs, outputs)
    kernel = kernels._kernel_of(plan)
    monkeypatch.setattr(kernel.params[3], "do_not_specialize", False)  # the int scalar n
    assert kernels.Rebinding(plan).launcher(dataclasses.replace(plan, grid=(3,))) is None


def test_a_new_shape_the_analysis_plans_takes_its_siblings_launcher(stand_in_gpu, monkeypatch):
    from tritonwise.plans.siblings import Siblings
    from tritonwise.runtime import hit_path
    from tritonwise.runtime.arguments import call_signature

    monkeypatch.setattr(hit_path, "enable", lambda: None)  # no C hit path on the stand-in
    calls = [(torch.randn(n, 32), torch.randn(32), 2.0, 3, True) for n in (64, 48)]
    (first, inputs, outputs), (second, inputs2, outputs2) = [gpu_plan(AXPBY, *c) for c in calls]
    assert first.spec.file_name == second.spec.file_name and first.grid != second.grid
    siblings = Siblings()
    siblings.adopt(call_signature(calls[0]), first)
    first.direct = kernels.first_launch(first, inputs, outputs)
    monkeypatch.setattr(triton, "compile", None)  # nothing compiles or loads again
    siblings.adopt(call_signature(calls[1]), second)
    second.direct(inputs2, outputs2)
    threads = 32 * first.num_warps
    assert stand_in_gpu.launches[-1] == (0xF00D, (second.grid[0], 1, 1), threads, 0)
    assert len(stand_in_gpu.loaded) == 1
    misaligned = (torch.randn(65)[1:].view(2, 32), torch.randn(32), 2.0, 3, True)
    third, _, _ = gpu_plan(AXPBY, *misaligned)
    siblings.adopt(call_signature(misaligned), third)
    assert third.direct is None  # another class: its own first launch
    fourth, _, _ = gpu_plan(AXPBY, torch.randn(40, 32), torch.randn(32), 2.0, 3, True)
    fourth.index_args = (33, *fourth.index_args[1:])  # a size Triton specializes on, not divisible by 16
    siblings.adopt(call_signature(calls[0]), fourth)
    assert fourth.direct is None  # another specialization: its own first launch, then a sibling
    assert len(siblings._groups[next(iter(siblings._groups))]) == 2
