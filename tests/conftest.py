"""Shared test setup: a per-session generated-file cache, output poisoning, `gpu` skipping."""

from __future__ import annotations

import os

import pytest
import torch


@pytest.fixture(scope="session", autouse=True)
def tritonwise_cache_dir(tmp_path_factory):
    """Every generated file of this session goes to a fresh directory, never ~/.cache."""
    path = tmp_path_factory.mktemp("tritonwise_cache")
    previous = os.environ.get("TRITONWISE_CACHE_DIR")
    os.environ["TRITONWISE_CACHE_DIR"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("TRITONWISE_CACHE_DIR", None)
    else:
        os.environ["TRITONWISE_CACHE_DIR"] = previous


def poison_value(dtype: torch.dtype, fill=None):
    """NaN for floats; for ints the dtype's minimum; True for bools (unless `fill` says otherwise)."""
    if fill is not None:
        return fill
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).min


def poisoned_like(t: torch.Tensor, fill=None) -> torch.Tensor:
    """`torch.full_like(t, poison)` (same layout): any element a kernel forgets to write fails a comparison."""
    return torch.full_like(t, poison_value(t.dtype, fill))


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
