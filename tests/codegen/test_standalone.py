"""`python GENERATED_FILE` runs alone when its payload reads other names of its script: an
imported libdevice (FlagGems' most common pattern), a @triton.jit helper, a constexpr constant.
The file runs in tritonwise's interpreter path and under TRITON_INTERPRET=1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

SCRIPT = """
import torch, triton
import triton.language as tl
from triton.language.extra.cuda import libdevice as ld
from tritonwise import pointwise_dynamic

SCALE = tl.constexpr(2.0)


@triton.jit
def scaled_erf(x):
    return ld.erf(x) * SCALE


@triton.jit
def payload(x, y):
    return scaled_erf(x.to(tl.float32)) + y


fn = pointwise_dynamic(payload, promotion_methods=[(0, 1, "DEFAULT")])
x, y = torch.linspace(-2, 2, 7), torch.ones(7)
torch.testing.assert_close(fn(x, y), torch.erf(x) * 2 + y)
print(fn.explain(x, y).path)
"""


def _run(args, tmp_path, **env):
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "TRITONWISE_CACHE_DIR": str(tmp_path / "cache"), **env}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, env=environ)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """The file a script's call generated (the script is `__main__`: nothing of it is importable)."""
    tmp_path = tmp_path_factory.mktemp("standalone")
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    done = _run([str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("interpret", ["", "1"], ids=["tritonwise_interpreter", "TRITON_INTERPRET=1"])
def test_file_reading_libdevice_a_helper_and_a_constant_runs_alone(generated, tmp_path, interpret):
    done = _run([str(generated)], tmp_path, TRITON_INTERPRET=interpret)
    assert done.returncode == 0, done.stderr
    assert " ran on " in done.stdout and done.stdout.rstrip().endswith(" ms")


def test_file_defines_what_its_payload_reads(generated):
    text = generated.read_text()
    assert "import triton.language.extra.cuda.libdevice as ld" in text
    assert "SCALE = tl.constexpr(2.0)" in text
    assert text.index("def scaled_erf(x):") < text.index("def payload(x, y):")
