"""Deployments: a read-only cache is read, never bypassed (new files go to an overlay), files
are readable by other users, and `tritonwise.freeze()` proves a warmed-up process generates
and compiles nothing."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from tests.support import payload_no_tl
from tests.support.paths import ROOT
import tritonwise
from tritonwise.runtime import cache


@contextlib.contextmanager
def read_only(directory: Path):
    """`directory` made unwritable for this process: chmod for a user, chattr +i for root (who
    writes through permissions); skips the test where neither can be done."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(directory)]).returncode != 0:
        pytest.skip("running as root without chattr +i: no directory can be made read-only")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(directory)], check=True)


CHILD = r"""
import json, sys, warnings
import torch, tritonwise
from tests.support import payload_no_tl
warnings.simplefilter("error")  # a read-only cache that holds every file warns about nothing
add = tritonwise.pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
report = {}
for name, (a, b) in {"known": (torch.randn(6, 5), torch.randn(5)), "new": (torch.randn(7, 5).t(), torch.randn(5, 7))}.items():
    if name == "new":
        warnings.simplefilter("default")
    out = add(a, b)
    report[name] = dict(path=add.explain(a, b).path, equal=bool(torch.equal(out, a + b)))
print(json.dumps(report))
"""


def test_a_read_only_cache_is_read_and_new_files_go_to_the_overlay(tmp_path):
    directory, overlay = tmp_path / "deployed", tmp_path / "overlay"
    env = dict(os.environ, PYTHONPATH=str(ROOT), TRITONWISE_CACHE_DIR=str(directory))
    add = tritonwise.pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
    os.environ["TRITONWISE_CACHE_DIR"], previous = str(directory), os.environ["TRITONWISE_CACHE_DIR"]
    try:
        known = Path(add.generate(torch.randn(6, 5), torch.randn(5)))  # the build step
    finally:
        os.environ["TRITONWISE_CACHE_DIR"] = previous
    before = {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}
    env["TRITONWISE_CACHE_OVERLAY"] = str(overlay)
    with read_only(directory):
        code = CHILD
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["known"] == dict(path=str(known), equal=True)  # read from the read-only directory
    assert report["new"]["equal"] and Path(report["new"]["path"]).parent == overlay
    assert {p.name: p.stat().st_mtime_ns for p in directory.iterdir()} == before  # nothing rewritten


def test_an_unwritable_cache_without_an_overlay_still_serves_its_files(tmp_path, monkeypatch):
    directory = tmp_path / "deployed"
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(directory))
    monkeypatch.delenv("TRITONWISE_CACHE_OVERLAY", raising=False)
    monkeypatch.setattr(cache, "_fallback_dir", None)
    add = tritonwise.pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
    a, b = torch.randn(4, 3), torch.randn(3)
    known = Path(add.generate(a, b))
    try:
        with read_only(directory):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                fresh = tritonwise.pointwise_dynamic(add.payload, promotion_methods=[(0, 1, "DEFAULT")])
                torch.testing.assert_close(fresh(a, b), a + b, rtol=0, atol=0)
                assert fresh.explain(a, b).path == str(known)
            with pytest.warns(RuntimeWarning, match="not writable"):
                fresh(torch.randn(3, 4).t(), torch.randn(4, 3))
    finally:
        if cache._fallback_dir is not None:
            shutil.rmtree(cache._fallback_dir, ignore_errors=True)


def test_an_overlay_that_cannot_be_used_is_named_in_the_warning(tmp_path, monkeypatch):
    directory, overlay = tmp_path / "deployed", tmp_path / "overlay"
    overlay.write_text("a file, not a directory\n")
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(directory))
    monkeypatch.setenv("TRITONWISE_CACHE_OVERLAY", str(overlay))
    monkeypatch.setattr(cache, "_fallback_dir", None)
    add = tritonwise.pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
    add.generate(torch.randn(4, 3), torch.randn(3))
    try:
        with read_only(directory), pytest.warns(RuntimeWarning, match=f"nor is TRITONWISE_CACHE_OVERLAY {overlay};"):
            fresh = tritonwise.pointwise_dynamic(add.payload, promotion_methods=[(0, 1, "DEFAULT")])
            a, b = torch.randn(3, 4).t(), torch.randn(4, 3)
            torch.testing.assert_close(fresh(a, b), a + b, rtol=0, atol=0)
    finally:
        if cache._fallback_dir is not None:
            shutil.rmtree(cache._fallback_dir, ignore_errors=True)
    assert overlay.read_text() == "a file, not a directory\n"


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_files_get_the_umask_s_read_bits_and_only_their_owner_writes(tmp_path, mask):
    """Readable as the umask allows, writable by the owner alone (runtime/trust.py would not
    trust a file its group could write unless the group were the owner's private one)."""
    previous = os.umask(mask)
    try:
        cache.atomic_write(tmp_path / "sub" / "f.py", "x = 1\n")
        cache.atomic_write(tmp_path / "sub" / "k.bin", b"\0")
    finally:
        os.umask(previous)
    for name in ("f.py", "k.bin"):
        assert (tmp_path / "sub" / name).stat().st_mode & 0o777 == 0o644 & ~mask


# ---------------------------------------------------------------------------------------------
# freeze()


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "cache"))
    yield tmp_path / "cache"
    while tritonwise.runtime.freeze.is_frozen():
        tritonwise.unfreeze()


def make_add():
    return tritonwise.pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])


def test_frozen_a_call_that_needs_a_new_file_raises_naming_the_call(fresh_cache):
    add = make_add()
    a, b = torch.randn(3, 4), torch.randn(4)
    torch.testing.assert_close(add(a, b), a + b)  # warm-up
    files = sorted(fresh_cache.glob("*.py"))
    with tritonwise.frozen():
        torch.testing.assert_close(add(a, b), a + b)  # known signature: fine
        x = torch.randn(5, 4)  # a new shape of a known layout class: its file is cached
        torch.testing.assert_close(add(x, b), x + b)
        with pytest.raises(tritonwise.FrozenError, match=r"add\(float32\[4, 4\] strides \(1, 4\), float32\[4\]"):
            add(torch.randn(4, 4).t(), b)  # a new layout class: a file would be generated
        assert sorted(fresh_cache.glob("*.py")) == files
    x = torch.randn(4, 4).t()
    torch.testing.assert_close(add(x, b), x + b)  # unfrozen again
    assert len(list(fresh_cache.glob("*.py"))) == len(files) + 1


def test_frozen_a_new_process_reads_cached_files_without_raising(fresh_cache):
    a, b = torch.randn(3, 4), torch.randn(4)
    make_add()(a, b)
    tritonwise.freeze()
    try:
        torch.testing.assert_close(make_add()(a, b), a + b, rtol=0, atol=0)  # the file is on disk
    finally:
        tritonwise.unfreeze()


def test_freeze_nests_and_unfreeze_undoes_one_level(fresh_cache):
    add, a, b = make_add(), torch.randn(2, 3), torch.randn(3)
    tritonwise.freeze()
    with tritonwise.frozen():
        pass
    with pytest.raises(tritonwise.FrozenError, match="generated file add_r2_nd"):
        add(a, b)
    tritonwise.unfreeze()
    torch.testing.assert_close(add(a, b), a + b)


SPLIT_CHILD = r"""
import torch, tritonwise
from tests.support import payload_no_tl
total = tritonwise.pointwise_dynamic(payload_no_tl.double, promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)])
x = torch.randn(2, 2**16).to(torch.bfloat16)
y = torch.randn(2, 2**16)
given = torch.empty(3, dtype=torch.bfloat16)[1:]  # an output one element into its storage
wider = torch.empty(2, dtype=torch.float64)  # an output whose combine is a file of its own
if sys.argv[1] == "generate":
    assert total.explain(x).split_parts > 1
    total.generate(x)
    total.generate(x, out0=given)
    total.generate(y, out0=wider)
else:
    with tritonwise.frozen():
        got = total(x)
        total(x, out0=given)
        total(y, out0=wider)
    for value in (got, given):
        torch.testing.assert_close(value.float(), (2 * x.float()).sum(-1), rtol=2e-2, atol=1.0)
    torch.testing.assert_close(wider, (2 * y).sum(-1).double(), rtol=1e-5, atol=1e-3)
"""


def test_a_split_reduction_generated_ahead_runs_frozen_in_a_new_process(fresh_cache):
    """`generate` writes the files of the reductions that combine a split's partials too, for an
    output it allocates and for given ones (one not 16-byte aligned, one of another dtype, whose
    combine is a file of its own), so a frozen process serves every call from disk."""
    env = {**os.environ, "TRITONWISE_CACHE_DIR": str(fresh_cache), "PYTHONPATH": str(ROOT)}
    for step in ("generate", "run"):
        code = "import sys\n" + SPLIT_CHILD
        result = subprocess.run(
            [sys.executable, "-c", code, step], env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, f"{step}: {result.stderr[-2000:]}"
