"""DTensor operands: the placement rule, and every case of tests/support/dtensor_cases.py on 2 and 4 gloo ranks."""

import os
import subprocess
import sys

import pytest
import torch

if not torch.distributed.is_available():
    pytest.skip("torch without distributed support", allow_module_level=True)

from torch.distributed.tensor import Partial, Replicate, Shard  # noqa: E402

from tests.support.paths import TESTS  # noqa: E402
from tritonwise.features.dtensor import Operand, choose_shard_dims, placements_for  # noqa: E402

CASES = str(TESTS / "support" / "dtensor_cases.py")


def test_shard_dim_comes_from_a_given_output_before_the_inputs():
    inputs = [Operand((8, 6), (Shard(0),))]
    outputs = [Operand((8, 6), (Shard(1),))]
    assert choose_shard_dims((8, 6), inputs, outputs, 1) == [1]
    assert choose_shard_dims((8, 6), inputs, [], 1) == [0]


def test_a_shard_along_a_broadcast_dim_does_not_decide():
    inputs = [Operand((1, 6), (Shard(0),)), Operand((8, 6), (Replicate(),))]
    assert choose_shard_dims((8, 6), inputs, [], 1) == [None]


def test_operands_broadcasting_along_the_shard_stay_replicated():
    assert placements_for((6,), 2, [0]) == (Replicate(),)
    assert placements_for((1, 6), 2, [0]) == (Replicate(),)
    assert placements_for((4, 6), 2, [1]) == (Shard(1),)
    assert placements_for((6,), 2, [1]) == (Shard(0),)
    assert placements_for((), 2, [0, None], "max") == (Partial("max"), Replicate())


@pytest.mark.parametrize("world", [2, 4])
def test_dtensor_cases_on_gloo_ranks(world):
    done = subprocess.run(
        [sys.executable, CASES, "--launch", str(world), "gloo"], capture_output=True, text=True, timeout=600
    )
    report = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, report
    assert f"world {world} (gloo):" in done.stdout and " 0 failed" in done.stdout, report
