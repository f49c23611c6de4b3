"""`python -m tritonwise`: every user error ends in one line on stderr and a non-zero status,
never a traceback; `--help` works for every command; a closed pipe ends quietly; `generate`
handles reductions (the outputs it passes have the reduced shape)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.support import payload_no_tl
from tests.support.paths import ROOT
from tritonwise import pointwise_dynamic
from tritonwise.__main__ import main
from tritonwise.runtime import cache, inventory

MODULES = {
    "cli_broken_module": "raise RuntimeError('boom at import')\n",
    "cli_no_functions": "X = 1\n",
    "cli_reductions": '''
import triton
from tritonwise import pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)])
@triton.jit
def row_sum(x):
    return x * 2


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")], reductions=["sum"])
@triton.jit
def full_sum(x):
    return x * 2
''',
    "cli_second_dim": '''
import triton
from tritonwise import pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")], reductions=[("max", 1)])
@triton.jit
def second_dim_max(x):
    return x + 1
''',
}


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cli_modules")
    for name, text in MODULES.items():
        (directory / f"{name}.py").write_text(text)
    return directory


def start(args, cache: Path, modules: Path = None, **popen):
    path = os.pathsep.join(str(p) for p in (ROOT, modules) if p is not None)
    env = dict(os.environ, TRITONWISE_CACHE_DIR=str(cache), PYTHONPATH=path)
    return subprocess.Popen(
        [sys.executable, "-m", "tritonwise", *args], env=env, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, **popen,
    )


def run_all(commands: dict) -> dict:
    """Start every command (name -> Popen), then wait for each: name -> (status, stdout, stderr)."""
    done = {}
    for name, proc in commands.items():
        out, err = proc.communicate(timeout=300)
        done[name] = (proc.returncode, out, err)
    return done


def run_here(args, capsys) -> tuple:
    """(status, stdout, stderr) of main(args) in this process: the same code as `python -m
    tritonwise`, without starting an interpreter (and importing torch) per case."""
    capsys.readouterr()
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(result, status: int, *words: str, after_progress=False):
    """One line on stderr (the last one, after generate's progress and skipped lines)."""
    code, out, err = result
    assert "Traceback" not in err, err
    assert code == status, (code, err)
    assert err.endswith("\n") and (after_progress or err.count("\n") == 1), err
    last = err.splitlines()[-1]
    assert last.startswith("python -m tritonwise"), err
    for word in words:
        assert word in last, (word, err)


@pytest.fixture
def cache_with_files(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(directory))
    fn = pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
    fn(torch.randn(10), torch.randn(10))
    fn(torch.randn(3, 4), torch.randn(4))
    return directory


@pytest.mark.parametrize("args", [["--help"], ["cache", "--help"], ["generate", "--help"], ["demo", "--help"]])
def test_help_works_for_every_command(args, capsys):
    with pytest.raises(SystemExit) as exit:
        main(args)
    out, err = capsys.readouterr()
    assert exit.value.code == 0 and out.startswith("usage: python -m tritonwise") and err == ""


BAD_ARGUMENTS = {
    "no command": ([], "the following arguments are required: command"),
    "unknown command": (["bogus"], "invalid choice: 'bogus'"),
    "cache without action": (["cache"], "the following arguments are required: action"),
    "unknown cache action": (["cache", "bogus"], "invalid choice: 'bogus'"),
    "a name where none is taken": (["cache", "path", "extra"], "cache path: takes no file name (got 'extra')"),
    "show without a name": (["cache", "show"], "cache show: needs a file name"),
    "unknown option": (["cache", "list", "--bogus"], "unrecognized arguments: --bogus"),
    "demo with arguments": (["demo", "now"], "unrecognized arguments: now"),
    "generate without a module": (["generate"], "the following arguments are required: target"),
    "ranks not a number": (["generate", "tritonwise.demo:copy", "--ranks", "x"], "--ranks: expected a rank"),
    "ranks backwards": (["generate", "tritonwise.demo:copy", "--ranks", "3-1"], "got '3-1'"),
    "ranks negative": (["generate", "tritonwise.demo:copy", "--ranks=-1"], "got '-1'"),
    "shapes": (["generate", "tritonwise.demo:copy", "--shapes", "4xa"], "--shapes: expected shapes"),
    "dtype unknown": (["generate", "tritonwise.demo:copy", "--dtypes", "float32,floatt"], "'floatt' is not a torch dtype"),
    "dtype not a dtype": (["generate", "tritonwise.demo:copy", "--dtypes", "Tensor"], "'Tensor' is not a torch dtype"),
    "arch": (["generate", "tritonwise.demo:copy", "--compile", "--arch", "sm_xx"], "unknown GPU architecture 'sm_xx'"),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_are_one_line_and_status_2(name, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "cache"))
    args, words = BAD_ARGUMENTS[name]
    assert_one_line_error(run_here(args, capsys), 2, words)
    assert not (tmp_path / "cache").exists()


USER_ERRORS = {
    "no such module": (["generate", "nosuchmodule"], None, "generate: no module named 'nosuchmodule'"),
    "no such package": (["generate", "nosuchpkg.sub"], None, "no module named 'nosuchpkg'"),
    "a module that raises": (["generate", "cli_broken_module"], None, "RuntimeError: boom at import"),
    "no functions": (["generate", "cli_no_functions"], None, "cli_no_functions defines no pointwise_dynamic"),
    "not a function": (["generate", "tritonwise.demo:nosuch"], None, "is not a pointwise_dynamic function"),
    "no module named": (["generate", ":copy"], None, "names no module"),
    "unwritable cache": (["generate", "tritonwise.demo:copy"], "blocker/cache", "cannot write to the tritonwise"),
    "cache is a file": (["cache", "list"], "blocker", "blocker is not a directory"),
    "clear a file": (["cache", "clear"], "blocker", "blocker is not a directory"),
    "stats of a file": (["cache", "stats"], "blocker", "blocker is not a directory"),
    "show no match": (["cache", "show", "nothing_like_it"], None, "no cached file matches 'nothing_like_it'"),
}


@pytest.mark.parametrize("name", list(USER_ERRORS))
def test_user_errors_are_one_line_and_status_1(name, tmp_path, modules, monkeypatch, capsys, cache_with_files):
    args, cache, words = USER_ERRORS[name]
    (tmp_path / "blocker").write_text("not a directory\n")
    monkeypatch.syspath_prepend(str(modules))
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / cache if cache else cache_with_files))
    assert_one_line_error(run_here(args, capsys), 1, words)
    assert (tmp_path / "blocker").read_text() == "not a directory\n"


def test_generate_with_nothing_to_generate_fails(modules, monkeypatch, capsys, tmp_path):
    monkeypatch.syspath_prepend(str(modules))
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "cache"))
    result = run_here(["generate", "cli_second_dim", "--ranks", "0-1"], capsys)
    assert_one_line_error(result, 1, "nothing generated", "dim 1 is out of range", after_progress=True)


def test_generate_fails_when_a_file_cannot_go_into_the_cache(tmp_path, monkeypatch, capsys):
    """A directory occupies a file's name: the file would go to the process's private fallback,
    which is removed when generate exits."""
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "first"))
    assert run_here(["generate", "tritonwise.demo:copy", "--ranks", "1"], capsys)[0] == 0
    names = sorted(p.name for p in (tmp_path / "first").glob("*.py"))
    for name in names[:1]:
        (tmp_path / "second" / name).mkdir(parents=True)
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "second"))
    monkeypatch.setattr(cache, "_fallback_dir", None)
    try:
        with pytest.warns(RuntimeWarning, match="is a directory"):
            result = run_here(["generate", "tritonwise.demo:copy", "--ranks", "1"], capsys)
    finally:
        if cache._fallback_dir is not None:
            shutil.rmtree(cache._fallback_dir, ignore_errors=True)
    assert_one_line_error(result, 1, f"1 of {len(names)} files could not be written into", after_progress=True)


@pytest.mark.parametrize(
    "action, expected",
    [
        ("path", "{directory}\n"),
        ("list", ""),
        ("clear", "removed 0 generated files, 0 compiled kernels and 0 probe results from {directory}\n"),
        ("stats", "{directory}: 0 files, 0 bytes, 0 compiled kernels, 0 probe results; written 0 times, reused 0 times\n"),
    ],
)
def test_a_missing_cache_directory_is_empty_and_stays_missing(action, expected, tmp_path, monkeypatch, capsys):
    directory = tmp_path / "not" / "yet"
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(directory))
    assert run_here(["cache", action], capsys) == (0, expected.format(directory=directory), "")
    assert not (tmp_path / "not").exists()


def test_show_lists_the_files_a_prefix_matches(cache_with_files, capsys):
    code, out, err = run_here(["cache", "show", "add_r"], capsys)
    names = [p.name for p in inventory.generated_files(cache_with_files)]
    assert code == 1 and out == "" and len(names) == 2
    assert err.splitlines() == ["python -m tritonwise cache show: 2 cached files match 'add_r'; name one of them:"] + [
        f"  {name}" for name in names
    ]


def test_the_known_cases_through_the_interpreter(tmp_path, cache_with_files):
    """What a user types, in a fresh interpreter: the messages reach the terminal without a
    traceback (main() catches nothing that escapes `python -m tritonwise` differently)."""
    (tmp_path / "blocker").write_text("not a directory\n")
    procs = {
        "help": start(["--help"], tmp_path / "cache"),
        "bad argument": start(["cache", "bogus"], cache_with_files),
        "no such module": start(["generate", "nosuchmodule"], cache_with_files),
        "cache is a file": start(["cache", "list"], tmp_path / "blocker"),
    }
    results = run_all(procs)
    assert results["help"][0] == 0 and results["help"][1].startswith("usage:") and results["help"][2] == ""
    assert_one_line_error(results["bad argument"], 2, "invalid choice: 'bogus'")
    assert_one_line_error(results["no such module"], 1, "no module named 'nosuchmodule'")
    assert_one_line_error(results["cache is a file"], 1, "is not a directory")


@contextlib.contextmanager
def immutable(directory: Path):
    """`directory` made unwritable even for root (chattr +i), or the test skipped."""
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(directory)]).returncode != 0:
        pytest.skip("chattr +i is not available: no directory can be made read-only for root")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(directory)], check=True)


def read_only(directory: Path):
    if os.geteuid() == 0:
        return immutable(directory)
    return _chmod_read_only(directory)


@contextlib.contextmanager
def _chmod_read_only(directory: Path):
    directory.chmod(0o555)
    try:
        yield
    finally:
        directory.chmod(0o755)


def test_clear_on_a_read_only_cache_says_so_in_one_line(cache_with_files):
    """Through the interpreter: `cache clear` of a directory it cannot change."""
    before = sorted(p.name for p in cache_with_files.iterdir())
    with read_only(cache_with_files):
        result = run_all({"clear": start(["cache", "clear"], cache_with_files)})["clear"]
    code, out, err = result
    assert code == 1 and "Traceback" not in err and out.startswith("removed 0 generated files")
    assert err.count("\n") == 1 and "cache clear: cannot remove" in err and "(and " in err, err
    assert sorted(p.name for p in cache_with_files.iterdir()) == before


def test_a_closed_pipe_ends_quietly(cache_with_files):
    proc = start(["cache", "list"], cache_with_files)
    proc.stdout.close()  # the reader went away, as `| head` does
    err = proc.stderr.read()
    proc.wait(timeout=300)
    assert proc.returncode == 141 and err == "", err


def test_generate_gives_reductions_their_reduced_outputs(tmp_path, modules, monkeypatch):
    cache = tmp_path / "cache"
    code, out, err = run_all({"gen": start(["generate", "cli_reductions", "--ranks", "0-2"], cache, modules)})["gen"]
    assert code == 0 and "skipped" not in err and "Traceback" not in err, err
    files = sorted(p.name for p in cache.glob("*.py"))
    assert f"{len(files)} files in {cache}" in out
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(cache))
    monkeypatch.syspath_prepend(str(modules))
    import cli_reductions

    x = torch.randn(4, 4)
    for fn, expected in [(cli_reductions.row_sum, (x * 2).sum(-1)), (cli_reductions.full_sum, (x * 2).sum())]:
        out0 = torch.full_like(expected, float("nan"))
        got = fn(x, out0=out0)
        assert got is out0
        torch.testing.assert_close(got, expected)
        torch.testing.assert_close(fn(x), expected)
    assert sorted(p.name for p in cache.glob("*.py")) == files, "a call needed a file generate did not write"


def test_generate_skips_only_the_ranks_a_reduction_cannot_take(tmp_path, modules):
    cache = tmp_path / "cache"
    code, out, err = run_all({"gen": start(["generate", "cli_second_dim", "--ranks", "0-2"], cache, modules)})["gen"]
    assert code == 0 and "Traceback" not in err, err
    skipped = [line.strip() for line in err.splitlines() if "skipped" in line]
    assert [line.split(":")[0] for line in skipped] == [
        "skipped second_dim_max scalar float32",
        "skipped second_dim_max 4 float32",
    ]
    assert all("dim 1 is out of range" in line for line in skipped)
