"""The installed FlagGems on the engine chosen by TRITONWISE_FLAGGEMS_ENGINE, as a pytest plugin.

    python -m pytest -p flaggems_engine tests/test_cosh.py ...    (this file's folder on sys.path)

`tritonwise`: `flag_gems.utils.pointwise_dynamic` is tritonwise before `flag_gems` is imported, the
one-line swap a FlagGems user makes; `native`: FlagGems' own generator. Importing this module
imports `flag_gems` and checks the swap took: every pointwise function in FlagGems' modules must
belong to the chosen engine, or the run stops before its first test.

TRITONWISE_COMPAT_DEVICE=cpu runs FlagGems' tests on CPU tensors: FlagGems finds no device on a
machine without a GPU, so it is told it is on NVIDIA (GEMS_VENDOR) and given the GPU name its
config cache is named after; then `flag_gems.device` and the dispatch key its `use_gems()`
registers under become the CPU's. The native engine needs TRITON_INTERPRET=1 there.

TRITONWISE_FLAGGEMS_RESULTS=PATH appends each test's outcome to PATH as a JSON line;
TRITONWISE_FLAGGEMS_SHARD=i/n runs every n-th test from the i-th.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace

ENGINES = ("tritonwise", "native")


def swap_engine(engine: str) -> None:
    """Make `flag_gems.utils.pointwise_dynamic` tritonwise (engine "tritonwise") before import."""
    if engine not in ENGINES:
        raise ValueError(f"TRITONWISE_FLAGGEMS_ENGINE must be one of {ENGINES}, got {engine!r}")
    if "flag_gems" in sys.modules:
        raise RuntimeError("flag_gems was imported before its engine was chosen")
    if engine == "tritonwise":
        import tritonwise

        sys.modules["flag_gems.utils.pointwise_dynamic"] = tritonwise


def pretend_gpu_for_import() -> None:
    """What `import flag_gems` and its tests' skip conditions ask of a GPU, on a machine without
    one: its vendor, its name and its properties (no memory, so memory-hungry cases skip)."""
    import torch

    os.environ.setdefault("GEMS_VENDOR", "nvidia")
    if not torch.cuda.is_available():
        host = SimpleNamespace(name="cpu", total_memory=0, major=0, minor=0, multi_processor_count=1)
        torch.cuda.get_device_name = lambda *args, **kwargs: host.name
        torch.cuda.get_device_properties = lambda *args, **kwargs: host


def move_to_cpu(flag_gems) -> None:
    """FlagGems' tests make tensors on `flag_gems.device`; `use_gems()` registers under the
    detector's dispatch key."""
    flag_gems.device = "cpu"
    flag_gems.runtime.device.name = "cpu"
    flag_gems.runtime.device.dispatch_key = "CPU"


def pointwise_functions(flag_gems) -> dict:
    """Every pointwise function object in FlagGems' loaded modules (its NVIDIA architecture
    overrides, loaded as top-level `hopper.ops...`, included): {module: {name: engine}}."""
    import tritonwise

    root = Path(flag_gems.__file__).resolve().parent
    found, seen = {}, set()
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if not origin or root not in Path(origin).resolve().parents:
            continue
        for name, value in list(vars(module).items()):
            if type(value).__name__ == "PointwiseDynamicFunction":
                engine = "tritonwise" if isinstance(value, tritonwise.PointwiseDynamicFunction) else "native"
                found.setdefault(module.__name__, {})[name] = engine
                seen.add((id(value), engine))
    return found, {engine: sum(e == engine for _, e in seen) for engine in ENGINES}


# FlagGems' tests of the generator itself, which name no op
GENERATOR_TESTS = ("test_pointwise_dynamic.py", "test_pointwise_type_promotion.py")
MARK = re.compile(r"@pytest\.mark\.(\w+)")


def pointwise_test_files(tests: Path) -> list:
    """FlagGems' test files for ops built on pointwise_dynamic: a file is chosen when it is named
    after a module that holds a pointwise function (test_cosh.py for ops/cosh.py), or when an op
    its marks name (`@pytest.mark.resolve_neg`) is a function of such a module."""
    modules = set(MODULES)
    stems = {sys.modules[name].__file__.rsplit("/", 1)[-1][:-3] for name in modules}
    chosen = []
    for path in sorted(tests.glob("test_*.py")):
        ops = [getattr(flag_gems, mark, None) for mark in MARK.findall(path.read_text())]
        if (path.name in GENERATOR_TESTS or path.stem[5:] in stems
                or any(getattr(op, "__module__", None) in modules for op in ops)):
            chosen.append(path.name)
    return chosen


def load(engine: str, device: str):
    swap_engine(engine)
    if device == "cpu":
        pretend_gpu_for_import()
    import flag_gems

    if device == "cpu":
        move_to_cpu(flag_gems)
    modules, counts = pointwise_functions(flag_gems)
    other = "native" if engine == "tritonwise" else "tritonwise"
    if counts[other] or not counts[engine]:
        strays = sorted(f"{m}.{n}" for m, names in modules.items() for n, e in names.items() if e == other)
        raise RuntimeError(f"engine {engine}: {counts[engine]} pointwise functions are {engine}'s, "
                           f"{counts[other]} are {other}'s: {strays[:5]}")
    return flag_gems, modules, counts


ENGINE = os.environ.get("TRITONWISE_FLAGGEMS_ENGINE", "tritonwise")
DEVICE = os.environ.get("TRITONWISE_COMPAT_DEVICE") or "cuda"
flag_gems, MODULES, COUNTS = load(ENGINE, DEVICE)
_outcomes: dict = {}  # test id -> outcome so far


def pytest_report_header(config):
    return f"FlagGems {flag_gems.__version__} on {ENGINE}: {COUNTS[ENGINE]} pointwise functions, device {DEVICE}"


def _record(nodeid: str, outcome: str) -> None:
    """Append one test's outcome to TRITONWISE_FLAGGEMS_RESULTS (JSON lines, written as tests end,
    so a process that dies mid-run leaves the outcomes before it)."""
    path = os.environ.get("TRITONWISE_FLAGGEMS_RESULTS")
    if path:
        with open(path, "a") as results:
            results.write(json.dumps([nodeid, outcome]) + "\n")


def pytest_runtest_logreport(report):
    """One outcome per test: failed if any phase failed, else skipped if any was, else passed."""
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif report.skipped and _outcomes.get(report.nodeid) != "failed":
        _outcomes[report.nodeid] = "skipped"
    elif report.when == "call" and report.nodeid not in _outcomes:
        _outcomes[report.nodeid] = "passed"
    if report.when == "teardown":
        _record(report.nodeid, _outcomes.get(report.nodeid, "failed"))


def pytest_collection_modifyitems(config, items):
    """TRITONWISE_FLAGGEMS_SHARD=i/n keeps every n-th collected test from the i-th: n processes
    over the same files share them out (their collection must agree, as a benchmark's does)."""
    shard = os.environ.get("TRITONWISE_FLAGGEMS_SHARD")
    if shard:
        index, count = map(int, shard.split("/"))
        config.hook.pytest_deselected(items=[item for i, item in enumerate(items) if i % count != index])
        items[:] = items[index::count]


def pytest_collectreport(report):
    """A file that fails to import counts as one failed test."""
    if report.failed:
        _record(report.nodeid, "failed")

if __name__ == "__main__":  # python flaggems_engine.py TESTS_DIR: the swap's proof and the chosen files
    print(json.dumps({"engine": ENGINE, "version": flag_gems.__version__, "functions": COUNTS,
                      "modules": len(MODULES), "files": pointwise_test_files(Path(sys.argv[1]))}))
