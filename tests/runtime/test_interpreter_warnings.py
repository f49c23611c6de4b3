"""CPU launches warn about nothing torch does not warn about, in both CPU modes: NumPy computes
every lane in Triton's interpreter, masked-off ones too (0 / 0 past the end of an int division),
and an IEEE result (exp overflowing to inf, 1 / 0) is a value, as on the GPU and in torch.

Each mode runs in a fresh process (TRITON_INTERPRET is read at import) with every warning an
error; the script compares each result with torch's.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

SCRIPT = """
import warnings
import torch, triton
import triton.language as tl
from tritonwise import pointwise_dynamic

warnings.simplefilter("error")


@triton.jit
def true_div(x, y):
    return x / y


@triton.jit
def trunc_div(x, y):
    return x // y


@triton.jit
def remainder(x, y):
    return x % y


@triton.jit
def exp(x):
    return tl.exp(x)


def same(got, want, name):
    assert got.dtype == want.dtype and torch.equal(got, want), (name, got, want)
    print(name)


ints = torch.tensor([7, -7, 9, 1, 100], dtype=torch.int32), torch.tensor([2, 3, -4, 1, 7], dtype=torch.int32)
div = pointwise_dynamic(true_div, promotion_methods=[(0, 1, "INT_TO_FLOAT")])
same(div(*ints), torch.true_divide(*ints), "int true division")
# Triton's // and % on ints are C's: truncating, the remainder taking the dividend's sign
trunc = pointwise_dynamic(trunc_div, promotion_methods=[(0, 1, "DEFAULT")])
same(trunc(*ints), torch.div(*ints, rounding_mode="trunc"), "int division")
same(pointwise_dynamic(remainder, promotion_methods=[(0, 1, "DEFAULT")])(*ints), torch.fmod(*ints), "int remainder")
floats = torch.tensor([1.0, -1.0, 0.0]), torch.tensor([0.0, 0.0, 1.0])
same(div(*floats), floats[0] / floats[1], "float division by zero")
exp_fn = pointwise_dynamic(exp, promotion_methods=[(0, "DEFAULT")])
for dtype in (torch.float16, torch.float32, torch.float64):
    big = torch.tensor([1000.0, 0.0, -1000.0], dtype=dtype)  # exp: inf, 1, 0 exactly
    same(exp_fn(big), torch.exp(big), f"exp overflow {dtype}")
"""

EXPECTED = ["int true division", "int division", "int remainder", "float division by zero"]
EXPECTED += [f"exp overflow torch.{d}" for d in ("float16", "float32", "float64")] + [""]


@pytest.mark.parametrize("mode", ["0", "1"], ids=["default", "TRITON_INTERPRET=1"])
def test_cpu_launches_warn_about_nothing_torch_does_not(mode, tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TRITON_INTERPRET=mode, TRITONWISE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n") == EXPECTED
