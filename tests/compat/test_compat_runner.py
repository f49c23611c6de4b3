"""The FlagGems runners of tests/compat on stand-ins: run_flaggems_tests.sh (FlagGems'
tests/test_pointwise_dynamic.py over the renaming shim) on a checkout and a bare git repository, and
flaggems_suite.py (FlagGems' own test files on the real package, generator swapped) on a wheel of a
tiny `flag_gems` laid out as FlagGems lays itself out, with its tests in a folder or a bare repository."""

import os
import shutil
import subprocess
import sys
import zipfile
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


# ---- flaggems_suite.py ------------------------------------------------------------------------

SUITE = Path(__file__).parent / "flaggems_suite.py"

PACKAGE = {
    "flag_gems/__init__.py": "from flag_gems import runtime\nfrom flag_gems.ops import *  # noqa\n"
                             "__version__ = '0.0.standin'\ndevice = runtime.device.name\n",
    "flag_gems/runtime/__init__.py": "from types import SimpleNamespace\n"
                                     "device = SimpleNamespace(name='cuda', dispatch_key='CUDA')\n",
    "flag_gems/utils/__init__.py": "from flag_gems.utils.pointwise_dynamic import pointwise_dynamic\n",
    "flag_gems/utils/pointwise_dynamic.py": "class PointwiseDynamicFunction:\n    pass\n\n\n"
                                            "def pointwise_dynamic(**options):\n"
                                            "    return lambda fn: PointwiseDynamicFunction()\n",
    "flag_gems/ops/__init__.py": "from flag_gems.ops.scale import scale\n",
    "flag_gems/ops/scale.py": "import triton\n\nfrom ..utils.pointwise_dynamic import pointwise_dynamic\n\n\n"
                              "@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, 'DEFAULT')])\n"
                              "@triton.jit\ndef scale(x, s):\n    return x * s\n",
}

# A pointwise function that does not come from flag_gems.utils.pointwise_dynamic, so the swap
# cannot reach it: the suite must refuse to run rather than count its tests as tritonwise's.
STRAY = {"flag_gems/ops/stray.py": "class PointwiseDynamicFunction:\n    pass\n\n\n"
                                   "stray = PointwiseDynamicFunction()\n",
         "flag_gems/ops/__init__.py": "from flag_gems.ops.scale import scale\nfrom flag_gems.ops import stray\n"}

TESTS = {
    "tests/__init__.py": "",
    "tests/conftest.py": "",
    "tests/test_scale.py": "import pytest\nimport torch\n\nimport flag_gems\n\n\n@pytest.mark.scale\n"
                           "def test_scale():\n    x = torch.randn(5, device=flag_gems.device)\n"
                           "    torch.testing.assert_close(flag_gems.scale(x, 3.0), x * 3.0)\n\n\n"
                           "def test_scale_wrong():\n    x = torch.randn(5, device=flag_gems.device)\n"
                           "    torch.testing.assert_close(flag_gems.scale(x, 3.0), x * 4.0)\n",
    "tests/test_unrelated.py": "def test_nothing_pointwise():\n    pass\n",
}


def _wheel(folder: Path, files: dict) -> Path:
    wheel = folder / "flag_gems-0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def _tests(folder: Path) -> Path:
    for name, text in TESTS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _suite(wheel, tests, *args, **env_vars):
    path = os.pathsep.join(filter(None, [str(SUITE.parents[2]), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path, **env_vars)
    command = [sys.executable, str(SUITE), "--wheel", str(wheel), "--tests", str(tests), "--device", "cpu", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_runs_the_pointwise_files_on_tritonwise_and_counts_them(tmp_path):
    done = _suite(_wheel(tmp_path, PACKAGE), _tests(tmp_path / "fg"))
    assert "pointwise functions {'tritonwise': 1, 'native': 0}" in done.stdout, done.stdout + done.stderr
    assert "1 test files: test_scale.py" in done.stdout
    assert "| test_scale.py | 1 / 1 / 0 |" in done.stdout
    assert done.returncode == 1  # the wrong test fails, and the suite says so


def test_reports_only_the_files_that_finished_in_time(tmp_path):
    done = _suite(_wheel(tmp_path, PACKAGE), _tests(tmp_path / "fg"), "--seconds", "0")
    assert "not finished in 0 s, left out: test_scale.py" in done.stdout, done.stdout + done.stderr
    assert "| test_scale.py |" not in done.stdout and "| total | 0 / 0 / 0 |" in done.stdout
    assert done.returncode == 2  # a cut run never passes for a whole one


def test_a_shard_runs_every_nth_test(tmp_path):
    """The benchmark runner compiles ahead in shards: TRITONWISE_FLAGGEMS_SHARD=1/2 keeps the
    second of the two tests only (the wrong one)."""
    done = _suite(_wheel(tmp_path, PACKAGE), _tests(tmp_path / "fg"), TRITONWISE_FLAGGEMS_SHARD="1/2")
    assert "| test_scale.py | 0 / 1 / 0 |" in done.stdout, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_reads_the_tests_of_a_bare_git_repository_at_a_revision(tmp_path):
    checkout = _tests(tmp_path / "fg")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(checkout)], check=True)
    subprocess.run([*git, "-C", str(checkout), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(checkout), "commit", "-qm", "tests"], check=True)
    subprocess.run([*git, "-C", str(checkout), "tag", "v0"], check=True)
    bare = tmp_path / "bare"
    subprocess.run(["git", "clone", "-q", "--bare", str(checkout), str(bare)], check=True)
    done = _suite(_wheel(tmp_path, PACKAGE), bare, "--rev", "v0", "--", "-k", "not wrong")
    assert "| test_scale.py | 1 / 0 / 0 |" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0


def test_refuses_to_run_when_a_pointwise_function_escapes_the_swap(tmp_path):
    done = _suite(_wheel(tmp_path, {**PACKAGE, **STRAY}), _tests(tmp_path / "fg"))
    assert done.returncode != 0
    refusal = "1 pointwise functions are tritonwise's, 1 are native's: ['flag_gems.ops.stray.stray']"
    assert refusal in done.stderr + done.stdout
