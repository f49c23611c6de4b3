"""Both CPU modes: tritonwise's own interpreter path, and Triton's TRITON_INTERPRET=1.

TRITON_INTERPRET decides what @triton.jit returns, so each mode runs in a fresh process with
it set before import. The payloads come from a module that never imports triton.language (as
FlagGems' tests define them); the script checks each result against torch and prints one line
per check. On a GPU the same script runs on CUDA tensors: compiled, and under
TRITON_INTERPRET=1 interpreted as Triton does it (storage copied to the host and back).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.paths import ROOT

SCRIPT = textwrap.dedent(
    """
    import torch
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    from tests.support import payload_no_tl
    from tritonwise import StridedBuffer, pointwise_dynamic

    torch.set_default_device(DEVICE)
    expected = InterpretedFunction if MODE == "1" else JITFunction
    assert type(payload_no_tl.add) is expected, type(payload_no_tl.add)
    assert not hasattr(payload_no_tl, "tl")
    module_names = set(vars(payload_no_tl))

    def same(got, want):
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        assert torch.equal(got, want), (got, want)

    add = pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
    a = torch.randn(6, 5)
    for x, y in [(a, torch.randn(6, 5)), (a, torch.randn(5)), (a, torch.randn(5, 6).t())]:
        out = torch.full_like(a, float("nan"))
        assert add(x, y, out0=out) is out
        same(out, x + y)
        print("add", add.explain(x, y).scheme)
    add_scalar = pointwise_dynamic(payload_no_tl.add, is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
    same(add_scalar(torch.arange(5), 3), torch.arange(5) + 3)
    print("add int scalar")

    double_plus = pointwise_dynamic(payload_no_tl.double_plus, promotion_methods=[(0, 1, "DEFAULT")])
    b = torch.randn(5)
    same(double_plus(a, b), a + a + b)
    print("helper")

    base = torch.arange(12, dtype=torch.float32)
    flipped = StridedBuffer(base, (3, 4), (-4, -1), offset=11)
    target = torch.full((12,), float("nan"))
    result = StridedBuffer(target, (3, 4), (4, 1))
    add.instantiate(2)(flipped, flipped, out0=result)
    same(target, base.flip(0) * 2)
    clone = flipped.clone()
    base.zero_()
    same(add.instantiate(2)(clone, 0.0 * a[:3, :4], out0=torch.empty(3, 4)), torch.arange(12.0).flip(0).view(3, 4))
    print("strided buffer")

    assert set(vars(payload_no_tl)) == module_names, set(vars(payload_no_tl)) - module_names
    print("module untouched")
    """
)


MODES = pytest.mark.parametrize("mode", ["1", "0"], ids=["TRITON_INTERPRET=1", "default"])


def run_script(mode: str, device: str, cache_dir: Path) -> list:
    """Run SCRIPT in a fresh process importing this tree's tritonwise; its output lines."""
    env = dict(os.environ, TRITON_INTERPRET=mode, TRITONWISE_CACHE_DIR=str(cache_dir))
    env["PYTHONPATH"] = str(ROOT)
    code = f"MODE, DEVICE = {mode!r}, {device!r}\n{SCRIPT}"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split("\n")


EXPECTED = [
    "add flat",
    "add nd",
    "add tile2d",
    "add int scalar",
    "helper",
    "strided buffer",
    "module untouched",
    "",
]


@MODES
def test_payload_from_module_without_triton_language_in_both_cpu_modes(mode, tmp_path):
    assert run_script(mode, "cpu", tmp_path) == EXPECTED


@pytest.mark.gpu
@MODES
def test_payload_from_module_without_triton_language_on_gpu(mode, tmp_path):
    assert run_script(mode, "cuda", tmp_path) == EXPECTED
