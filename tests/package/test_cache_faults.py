"""The on-disk cache under faults: concurrent writers, damaged or foreign files, bad directories.

Every scenario ends the same way: the results are right, nothing crashes, and each file left in
the cache verifies (`tritonwise.runtime.cache.verifies`). Processes that must start cold run
`runner.py` (written below) in a fresh interpreter; the payload lives in a small module both
this process and those subprocesses import, so all of them name the same generated files.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tritonwise.runtime.cache import CHECKSUM_PREFIX, seal, verifies

PAYLOAD_MODULE = "tw_cache_fault_payload"

PAYLOAD_SOURCE = '''
"""A payload and deterministic checks for tests/package/test_cache_faults.py."""
import torch
import triton

from tritonwise import pointwise_dynamic


@triton.jit
def fault_axpy(x, y, alpha):
    return x + y * alpha


def make_function():
    """A fresh function: an empty launch-plan cache, so the next call goes to the disk cache."""
    return pointwise_dynamic(fault_axpy, is_tensor=[True, True, False], promotion_methods=[(0, 1, 2, "DEFAULT")])


VARIANTS = ("nd", "flat", "tile2d", "int")


def operands(variant, seed=0):
    g = torch.Generator().manual_seed(seed)
    if variant == "nd":
        return torch.randn(3, 4, generator=g), torch.randn(4, generator=g), 0.5, None
    if variant == "flat":
        return torch.randn(6, generator=g, dtype=torch.float64), torch.randn(6, generator=g, dtype=torch.float64), -1.5, None
    if variant == "tile2d":
        return torch.randn(5, 7, generator=g).t(), torch.randn(7, 5, generator=g), 2.0, torch.full((7, 5), float("nan"))
    return (torch.randint(-50, 50, (2, 3, 4), generator=g, dtype=torch.int32),
            torch.randint(-50, 50, (3, 1), generator=g, dtype=torch.int32), 3, None)


def check(fn, variant, seed=0):
    """Run one variant, compare with torch; return (generated file, scheme)."""
    x, y, alpha, out = operands(variant, seed)
    outs = {} if out is None else {"out0": out}
    expected = x + y * alpha
    got = fn(x, y, alpha, **outs)
    if got.dtype != expected.dtype or not torch.equal(got, expected):
        raise AssertionError(f"{variant}: got {got}, expected {expected}")
    plan = fn.explain(x, y, alpha, **outs)
    return str(plan.path), plan.scheme
'''

RUNNER_SOURCE = '''
"""python runner.py SPEC_JSON: run the payload module's checks in this fresh process."""
import json
import os
import sys
import time
import types

spec = json.loads(sys.argv[1])
if spec.get("fake_version"):
    # Another library version: installed before tritonwise is first imported, as a reinstall would.
    fake = types.ModuleType("tritonwise._version")
    fake.__version__ = spec["fake_version"]
    sys.modules["tritonwise._version"] = fake
sys.path.insert(0, spec["payload_dir"])
import tw_cache_fault_payload as payload
import tritonwise

if spec.get("barrier"):
    open(f"{spec['barrier']}.ready.{os.getpid()}", "w").close()
    deadline = time.time() + 120
    while not os.path.exists(spec["barrier"] + ".go"):
        if time.time() > deadline:
            sys.exit("barrier timed out")
        time.sleep(0.002)

report = {"version": tritonwise.__version__, "runs": []}
for run in spec["runs"]:
    os.environ["TRITONWISE_CACHE_DIR"] = run["cache_dir"]
    fn = payload.make_function()
    results = []
    for variant in run["variants"]:
        try:
            path, scheme = payload.check(fn, variant)
            results.append({"variant": variant, "ok": True, "path": path, "scheme": scheme})
        except Exception as e:  # recorded, so one broken directory does not hide the others
            results.append({"variant": variant, "ok": False, "error": f"{type(e).__name__}: {e}"})
    report["runs"].append(results)
print("REPORT " + json.dumps(report))
'''


@pytest.fixture(scope="module")
def payload_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cache_fault_payload")
    (directory / f"{PAYLOAD_MODULE}.py").write_text(PAYLOAD_SOURCE)
    (directory / "runner.py").write_text(RUNNER_SOURCE)
    return directory


@pytest.fixture(scope="module")
def payload(payload_dir):
    sys.path.insert(0, str(payload_dir))
    try:
        module = importlib.import_module(PAYLOAD_MODULE)
    finally:
        sys.path.remove(str(payload_dir))
    yield module
    sys.modules.pop(PAYLOAD_MODULE, None)


def spawn(payload_dir: Path, runs: list, env: dict = None, **extra) -> subprocess.Popen:
    spec = {"payload_dir": str(payload_dir), "runs": runs, **extra}
    env = dict(os.environ, **(env or {}))
    if runs:
        env["TRITONWISE_CACHE_DIR"] = runs[0]["cache_dir"]
    return subprocess.Popen(
        [sys.executable, str(payload_dir / "runner.py"), json.dumps(spec)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple:
    """(report, stderr) of a runner process that must exit cleanly."""
    stdout, stderr = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"runner exited with {proc.returncode}\n{stdout}\n{stderr}"
    line = next(l for l in reversed(stdout.splitlines()) if l.startswith("REPORT "))
    return json.loads(line[len("REPORT ") :]), stderr


def run_fresh(payload_dir: Path, cache_dirs: list, variants=None, **extra) -> tuple:
    variants = list(variants or ("nd", "flat", "tile2d", "int"))
    return finish(spawn(payload_dir, [{"cache_dir": str(d), "variants": variants} for d in cache_dirs], **extra))


def assert_all_ok(results: list):
    failed = [r for r in results if not r["ok"]]
    assert not failed, f"wrong results or errors: {failed}"


def assert_cache_is_clean(directory: Path, expected_files: int):
    files = sorted(directory.glob("*.py"))
    assert len(files) == expected_files, [f.name for f in files]
    bad = [f.name for f in files if not verifies(f)]
    assert not bad, f"files that do not verify: {bad}"
    leftovers = sorted(p.name for p in directory.glob("*.tmp"))
    assert not leftovers, f"temporary files left behind: {leftovers}"


def generate_here(payload, directory: Path, monkeypatch) -> dict:
    """Generate every variant's file in `directory` from this process; variant -> path."""
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(directory))
    fn = payload.make_function()
    return {v: Path(payload.check(fn, v)[0]) for v in payload.VARIANTS}


# ---------------------------------------------------------------------------------------------
# Concurrent writers


def test_two_processes_generate_the_same_kernels_at_once(payload_dir, tmp_path):
    """Held at a barrier, then released together; three rounds, each into a fresh cache dir."""
    caches = [tmp_path / f"cache{k}" for k in range(3)]
    barrier = str(tmp_path / "barrier")
    runs = [{"cache_dir": str(c), "variants": ["nd", "flat", "tile2d", "int"]} for c in caches]
    procs = [spawn(payload_dir, runs, barrier=barrier) for _ in range(2)]
    deadline = time.time() + 180
    while len(list(tmp_path.glob("barrier.ready.*"))) < 2:
        assert time.time() < deadline, "runners never reached the barrier"
        assert all(p.poll() is None for p in procs), [finish(p) for p in procs if p.poll() is not None]
        time.sleep(0.01)
    Path(barrier + ".go").touch()
    reports = [finish(p)[0] for p in procs]

    for k, cache in enumerate(caches):
        for report in reports:
            assert_all_ok(report["runs"][k])
        paths = [[r["path"] for r in report["runs"][k]] for report in reports]
        assert paths[0] == paths[1], "both processes must name the same files"
        assert [r["scheme"] for r in reports[0]["runs"][k]] == ["nd", "flat", "tile2d", "nd"]
        assert_cache_is_clean(cache, 4)


def test_eight_threads_generate_the_same_kernels_at_once(payload, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "cache"))
    fn = payload.make_function()
    variants = list(payload.VARIANTS)
    barrier = threading.Barrier(8)
    errors, paths = [], set()

    def work(i):
        try:
            barrier.wait(timeout=60)
            for k in range(len(variants)):  # threads start on different variants, then meet on all
                path, _ = payload.check(fn, variants[(i + k) % len(variants)], seed=i)
                paths.add(path)
        except BaseException as e:  # reported below
            errors.append(f"thread {i}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors
    assert len(paths) == 4
    assert_cache_is_clean(tmp_path / "cache", 4)


# ---------------------------------------------------------------------------------------------
# Damaged and foreign files: a fresh process must regenerate them.


def _truncate(text: str) -> str:
    return text[: len(text) // 2]


def _drop_checksum(text: str) -> str:
    return text[: text.rindex(CHECKSUM_PREFIX)]


def _edit(text: str) -> str:
    """A changed store that would give wrong results if the file were trusted."""
    edited = re.sub(r"(tl\.store\(out0_ptr.*, )out0\b", r"\1(out0 * 0)", text)
    assert edited != text
    return edited


def _foreign(text: str) -> str:
    return "# not a tritonwise file\nraise RuntimeError('a foreign file was executed')\n"


def _sealed_by_another_version(text: str) -> str:
    """What another tritonwise version might have left under this name: its own header and code,
    with a valid checksum of its own."""
    body = _drop_checksum(text).replace("# Generated by tritonwise ", "# Generated by tritonwise 0.0.0-other, was ")
    return seal(_edit(body))


CORRUPTIONS = {
    "truncated": _truncate,
    "checksum-line-missing": _drop_checksum,
    "edited": _edit,
    "empty": lambda text: "",
    "foreign": _foreign,
    "sealed-by-another-version": _sealed_by_another_version,
}
BINARY_GARBAGE = b"\xff\xfe\x00garbage\x80"


@pytest.fixture(scope="module")
def corrupted_caches(payload, payload_dir, tmp_path_factory):
    """One cache dir per corruption, each file in it damaged that way after generation; then
    one fresh process runs every variant over every dir. kind -> (good texts, paths, results)."""
    root = tmp_path_factory.mktemp("corrupted_caches")
    kinds = list(CORRUPTIONS) + ["binary-garbage"]
    setup = {}
    with pytest.MonkeyPatch.context() as mp:
        for kind in kinds:
            paths = generate_here(payload, root / kind, mp)
            good = {v: p.read_text() for v, p in paths.items()}
            for p in paths.values():
                if kind == "binary-garbage":
                    p.write_bytes(BINARY_GARBAGE)
                else:
                    p.write_text(CORRUPTIONS[kind](p.read_text()))
                    if kind != "sealed-by-another-version":
                        assert not verifies(p)
            setup[kind] = (good, paths)
    report, _ = run_fresh(payload_dir, [root / kind for kind in kinds])
    return {kind: (*setup[kind], results) for kind, results in zip(kinds, report["runs"])}


@pytest.mark.parametrize(
    "kind",
    [
        "truncated",
        "checksum-line-missing",
        "edited",
        "empty",
        "binary-garbage",
        "foreign",
        "sealed-by-another-version",
    ],
)
def test_damaged_file_is_regenerated_by_a_fresh_process(corrupted_caches, kind):
    good, paths, results = corrupted_caches[kind]
    assert_all_ok(results)
    assert [Path(r["path"]) for r in results] == [paths[r["variant"]] for r in results]
    for variant, path in paths.items():
        assert verifies(path), f"{variant}: {path.name} does not verify after the run"
        assert path.read_text() == good[variant], f"{variant}: regenerated file differs from the original"
    assert_cache_is_clean(paths["nd"].parent, 4)


def test_regenerated_file_is_reused_afterwards(corrupted_caches, payload_dir):
    """After the repair, another fresh process reads the file and does not write it again."""
    _, paths, _ = corrupted_caches["truncated"]
    stamps = {v: p.stat().st_mtime_ns for v, p in paths.items()}
    report, _ = run_fresh(payload_dir, [paths["nd"].parent])
    assert_all_ok(report["runs"][0])
    assert {v: p.stat().st_mtime_ns for v, p in paths.items()} == stamps


# ---------------------------------------------------------------------------------------------
# Cache directories that are missing or unusable


def test_missing_cache_dir_is_created_on_demand(payload, tmp_path, monkeypatch):
    directory = tmp_path / "not" / "there" / "yet"
    paths = generate_here(payload, directory, monkeypatch)
    assert all(p.parent == directory for p in paths.values())
    assert_cache_is_clean(directory, 4)


@pytest.mark.parametrize("where", ["under-a-regular-file", "is-a-regular-file"])
def test_unusable_cache_dir_falls_back_to_a_temporary_one(payload_dir, tmp_path, where):
    blocker = tmp_path / "blocker"
    blocker.write_text("a regular file where the cache directory should be\n")
    configured = blocker / "cache" if where == "under-a-regular-file" else blocker
    temporary = tmp_path / "tmp"  # the child's temporary directory, to see what it leaves there
    temporary.mkdir()
    report, stderr = run_fresh(payload_dir, [configured], env={"TMPDIR": str(temporary)})
    results = report["runs"][0]
    assert_all_ok(results)
    assert "is not writable; using" in stderr and str(configured) in stderr, stderr
    assert stderr.count("RuntimeWarning") == 1, stderr
    fallback = Path(results[0]["path"]).parent
    assert fallback.parent == temporary and fallback.name.startswith("tritonwise-cache-")
    assert {Path(r["path"]).parent for r in results} == {fallback}
    assert list(temporary.iterdir()) == [], "the private directory outlived its process"
    assert blocker.read_text().startswith("a regular file")


# ---------------------------------------------------------------------------------------------
# Files from another library version


def test_another_library_version_uses_other_files(payload, payload_dir, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    ours = generate_here(payload, cache, monkeypatch)
    texts = {v: p.read_text() for v, p in ours.items()}
    stamps = {v: p.stat().st_mtime_ns for v, p in ours.items()}

    report, _ = run_fresh(payload_dir, [cache], fake_version="99.0.0-test")

    assert report["version"] == "99.0.0-test"
    results = report["runs"][0]
    assert_all_ok(results)
    theirs = {r["variant"]: Path(r["path"]) for r in results}
    for variant in ours:
        assert theirs[variant] != ours[variant], f"{variant}: both versions used {ours[variant].name}"
        assert theirs[variant].read_text().startswith("# Generated by tritonwise 99.0.0-test")
        assert ours[variant].read_text() == texts[variant] and ours[variant].stat().st_mtime_ns == stamps[variant]
    assert_cache_is_clean(cache, 8)
