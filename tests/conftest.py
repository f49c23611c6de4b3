"""Shared test setup: a per-session generated-file cache and `gpu` skipping (helpers live in tests/support)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import torch

pytest_plugins = ["tests.support.hints"]  # the checked_hints fixture

# Every generated file of this session goes to a fresh directory, never ~/.cache. Set here, when
# pytest loads this file and before it imports any test module: a module that registers an
# as_torch_op at import derives (and writes) its backward then.
_PREVIOUS_CACHE_DIR = os.environ.get("TRITONWISE_CACHE_DIR")
_SESSION_CACHE_DIR = Path(tempfile.mkdtemp(prefix="tritonwise-test-cache-"))
os.environ["TRITONWISE_CACHE_DIR"] = str(_SESSION_CACHE_DIR)


def pytest_unconfigure(config):
    aten = sys.modules.get("tritonwise.runtime.aten")
    if aten is not None:  # a background build of its helpers writes into the directory removed below
        aten.wait_for_build()
    shutil.rmtree(_SESSION_CACHE_DIR, ignore_errors=True)
    if _PREVIOUS_CACHE_DIR is None:
        os.environ.pop("TRITONWISE_CACHE_DIR", None)
    else:
        os.environ["TRITONWISE_CACHE_DIR"] = _PREVIOUS_CACHE_DIR


@pytest.fixture(scope="session", autouse=True)
def launch_c_built():
    """On a GPU, launch.c is built before the first test: a process's first calls while it builds
    launch through ctypes and keep no launcher (tests/gpu/test_gpu_launcher.py tests that window)."""
    if torch.cuda.is_available():
        from tritonwise.runtime import native

        native.launch_module()


@pytest.fixture(scope="session")
def tritonwise_cache_dir():
    """The session's cache directory (set before any test module is imported)."""
    return _SESSION_CACHE_DIR


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
