"""A cache directory other users can write is never imported from (runtime/trust.py): one
warning, and a private directory serves. Read-only caches owned by root or by the user stay
trusted. Ownership is set with chown (the suite runs as root here) and the user is passed as
`uid`, so the rule is exercised for an ordinary user too; the subprocess tests run a child as
`nobody` where the suite runs as root."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
import torch

from tests.support import payload_no_tl
from tests.support.paths import ROOT
from tritonwise import pointwise_dynamic
from tritonwise.runtime import cache, kernel_store, trust

USER, OTHER = 4242, 4343  # an ordinary user, and another one


def fresh_add():
    return pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])


def made(path: Path, mode: int, owner: int = 0) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, owner, -1)
    path.chmod(mode)
    return path


@pytest.fixture(autouse=True)
def no_root_needed_for_ancestors(tmp_path):
    if os.stat(tmp_path).st_uid != 0 or os.geteuid() != 0:
        pytest.skip("the suite is not running as root: chown cannot give directories to other users")


# ---------------------------------------------------------------------------------------------
# The rule, on directories and files.


@pytest.mark.parametrize(
    "mode, owner, expected",
    [
        (0o755, USER, None),  # the user's own
        (0o555, USER, None),  # the user's own, read-only
        (0o555, 0, None),  # root's, read-only (a deployment)
        (0o755, OTHER, "is owned by user 4343, neither root nor this user"),
        (0o777, USER, "is writable by every user (mode 777)"),
        (0o1777, 0, "is writable by every user (mode 1777)"),  # sticky is not enough for the directory itself
    ],
)
def test_a_directory_is_trusted_only_when_nobody_else_can_write_it(tmp_path, mode, owner, expected):
    directory = made(tmp_path / "cache", mode, owner)
    problem = trust.directory_problem(directory, uid=USER)
    assert problem == (None if expected is None else f"{directory} {expected}")


def test_every_ancestor_counts_except_a_root_owned_sticky_one(tmp_path):
    sticky = made(tmp_path / "sticky", 0o1777, 0)
    assert trust.directory_problem(made(sticky / "mine", 0o755, USER), uid=USER) is None
    open_parent = made(tmp_path / "open", 0o777, 0)
    assert trust.directory_problem(made(open_parent / "mine", 0o755, USER), uid=USER) == (
        f"{open_parent} is writable by every user (mode 777)"
    )
    others_sticky = made(tmp_path / "others_sticky", 0o1777, OTHER)
    problem = trust.directory_problem(made(others_sticky / "mine", 0o755, USER), uid=USER)
    assert problem == f"{others_sticky} is owned by user 4343, neither root nor this user"


def test_a_missing_directory_is_judged_by_its_ancestors(tmp_path):
    assert trust.directory_problem(made(tmp_path / "safe", 0o755, USER) / "a" / "b", uid=USER) is None
    open_parent = made(tmp_path / "open", 0o777, 0)
    assert "writable by every user" in trust.directory_problem(open_parent / "a" / "b", uid=USER)


def test_a_symlink_is_judged_where_it_leads(tmp_path):
    target = made(made(tmp_path / "open", 0o777, 0) / "cache", 0o755, USER)
    link = made(tmp_path / "safe", 0o755, USER) / "cache"
    link.symlink_to(target)
    assert "writable by every user" in trust.directory_problem(link, uid=USER)


@pytest.mark.parametrize("private", [True, False])
def test_group_write_is_allowed_for_the_owners_private_group_only(tmp_path, monkeypatch, private):
    monkeypatch.setattr(trust, "private_group", lambda gid, owner: private)
    directory = made(tmp_path / "cache", 0o775, USER)
    problem = trust.directory_problem(directory, uid=USER)
    assert (problem is None) == private
    if not private:
        assert re.fullmatch(rf"{directory} is writable by group .* \(mode 775\)", problem)


class _Entry:
    def __init__(self, **fields):
        self.__dict__.update(fields)


@pytest.mark.parametrize(
    "members, primary_of_others, expected",
    [
        ([], [], True),  # alice's user-private group
        (["alice"], [], True),
        (["alice", "bob"], [], False),  # a team group
        ([], [4343], False),  # another user's primary group too
    ],
)
def test_private_group(monkeypatch, members, primary_of_others, expected):
    import grp
    import pwd

    users = [_Entry(pw_name="alice", pw_uid=USER, pw_gid=500)]
    users += [_Entry(pw_name=f"user{uid}", pw_uid=uid, pw_gid=500) for uid in primary_of_others]
    monkeypatch.setattr(grp, "getgrgid", lambda gid: _Entry(gr_name="alice", gr_mem=members))
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: next(u for u in users if u.pw_uid == uid))
    monkeypatch.setattr(pwd, "getpwall", lambda: users)
    assert trust.private_group.__wrapped__(500, USER) is expected


def test_an_entry_and_the_subdirectories_above_it_must_be_safe_too(tmp_path):
    directory = made(tmp_path / "cache", 0o755, USER)
    kernels = made(directory / "kernels", 0o755, USER)
    entry = kernels / "k.bin"
    entry.write_bytes(b"x")
    os.chown(entry, USER, -1)
    entry.chmod(0o644)
    assert trust.entry_problem(directory, entry, uid=USER) is None
    assert trust.entry_problem(directory, kernels / "missing.bin", uid=USER) is None
    entry.chmod(0o666)
    assert trust.entry_problem(directory, entry, uid=USER) == f"{entry} is writable by every user (mode 666)"
    entry.chmod(0o644)
    os.chown(entry, OTHER, -1)
    assert "is owned by user 4343" in trust.entry_problem(directory, entry, uid=USER)
    os.chown(entry, USER, -1)
    kernels.chmod(0o777)
    assert trust.entry_problem(directory, entry, uid=USER) == f"{kernels} is writable by every user (mode 777)"


def test_directories_and_files_tritonwise_makes_are_never_writable_by_everyone(tmp_path):
    previous = os.umask(0)
    try:
        cache.atomic_write(tmp_path / "a" / "b" / "f.py", "x = 1\n")
    finally:
        os.umask(previous)
    for path in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "f.py"):
        assert not path.stat().st_mode & 0o002, path


# ---------------------------------------------------------------------------------------------
# What the cache does with an untrusted directory.


def _planted(tmp_path: Path, monkeypatch, args) -> tuple:
    """A world-writable cache directory holding, under the name this call's file has, a file
    with a valid checksum whose kernel stores zeros: what another user could plant."""
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "honest"))
    honest = Path(fresh_add().explain(*args).path)
    shared = made(tmp_path / "shared", 0o777, 0)
    body = honest.read_text().rpartition(cache.CHECKSUM_PREFIX)[0]
    evil = re.sub(r"(tl\.store\(out0_ptr.*, )out0\b", r"\1(out0 * 0)", body)
    assert evil != body
    planted = shared / honest.name
    planted.write_text(cache.seal(evil))
    assert cache.verifies(planted)
    return shared, planted


def test_a_world_writable_cache_is_never_imported_from(tmp_path, monkeypatch):
    a, b = torch.randn(4, 5) + 1, torch.randn(5) + 1
    shared, planted = _planted(tmp_path, monkeypatch, (a, b))
    planted_text = planted.read_text()
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(shared))
    monkeypatch.delenv("TRITONWISE_CACHE_OVERLAY", raising=False)
    monkeypatch.setattr(cache, "_fallback_dir", None)
    monkeypatch.setattr(cache, "_warned", set())
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn = fresh_add()
            torch.testing.assert_close(fn(a, b), a + b, rtol=0, atol=0)
            x = torch.randn(6)
            torch.testing.assert_close(fn(x, x), x + x, rtol=0, atol=0)  # a second file
        messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(messages) == 1, messages
        assert f"not using the cache directory {shared}: {shared} is writable by every user" in messages[0]
        assert str(cache._fallback_dir) in messages[0]
        assert Path(fn.explain(a, b).path).parent == cache._fallback_dir
        assert planted.read_text() == planted_text and sorted(shared.iterdir()) == [planted]
    finally:
        shutil.rmtree(cache._fallback_dir, ignore_errors=True)


def test_the_kernel_store_never_loads_from_an_untrusted_directory(tmp_path, monkeypatch):
    identity = kernel_store.KernelIdentity("add_x.py", "0" * 64, "3.0", ("cuda", 90, 32), (), (), (), (), ())
    entry = kernel_store.StoredKernel(identity, b"\x7fELF", "k", 4, 0, {"num_ctas": 1})
    monkeypatch.setattr(cache, "_fallback_dir", None)
    monkeypatch.setattr(cache, "_warned", set())
    monkeypatch.delenv("TRITONWISE_CACHE_OVERLAY", raising=False)
    try:
        for mode, served in [(0o755, True), (0o777, False)]:
            directory = made(tmp_path / f"cache{mode:o}", mode, 0)
            cache.atomic_write(directory / identity.entry_name, kernel_store.encode(entry))
            monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(directory))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert (kernel_store.load(identity) == entry) is served, mode
    finally:
        if cache._fallback_dir is not None:
            shutil.rmtree(cache._fallback_dir, ignore_errors=True)


def test_generate_refuses_an_untrusted_directory(tmp_path):
    shared = made(tmp_path / "shared", 0o777, 0)
    env = dict(os.environ, TRITONWISE_CACHE_DIR=str(shared), PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "tritonwise", "generate", "tritonwise.demo:copy", "--ranks", "1"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and f"{shared} is writable by every user" in result.stderr
    assert list(shared.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# A read-only cache owned by root or by the user, read by an ordinary user (`nobody`).

NOBODY = 65534
CHILD = r"""
import json, sys, warnings
import torch, tritonwise
from tests.support import payload_no_tl
warnings.simplefilter("always")
add = tritonwise.pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
report = {}
with warnings.catch_warnings(record=True) as caught:
    for name, (a, b) in {"known": (torch.randn(6, 5), torch.randn(5)), "new": (torch.randn(9), torch.randn(9))}.items():
        report[name] = dict(path=add.explain(a, b).path, equal=bool(torch.equal(add(a, b), a + b)))
report["warnings"] = [str(w.message) for w in caught]
print(json.dumps(report))
"""


def _nobody_runs_python() -> bool:
    try:
        run = subprocess.run([sys.executable, "-c", "import torch"], user=NOBODY, group=NOBODY, extra_groups=[],
                             capture_output=True, timeout=300, cwd="/")
    except OSError:
        return False
    return run.returncode == 0


@pytest.fixture
def shared_root():
    """A directory `nobody` can reach (pytest's own is private to root)."""
    if not _nobody_runs_python():
        pytest.skip(f"user nobody cannot run {sys.executable} with torch here")
    path = Path(tempfile.mkdtemp(prefix="tritonwise-trust-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("owner", ["root", "the user"])
def test_a_read_only_cache_of_root_or_the_user_is_read_and_nothing_is_left_behind(shared_root, monkeypatch, owner):
    directory = shared_root / "deployed"
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(directory))
    known = Path(fresh_add().generate(torch.randn(6, 5), torch.randn(5)))
    for path in [directory, *directory.rglob("*")]:
        os.chown(path, 0 if owner == "root" else NOBODY, -1)
        path.chmod(0o555 if path.is_dir() else 0o444)
    temporary = made(shared_root / "tmp", 0o1777, 0)
    env = dict(os.environ, TRITONWISE_CACHE_DIR=str(directory), PYTHONPATH=str(ROOT), TMPDIR=str(temporary))
    env.pop("TRITONWISE_CACHE_OVERLAY", None)
    code = CHILD
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, user=NOBODY, group=NOBODY,
        extra_groups=[], cwd=shared_root,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["known"] == dict(path=str(known), equal=True)  # read from the read-only directory
    assert report["new"]["equal"] and Path(report["new"]["path"]).parent.parent == temporary
    assert len(report["warnings"]) == 1 and "is not writable; using" in report["warnings"][0], report["warnings"]
    assert list(temporary.iterdir()) == [], "the private directory outlived its process"
