"""A fast path that cannot be built (the C launcher, the ATen helpers) says so once, in a warning
naming the compiler's error, and calls go on through Python with the same results."""

import threading
import warnings
from types import SimpleNamespace

import pytest
import torch
import triton

from tritonwise import pointwise_dynamic
from tritonwise.runtime import aten, hit_path, native

BROKEN = "#error broken on purpose by the test\n"


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add(x, y, alpha):
    return x + y * alpha


@pytest.fixture
def broken_source(tmp_path, monkeypatch):
    """A source that no compiler accepts, with nothing reported yet in this process."""
    try:
        native.compiler("CXX", "c++", "g++")
        native.compiler("CC", "cc", "gcc")
    except OSError as e:
        pytest.skip(str(e))
    path = tmp_path / "broken.c"
    path.write_text(BROKEN)
    monkeypatch.setattr(native, "_reported", set())
    # where the hit path is on (a GPU, after earlier launches), it would ask the broken build for its tables
    monkeypatch.setattr(hit_path, "entry", None)
    yield path
    native.launch_module.cache_clear()  # the next caller builds (or finds) the real one
    aten.helpers.cache_clear()


def _build_warnings(record) -> list:
    return [str(w.message) for w in record if "could not be built" in str(w.message)]


def _add_matches_torch():
    x, y = torch.randn(3, 5), torch.randn(5)
    torch.testing.assert_close(add(x, y, 0.5), torch.add(x, y, alpha=0.5))


def test_a_launcher_that_does_not_compile_is_reported_once(broken_source, monkeypatch):
    monkeypatch.setattr(native, "SOURCE", broken_source)
    native.launch_module.cache_clear()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert native.launch_module() is None
        native.launch_module.cache_clear()  # asked again: built again, not reported again
        assert native.launch_module() is None
    [message] = _build_warnings(record)
    assert "C launcher" in message and "broken on purpose" in message
    _add_matches_torch()


def test_aten_helpers_that_do_not_compile_are_reported_once(broken_source, monkeypatch):
    monkeypatch.setattr(aten, "SOURCE", broken_source)
    aten.helpers.cache_clear()
    handed = []
    launch_module = SimpleNamespace(use_aten=lambda *addresses: handed.append(addresses))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(2):  # as two launch modules starting them would
            aten._build_and_use(launch_module)
    [message] = _build_warnings(record)
    assert "ATen helpers" in message and "broken on purpose" in message
    assert handed == []  # launch.c keeps torch's Python API
    _add_matches_torch()


def test_the_aten_helpers_build_against_the_installed_torch():
    """Built with the C++ standard this torch's headers need (C++20 from torch 2.14 on)."""
    try:
        native.compiler("CXX", "c++", "g++")
    except OSError as e:
        pytest.skip(str(e))
    assert len(aten.helpers().addresses()) == 6


def test_an_early_build_runs_beside_the_caller_and_reports_its_failure_there(broken_source, monkeypatch):
    """start_launch_build() compiles launch.c on another thread (beside Triton's compile of a
    first kernel); launch_module() waits for it and warns, in the caller, once."""
    threads = []
    real_build = native.build
    monkeypatch.setattr(native, "build", lambda *a: threads.append(threading.get_ident()) or real_build(*a))
    monkeypatch.setattr(native, "SOURCE", broken_source)
    monkeypatch.setattr(native, "_early_build", [])
    native.launch_module.cache_clear()
    native.start_launch_build()
    native.start_launch_build()  # one build at a time
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert native.launch_module() is None
    assert len(_build_warnings(record)) == 1
    assert len(threads) == 1 and threads[0] != threading.get_ident()  # compiled once, beside the caller


def test_without_a_compiler_no_early_build_starts(broken_source, monkeypatch):
    """No launch.c on disk and no C compiler: the first launch goes through Triton at once,
    without compiling the kernel for launch.c first."""
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(native.shutil, "which", lambda name: None)
    monkeypatch.setattr(native, "SOURCE", broken_source)
    monkeypatch.setattr(native, "_early_build", [])
    native.launch_module.cache_clear()
    assert native.start_launch_build() is False and native._early_build == []
