"""The on-disk cache of generated files: reuse, headers, verification, fallback, and the CLI."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tests.support import payload_no_tl
from tests.support.cache_races import remove_each_file_once_verified
from tests.support.paths import ROOT, TESTS
import tritonwise
from tritonwise import pointwise_dynamic
from tritonwise.plans import binder, derived_payloads
from tritonwise.runtime import cache, inventory, kernel_store

CHECKSUM = "# tritonwise-checksum: "


def fresh_add():
    """A new function object (empty plan cache) over the same payload."""
    return pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "generated"
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(path))
    return path


def generated_files(directory: Path) -> list:
    return sorted(p.name for p in directory.glob("*.py"))


def run_python(code: str, cache_path: Path, timeout=120) -> subprocess.CompletedProcess:
    env = dict(os.environ, TRITONWISE_CACHE_DIR=str(cache_path), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------------------------------------
# Reuse.

SAME_CLASS = {
    "flat": (lambda: (torch.randn(20), torch.randn(20)), lambda: (torch.randn(37), torch.randn(37))),
    "nd": (lambda: (torch.randn(3, 5), torch.randn(5)), lambda: (torch.randn(6, 7), torch.randn(7))),
    "tile2d": (
        lambda: (torch.randn(9, 10), torch.randn(10, 9).t()),
        lambda: (torch.randn(12, 13), torch.randn(13, 12).t()),
    ),
}


@pytest.mark.parametrize("first, second", list(SAME_CLASS.values()), ids=list(SAME_CLASS))
def test_new_shape_of_same_layout_class_reuses_the_file(cache_dir, first, second):
    fn = fresh_add()
    a, b = first()
    torch.testing.assert_close(fn(a, b), a + b, rtol=0, atol=0)
    path = fn.explain(a, b).path
    files = generated_files(cache_dir)
    assert files == [Path(path).name]
    mtime = os.stat(path).st_mtime_ns

    c, d = second()
    torch.testing.assert_close(fn(c, d), c + d, rtol=0, atol=0)
    assert fn.explain(c, d).path == path
    assert generated_files(cache_dir) == files
    assert os.stat(path).st_mtime_ns == mtime


def test_new_layout_class_gets_a_new_file(cache_dir):
    fn = fresh_add()
    flat = fn.explain(torch.randn(20), torch.randn(20)).path
    nd = fn.explain(torch.randn(4, 5), torch.randn(5)).path
    fp64 = fn.explain(torch.randn(20, dtype=torch.float64), torch.randn(20, dtype=torch.float64)).path
    assert len({flat, nd, fp64}) == 3


def test_plan_cache_counts_a_hit_on_a_repeated_call(cache_dir):
    fn = fresh_add()
    a, b = torch.randn(4, 5), torch.randn(5)
    fn(a, b)
    assert (fn.plan_cache.hits, fn.plan_cache.misses) == (0, 1)
    fn(a, b)
    assert (fn.plan_cache.hits, fn.plan_cache.misses) == (1, 1)
    fn(torch.randn(4, 5), torch.randn(5))  # same signature, new data
    assert (fn.plan_cache.hits, fn.plan_cache.misses) == (2, 1)
    fn(torch.randn(6, 5), torch.randn(5))  # new shape: a new plan (same file)
    assert fn.plan_cache.misses == 2


def test_two_functions_over_one_payload_share_the_file(cache_dir):
    a, b = torch.randn(10), torch.randn(10)
    assert fresh_add().explain(a, b).path == fresh_add().explain(a, b).path
    assert len(generated_files(cache_dir)) == 1


# ---------------------------------------------------------------------------------------------
# What a generated file says about itself.


def test_generated_file_header_and_checksum(cache_dir):
    fn = fresh_add()
    a, b = torch.randn(4, 5), torch.randn(5)
    fn(a, b)
    e = fn.explain(a, b)
    text = Path(e.path).read_text()
    lines = text.splitlines()
    header = "\n".join(line for line in lines if line.startswith("#"))

    assert "payload_no_tl.add" in header
    assert tritonwise.__version__ in header
    assert re.search(rf"\brank\s+{len(e.task_shape)}\b", header)
    assert re.search(rf"\bscheme\s+{e.scheme}\b", header)
    key = Path(e.path).stem.rsplit("_", 1)[1]
    assert re.search(rf"\bkey\s+{key}\b", header)
    assert e.kernel in header

    assert lines[-1].startswith(CHECKSUM)
    body = text[: text.rindex(CHECKSUM)]
    assert lines[-1] == CHECKSUM + hashlib.sha256(body.encode()).hexdigest()
    assert text.endswith("\n")

    tree = ast.parse(text)
    assert e.kernel in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_unit_and_broadcast_strides_simplify_away(cache_dir):
    fn = fresh_add()
    contiguous = Path(fn.explain(torch.randn(30), torch.randn(30)).path).read_text()
    assert "_stride" not in contiguous
    row = Path(fn.explain(torch.randn(4, 5), torch.randn(5)).path).read_text()
    assert "in1_stride" not in row  # the broadcast row input walks only the unit innermost dim


def test_kernel_name_encodes_the_spec(cache_dir):
    e = fresh_add().explain(torch.randn(4, 5), torch.randn(5, 4).t())
    assert e.kernel.startswith("add_")
    assert f"r{len(e.task_shape)}" in e.kernel
    assert e.scheme in e.kernel
    assert f"i{e.index_bits}" in e.kernel
    assert Path(e.path).name.startswith(e.kernel)


# ---------------------------------------------------------------------------------------------
# Verification across processes: a corrupt file is regenerated, a good one reused untouched.

CASES = {
    "edited": "(torch.randn(24), torch.randn(24))",
    "truncated": "(torch.randn(4, 6), torch.randn(6))",
    "intact": "(torch.randn(6, 7), torch.randn(7, 6).t())",
}

CHILD = textwrap.dedent(
    """
    import json, torch, tritonwise
    from tests.support import payload_no_tl
    fn = tritonwise.pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
    cases = {cases}
    report = {{}}
    for name, (a, b) in cases.items():
        got = fn(a, b)
        report[name] = dict(path=fn.explain(a, b).path, equal=bool(torch.equal(got, a + b)))
    print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def cross_process(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cross_process_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONWISE_CACHE_DIR", str(directory))
        fn = fresh_add()
        paths = {}
        for name, expr in CASES.items():
            a, b = eval(expr)
            fn(a, b)
            paths[name] = Path(fn.explain(a, b).path)
    assert len(set(paths.values())) == 3
    originals = {name: p.read_text() for name, p in paths.items()}

    call = re.compile(r"= (\w+)\(in0, in1\)")
    assert call.search(originals["edited"]), "the payload call line was not found in the generated file"
    paths["edited"].write_text(call.sub(r"= \1(in0, in0)", originals["edited"], count=1))
    paths["truncated"].write_text(originals["truncated"][: len(originals["truncated"]) // 2])
    intact_stat = os.stat(paths["intact"])

    cases = "{" + ", ".join(f"{name!r}: {expr}" for name, expr in CASES.items()) + "}"
    result = run_python(CHILD.format(cases=cases), directory)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    return dict(paths=paths, originals=originals, report=report, intact_stat=intact_stat)


@pytest.mark.parametrize("name", ["edited", "truncated"])
def test_corrupt_file_is_regenerated(cross_process, name):
    path = cross_process["paths"][name]
    assert cross_process["report"][name]["path"] == str(path)
    assert path.read_text() == cross_process["originals"][name]
    assert cache.verifies(path)


@pytest.mark.parametrize("name", list(CASES))
def test_results_stay_correct_in_a_new_process(cross_process, name):
    assert cross_process["report"][name]["equal"]


def test_verified_file_is_reused_without_rewriting(cross_process):
    path = cross_process["paths"]["intact"]
    before = cross_process["intact_stat"]
    after = os.stat(path)
    assert cross_process["report"]["intact"]["path"] == str(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_corrupt_file_is_regenerated_in_process(cache_dir):
    fn = fresh_add()
    a, b = torch.randn(16), torch.randn(16)
    fn(a, b)
    path = Path(fn.explain(a, b).path)
    original = path.read_text()
    path.write_text(original.replace(CHECKSUM, CHECKSUM + "0"))
    assert not cache.verifies(path)
    second = fresh_add()  # a new function object misses its plan cache and checks the file again
    torch.testing.assert_close(second(a, b), a + b, rtol=0, atol=0)
    assert path.read_text() == original


def test_foreign_file_under_the_name_is_replaced(cache_dir):
    fn = fresh_add()
    a, b = torch.randn(12), torch.randn(12)
    path = Path(fn.explain(a, b).path)
    original = path.read_text()
    path.write_text("raise RuntimeError('not a tritonwise file')\n")
    torch.testing.assert_close(fresh_add()(a, b), a + b, rtol=0, atol=0)
    assert path.read_text() == original


# ---------------------------------------------------------------------------------------------
# Unwritable cache directory.


def test_unwritable_cache_dir_falls_back_with_a_warning(tmp_path, monkeypatch):
    blocker = tmp_path / "a_regular_file"
    blocker.write_text("a directory can never be created below a file\n")
    configured = blocker / "cache"
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(configured))
    monkeypatch.setattr(cache, "_fallback_dir", None)
    try:
        fn = fresh_add()
        a, b = torch.randn(3, 4), torch.randn(4)
        with pytest.warns(RuntimeWarning, match="not writable"):
            got = fn(a, b)
        torch.testing.assert_close(got, a + b, rtol=0, atol=0)
        path = Path(fn.explain(a, b).path)
        assert path.is_file()
        assert not str(path).startswith(str(configured))
        assert cache.verifies(path)
    finally:
        if cache._fallback_dir is not None:
            shutil.rmtree(cache._fallback_dir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The CLI.


def cli(*args, cache_path: Path, wait=True):
    env = dict(os.environ, TRITONWISE_CACHE_DIR=str(cache_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tritonwise", "cache", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc


def finish(proc, timeout=120):
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def test_cli_cache_commands(tmp_path, monkeypatch):
    directory = tmp_path / "cli_cache"
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(directory))
    fn = fresh_add()
    fn(torch.randn(10), torch.randn(10))
    fn(torch.randn(3, 4), torch.randn(4))
    names = generated_files(directory)
    assert len(names) == 2
    target = names[0]

    # read-only commands in parallel, then clear
    procs = {
        "path": cli("path", cache_path=directory),
        "list": cli("list", cache_path=directory),
        "show": cli("show", target, cache_path=directory),
        "show prefix": cli("show", target[:-8], cache_path=directory),
        "show missing": cli("show", "no_such_file", cache_path=directory),
    }
    results = {name: finish(p) for name, p in procs.items()}

    rc, out, err = results["path"]
    assert rc == 0, err
    assert out.strip() == str(directory)

    rc, out, err = results["list"]
    assert rc == 0, err
    for name in names:
        assert name in out
    assert len(out.strip().splitlines()) == 2

    rc, out, err = results["show"]
    assert rc == 0, err
    assert out == (directory / target).read_text()

    rc, out, err = results["show prefix"]
    assert rc == 0, err
    assert out == (directory / target).read_text()

    rc, out, err = results["show missing"]
    assert rc != 0
    assert "no_such_file" in err

    rc, out, err = finish(cli("clear", cache_path=directory))
    assert rc == 0, err
    assert out.startswith("removed 2 generated files, 0 compiled kernels and "), out
    assert generated_files(directory) == []


@pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") == "1", reason="interpreted payloads have no JIT cache key: no probe memo"
)
def test_probe_results_are_remembered_on_disk(tmp_path, monkeypatch):
    """A new process (here: a fresh function, so no memo in memory) reads the payload's value
    dtypes from the cache instead of starting the interpreter; a damaged entry is probed again,
    and a frozen process writes none."""
    from tritonwise.runtime.interpreter import probe

    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path))
    x, y = torch.randn(5).half(), torch.randn(5)
    first = fresh_add()
    torch.testing.assert_close(first(x, y), x + y)
    entries = list((tmp_path / "probes").glob("*.json"))
    assert len(entries) == 1 and '"float32"' in entries[0].read_text()

    def no_interpreter(*args):
        raise AssertionError("probed again")

    monkeypatch.setattr(probe, "value_dtypes", no_interpreter)
    again = fresh_add()
    torch.testing.assert_close(again(x, y), x + y)

    entries[0].write_text("{not json")
    monkeypatch.undo()
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path))
    third = fresh_add()
    torch.testing.assert_close(third(x, y), x + y)
    assert '"float32"' in entries[0].read_text()

    entries[0].unlink()
    with tritonwise.frozen():
        inputs = ((torch.float32, None), (torch.float32, None))
        assert probe.remembered_value_dtypes(third.payload_info, inputs) == (torch.float32,)
    assert not list((tmp_path / "probes").glob("*.json"))


# ---------------------------------------------------------------------------------------------
# `cache clear` and `cache list` touch only what tritonwise wrote.

USER_FILES = {
    "my_script.py": "print('my own script')\n",
    "axpy_notes.py": "# notes on axpy\n",
    "kernels/mine.bin": "not a kernel entry\n",
    "probes/0123456789abcdef01234567.json": '{"mine": true}',
    "probes/notes.json": "{}",
    ".stats.json": '{"my": "settings"}',
}


def fake_kernel(tag: str) -> kernel_store.StoredKernel:
    identity = kernel_store.KernelIdentity(
        file=f"add_{tag}.py", source="0" * 64, triton="3.0", target=("cuda", 90, 32),
        signature=(), attrs=(), constexprs=(), options=(), env=(),
    )
    return kernel_store.StoredKernel(identity, b"\x7fELF " + tag.encode(), "k", 4, 0, {"num_ctas": 1})


@pytest.fixture
def mixed_dir(tmp_path, monkeypatch):
    """A cache directory holding 2 generated files, 2 stored kernels and a probe result of
    tritonwise's beside the user's own files (some under names and in places like ours)."""
    directory = tmp_path / "mixed"
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(directory))
    fn = fresh_add()
    fn(torch.randn(10), torch.randn(10))
    fn(torch.randn(3, 4), torch.randn(4))
    kernel_store.save(fake_kernel("a"))
    kernel_store.save(fake_kernel("b"))
    # as runtime/interpreter/probe.py writes one (calls under TRITON_INTERPRET=1 remember none)
    cache.write(f"{cache.PROBES}/{'ab' * 12}.json", json.dumps({"inputs": "((torch.float32, None),)", "dtypes": None}))
    for name, text in USER_FILES.items():
        (directory / name).parent.mkdir(exist_ok=True)
        (directory / name).write_text(text)
    ours = {
        "files": sorted(p for p in directory.glob("*.py") if p.name not in USER_FILES),
        "kernels": sorted(p for p in directory.glob("kernels/*.bin") if p.name != "mine.bin"),
        "probes": sorted(p for p in directory.glob("probes/*.json") if f"probes/{p.name}" not in USER_FILES),
    }
    assert [len(ours[k]) for k in ("files", "kernels")] == [2, 2] and ours["probes"]
    return directory, ours


def test_cache_list_shows_only_tritonwise_files(mixed_dir):
    directory, ours = mixed_dir
    rc, out, err = finish(cli("list", cache_path=directory))
    assert rc == 0, err
    assert [line.split()[-1] for line in out.splitlines()] == [p.name for p in ours["files"]]


def test_cache_clear_removes_what_tritonwise_wrote_and_nothing_else(mixed_dir):
    directory, ours = mixed_dir
    rc, out, err = finish(cli("clear", cache_path=directory))
    assert rc == 0, err
    n = len(ours["probes"])
    assert out == f"removed 2 generated files, 2 compiled kernels and {n} probe result{'s' * (n != 1)} from {directory}\n"
    for kind, paths in ours.items():
        assert not [p.name for p in paths if p.exists()], f"{kind} left behind"
    for name, text in USER_FILES.items():
        assert (directory / name).read_text() == text, f"{name} changed or removed"
    left = sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())
    assert left == sorted(USER_FILES)


def test_cache_clear_counts_only_what_it_removed(mixed_dir):
    directory, ours = mixed_dir
    done = inventory.clear(directory)
    assert (done.files, done.kernels, done.probes, done.failed) == (2, 2, len(ours["probes"]), [])
    again = inventory.clear(directory)
    assert (again.files, again.kernels, again.probes) == (0, 0, 0)


def test_cache_clear_does_not_follow_a_linked_subdirectory(tmp_path, monkeypatch):
    """`kernels/` and `probes/` linked elsewhere: what they lead to is not the cache's to remove."""
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(elsewhere))
    kernel_store.save(fake_kernel("a"))
    cache.write(f"{cache.PROBES}/{'ab' * 12}.json", json.dumps({"inputs": "()", "dtypes": None}))
    theirs = sorted(p for p in elsewhere.rglob("*") if p.is_file())
    assert len(theirs) == 2 and inventory.kernels(elsewhere) and inventory.probes(elsewhere)
    directory = tmp_path / "cache"
    directory.mkdir()
    for sub in (cache.KERNELS, cache.PROBES):
        (directory / sub).symlink_to(elsewhere / sub)
    done = inventory.clear(directory)
    assert (done.kernels, done.probes, done.failed) == (0, 0, [])
    assert sorted(p for p in elsewhere.rglob("*") if p.is_file()) == theirs


@pytest.mark.parametrize("text", ["my notes", '{"runs": 12}', "[1, 2]", '{"written": "many"}', "{}"])
def test_a_stats_file_tritonwise_did_not_write_is_neither_written_nor_removed(cache_dir, text):
    cache_dir.mkdir(parents=True)
    (cache_dir / cache.STATS_FILE).write_text(text)
    torch.testing.assert_close(fresh_add()(torch.ones(3), torch.ones(3)), torch.full((3,), 2.0))
    assert inventory.stats(cache_dir)["files"] == 1
    inventory.clear(cache_dir)
    assert (cache_dir / cache.STATS_FILE).read_text() == text


def test_generated_files_run_as_verified_and_leave_no_bytecode(cache_dir, monkeypatch):
    """What runs is the text whose checksum was checked: no `__pycache__` is written or read (it
    would run whatever bytecode lies there), and a file removed right after it was verified (a
    `cache clear` meanwhile) still runs."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    verified = remove_each_file_once_verified(monkeypatch, binder)
    remove_each_file_once_verified(monkeypatch, derived_payloads)  # the backward's payload file
    x, y = torch.randn(4, 6, dtype=torch.float64, requires_grad=True), torch.randn(6, dtype=torch.float64)
    torch.testing.assert_close(fresh_add()(x, y), x + y)
    fresh_add()(x, y).sum().backward()
    torch.testing.assert_close(x.grad, torch.ones_like(x))
    assert not generated_files(cache_dir) and not (cache_dir / "__pycache__").exists()
    monkeypatch.setattr(binder, "ensure_file", verified)
    torch.testing.assert_close(fresh_add()(y, x.detach()), y + x.detach())
    assert len(generated_files(cache_dir)) == 1 and not (cache_dir / "__pycache__").exists()


def test_stats_groups_files_by_function(tmp_path):
    names = [
        "add_r1_flat_i32_f32_00f34509b114a452b460.py",
        "add_r3_nd_i32_f32_00f34509b114a452b461.py",
        "twice_backward_0123456789abcdef.py",
        "twice_backward_fedcba9876543210.py",
        "twice_backward_r1_flat_i32_f32_00f34509b114a452b462.py",
        "twice_r2_tile2d_i64_f16_00f34509b114a452b463.py",
        "amax_ties0_0123456789abcdef.py",
    ]
    for name in names:
        (tmp_path / name).write_text(cache.seal("x = 1\n"))
    assert inventory.stats(tmp_path)["per_function"] == {"add": 2, "twice_backward": 3, "twice": 1, "amax_ties0": 1}


def test_a_directory_under_a_files_name_is_named_in_the_warning(tmp_path, monkeypatch):
    """The cache directory is writable; only the file's own name is taken (by a directory)."""
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "first"))
    a, b = torch.randn(5, 3), torch.randn(3)
    name = Path(fresh_add().explain(a, b).path).name
    directory = tmp_path / "second"
    (directory / name).mkdir(parents=True)
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(directory))
    monkeypatch.setattr(cache, "_fallback_dir", None)
    try:
        with pytest.warns(RuntimeWarning) as caught:
            torch.testing.assert_close(fresh_add()(a, b), a + b, rtol=0, atol=0)
        messages = [str(w.message) for w in caught]
        assert len(messages) == 1 and f"{directory / name} is a directory" in messages[0], messages
        assert "not writable" not in messages[0]
        assert (directory / name).is_dir()
    finally:
        if cache._fallback_dir is not None:
            shutil.rmtree(cache._fallback_dir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The suite itself writes nothing into the user's home.


def test_collecting_the_suite_writes_nothing_into_home(tmp_path):
    """Test modules that register as_torch_op ops derive (and write) a backward at import, before
    any fixture runs: conftest must have redirected the cache by then."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TRITONWISE_CACHE_DIR"}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    modules = [str(TESTS / "features" / name) for name in ("test_autograd_op.py", "test_torch_op.py")]
    command = [sys.executable, "-m", "pytest", "-q", "--co", "-p", "no:cacheprovider", *modules]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert not [str(p) for p in home.rglob("*") if "tritonwise" in str(p).lower()]
