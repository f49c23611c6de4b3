"""tests/compat/run_flaggems_tests.sh on a stand-in FlagGems checkout: a directory and a bare
git repository, each with a small tests/test_pointwise_dynamic.py written against flag_gems."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "run_flaggems_tests.sh"

FLAGGEMS_STYLE_TEST = '''
import torch
import triton
import triton.language as tl

import flag_gems
from flag_gems.utils.pointwise_dynamic import ComplexMode, pointwise_dynamic


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def scale(x, s):
    return x * s


def test_scale_on_the_shim_device():
    x = torch.randn(5, device=flag_gems.device)
    torch.testing.assert_close(scale(x, 3.0), x * 3.0)
'''


def _run(flaggems, *args, **env):
    environ = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **env)
    return subprocess.run(
        ["bash", str(SCRIPT), str(flaggems), *args], capture_output=True, text=True, env=environ, timeout=300
    )


@pytest.fixture
def checkout(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_pointwise_dynamic.py").write_text(FLAGGEMS_STYLE_TEST)
    return tmp_path


def test_runs_a_checkout_directory(checkout):
    done = _run(checkout, "own")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_runs_the_file_of_a_bare_git_repository(checkout, tmp_path_factory):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(checkout)], check=True)
    subprocess.run([*git, "-C", str(checkout), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(checkout), "commit", "-qm", "tests"], check=True)
    bare = tmp_path_factory.mktemp("bare") / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(checkout), str(bare)], check=True)
    done = _run(bare, "own", "-k", "scale")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_refuses_an_unknown_mode_and_a_missing_checkout(checkout, tmp_path_factory):
    done = _run(checkout, "sideways")
    assert done.returncode == 2 and "MODE must be own, interpret or gpu, got 'sideways'" in done.stderr
    empty = tmp_path_factory.mktemp("empty")
    done = _run(empty, "own")
    assert done.returncode == 2 and "neither a FlagGems checkout" in done.stderr
