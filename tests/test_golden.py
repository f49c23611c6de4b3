"""Generated source of representative calls against the checked-in files in tests/golden/files.

A template or codegen change shows here as a diff; refresh with `python tests/golden/refresh.py`.
"""

import difflib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))
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
