"""Generated source of representative calls against the checked-in files in tests/golden/files.

A template or codegen change shows here as a diff; refresh with `python tests/golden/refresh.py`.
"""

import difflib
import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT, TESTS

sys.path.insert(0, str(TESTS / "golden"))  # imported as `golden_cases`: the name the golden headers show
import golden_cases  # noqa: E402


@pytest.fixture(scope="module")
def texts(tritonwise_cache_dir):
    return golden_cases.generated()


@pytest.mark.parametrize("name", sorted(golden_cases.cases()))
def test_generated_file_matches_golden(name, texts):
    expected_path = golden_cases.FILES / f"{name}.py"
    assert expected_path.exists(), f"{expected_path} missing: run python tests/golden/refresh.py"
    expected, actual = expected_path.read_text(), texts[f"{name}.py"]
    diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "golden", "generated"))
    assert actual == expected, f"generated file differs from golden (python tests/golden/refresh.py):\n{diff}"


def test_no_stale_golden_files(texts):
    checked_in = {p.name for p in golden_cases.FILES.glob("*.py")}
    assert checked_in == set(texts)


def test_readme_sample_is_a_golden_file(texts):
    assert golden_cases.readme_sample(golden_cases.SAMPLE_DOC.read_text()) == texts[golden_cases.README_SAMPLE]


@pytest.mark.parametrize("name", ["nd_scalar_f32", "sum_f16", "tile2d_batch_f32", "libdevice_f32"])
def test_generated_file_runs_alone(name, texts, tmp_path):
    """`python FILE` builds operands of the file's layout class, launches and prints a time."""
    path = tmp_path / f"{name}.py"
    path.write_text(texts[f"{name}.py"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    kernel = next(line.split()[2] for line in texts[f"{name}.py"].splitlines() if line.startswith("#   kernel"))
    assert done.stdout.startswith(f"{kernel}: ran on ") and done.stdout.rstrip().endswith(" ms")
