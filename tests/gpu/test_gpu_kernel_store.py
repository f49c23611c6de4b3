"""The compiled-kernel store on a GPU (marked `gpu`): a binary one process compiled is loaded
and launched by another with triton.compile and Triton's JIT made to raise, results compared
with torch; cross-built binaries are used the same way; damaged entries are rebuilt; frozen
processes load but never compile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.support.paths import ROOT

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]

PAYLOAD = '''
import torch
import triton
import triton.language as tl
from tritonwise import pointwise_dynamic


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def gpu_store_axpy(x, y, alpha):
    return x + y * alpha


CALLS = {
    "flat": lambda: (torch.randn(1 << 16, device="cuda"), torch.randn(1 << 16, device="cuda"), 0.5),
    "nd": lambda: (torch.randn(300, 33, device="cuda"), torch.randn(33, device="cuda"), -2.0),
    "tile2d": lambda: (torch.randn(130, 70, device="cuda").t(), torch.randn(70, 130, device="cuda"), 3.0),
    "fp16 aligned": lambda: (torch.randn(64, 128, device="cuda", dtype=torch.float16),
                             torch.randn(128, device="cuda", dtype=torch.float16), 1.5),
}
'''

CHILD = r"""
import json, sys
import torch, triton, tritonwise
from triton.runtime import jit
if {forbid}:
    def forbidden(*args, **kwargs):
        raise AssertionError("Triton compiled or JIT-launched a kernel")
    triton.compile = forbidden
    triton.compiler.compiler.compile = forbidden
    jit.JITFunction.run = forbidden
if {frozen}:
    tritonwise.freeze()
from tritonwise.runtime import native
from tritonwise.runtime.arguments import call_signature
import gpu_store_payload as m
report = {{}}
for name in {names}:
    torch.manual_seed(0)
    x, y, alpha = m.CALLS[name]()
    try:
        first = m.gpu_store_axpy(x, y, alpha)
        native.launch_module()  # built: a first call while launch.c builds launches through ctypes
        got = m.gpu_store_axpy(x, y, alpha)
    except Exception as e:
        report[name] = dict(error=f"{{type(e).__name__}}: {{e}}")
        continue
    want = (x.float() + y.float() * alpha).to(got.dtype)
    plan = m.gpu_store_axpy.plan_cache.get(call_signature((x, y, alpha)))
    report[name] = dict(
        close=all(bool(torch.allclose(r.float(), want.float(), rtol=1e-3, atol=1e-3)) for r in (first, got)),
        launcher=getattr(plan.direct, "__qualname__", ""),
    )
print(json.dumps(report))
"""


@pytest.fixture
def env(tmp_path):
    (tmp_path / "gpu_store_payload.py").write_text(PAYLOAD)
    environ = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}")
    environ.update(TRITONWISE_CACHE_DIR=str(tmp_path / "cache"), TRITON_CACHE_DIR=str(tmp_path / "triton"))
    environ.pop("TRITONWISE_KERNEL_STORE", None)  # the store is on by default
    return environ


def child(env, names=("flat", "nd", "tile2d", "fp16 aligned"), forbid=False, frozen=False) -> dict:
    code = CHILD.format(forbid=forbid, frozen=frozen, names=list(names))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def entries(env) -> dict:
    directory = Path(env["TRITONWISE_CACHE_DIR"]) / "kernels"
    return {p.name: p.stat().st_mtime_ns for p in directory.iterdir()} if directory.is_dir() else {}


def assert_all_ran_on_the_own_launcher(report):
    for name, row in report.items():
        assert row.get("close") and row["launcher"].startswith("own_launcher"), (name, row)


def test_a_binary_stored_by_one_process_is_launched_by_another_without_compiling(env):
    assert_all_ran_on_the_own_launcher(child(env))
    stored = entries(env)
    assert len(stored) == 4
    assert_all_ran_on_the_own_launcher(child(env, forbid=True))
    assert entries(env) == stored  # read, not rewritten


def test_cross_built_binaries_are_used_without_compiling(env):
    from tritonwise.runtime.kernels import device_target

    major, minor = torch.cuda.get_device_capability()
    command = [sys.executable, "-m", "tritonwise", "generate", "gpu_store_payload", "--ranks", "1-2"]
    command += ["--compile", "--arch", f"sm_{major}{minor}"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert device_target(0) == ("cuda", major * 10 + minor, 32)
    # Extents of 3-4 fall in the classes `generate` builds for rank 2 (blocks follow extents).
    code = CHILD.replace("m.CALLS[name]()", "(torch.randn(4, 3, device='cuda').t(), torch.randn(3, 4, device='cuda'), 2.0)")
    code = code.format(forbid=True, frozen=True, names=["tile2d small"])
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert_all_ran_on_the_own_launcher(json.loads(result.stdout.strip().splitlines()[-1]))


def test_a_damaged_entry_is_rebuilt_and_the_result_stays_right(env):
    child(env, names=["nd"])
    (path,) = (Path(env["TRITONWISE_CACHE_DIR"]) / "kernels").iterdir()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert_all_ran_on_the_own_launcher(child(env, names=["nd"]))
    assert_all_ran_on_the_own_launcher(child(env, names=["nd"], forbid=True))


def test_frozen_processes_load_stored_kernels_and_refuse_to_compile(env):
    child(env, names=["nd"])
    assert_all_ran_on_the_own_launcher(child(env, names=["nd"], frozen=True))
    report = child(env, names=["flat"], frozen=True)
    assert "FrozenError" in report["flat"]["error"] and "gpu_store_axpy(float32[65536]" in report["flat"]["error"]
    (kernel_file,) = [p for p in (Path(env["TRITONWISE_CACHE_DIR"]) / "kernels").iterdir()]
    kernel_file.unlink()  # the file is cached, the kernel is not: compiling it is refused
    report = child(env, names=["nd"], frozen=True)
    assert "FrozenError" in report["nd"]["error"] and "compiling" in report["nd"]["error"]


SPLIT_CHILD = r"""
import sys, torch, tritonwise
from tests.support import payload_no_tl
from tritonwise.runtime.kernels import device_target
total = tritonwise.pointwise_dynamic(payload_no_tl.double, promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)])
x = torch.randn(8, 1 << 16, device="cuda")
base = torch.zeros(16, device="cuda")
for offset in (0, 1):  # an output 16-byte aligned, and one 4 bytes further
    out = base[offset : offset + 8]
    if sys.argv[1] == "generate":
        assert total.explain(x, out0=out).split_parts > 1
        total.generate(x, out0=out, targets=[device_target(0)])
    else:
        with tritonwise.frozen():
            total(x, out0=out)
        torch.testing.assert_close(out, (2 * x).sum(-1), rtol=1e-4, atol=1e-2)
"""


def test_a_split_compiled_ahead_for_given_outputs_runs_frozen(tmp_path):
    """`generate(..., targets=...)` compiles the combine of a split's partials for the output it
    is given, so a frozen process launches it whatever that output's alignment."""
    env = {**os.environ, "TRITONWISE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    for step in ("generate", "run"):
        result = subprocess.run(
            [sys.executable, "-c", SPLIT_CHILD, step], env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, f"{step}: {result.stderr[-2000:]}"
