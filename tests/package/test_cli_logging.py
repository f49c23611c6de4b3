"""`python -m tritonwise generate` / `cache stats`, and the `tritonwise` logger."""

import logging
import os
import subprocess
import sys

import torch
import triton

from tritonwise import pointwise_dynamic


def _cli(*args, cache):
    env = {**os.environ, "TRITONWISE_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "tritonwise", *args], env=env, capture_output=True, text=True, check=True)


def test_generate_writes_files_ahead_of_time_and_stats_counts_them(tmp_path):
    result = _cli("generate", "tritonwise.demo:copy", "--ranks", "0-2", cache=tmp_path)
    files = sorted(p.name for p in tmp_path.glob("*.py"))
    assert files and all(name.startswith("copy_r") for name in files)
    assert f"{len(files)} files" in result.stdout
    assert "3/3" in result.stderr  # the progress bar reached the end
    stats = _cli("cache", "stats", cache=tmp_path).stdout
    assert f"{len(files)} files" in stats and f"copy: {len(files)} files" in stats
    again = _cli("generate", "tritonwise.demo:copy", "--ranks", "0-2", cache=tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.py")) == files  # nothing new, all reused
    assert "reused" in _cli("cache", "stats", cache=tmp_path).stdout and again.returncode == 0


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def twice(x):
    return x * 2


def test_logger_reports_generated_files_and_plan_cache_misses_with_a_reason(caplog):
    x = torch.randn(3, 4)
    with caplog.at_level(logging.DEBUG, logger="tritonwise"):
        twice(x)
        twice(x)
        twice(x.double())
    misses = [r.getMessage() for r in caplog.records if "plan-cache miss" in r.getMessage()]
    assert len(misses) == 2 and "first call" in misses[0] and "dtype" in misses[1]


def test_nothing_is_logged_by_default(capsys):
    twice(torch.randn(5))
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
