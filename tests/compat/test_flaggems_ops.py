"""FlagGems' own pointwise ops on tritonwise, one test per op file (flaggems_ops.py does the work).

Runs only where FlagGems' sources are: TRITONWISE_FLAGGEMS names a checkout, its bare git
directory, an installed `flag_gems` package or a wheel; without it these tests skip. Device: CUDA
when present, else CPU (override with TRITONWISE_COMPAT_DEVICE).
"""

from __future__ import annotations

import os

import pytest
import torch

from flaggems_cases import CASES

# NumPy's divide-by-zero and log(0) warnings from Triton's interpreter: inf and nan are tested
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

FLAGGEMS = os.environ.get("TRITONWISE_FLAGGEMS")
DEVICE = os.environ.get("TRITONWISE_COMPAT_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")

# Every libdevice name FlagGems' op files call through tl_extra_shim or triton_lang_extension
# (git grep over src/flag_gems/ops/ at FlagGems ed2508b).
FLAGGEMS_LIBDEVICE_NAMES = (
    "acos asin atan atan2 cos div_rn div_rz erf erfc erfcx erfinv exp exp2 fast_dividef finitef floor fmod "
    "isfinited isinf isnan j0 j1 lgamma log1p log2 nearbyint nextafter pow rint rsqrt sin sqrt tan tanh trunc y0"
).split()


def test_libdevice_has_every_name_flaggems_ops_call():
    from tritonwise import libdevice

    assert [name for name in FLAGGEMS_LIBDEVICE_NAMES if not callable(getattr(libdevice, name, None))] == []


@pytest.fixture(scope="module")
def capabilities():
    if not FLAGGEMS:
        pytest.skip("TRITONWISE_FLAGGEMS is not set (a FlagGems checkout, package or wheel)")
    import flaggems_ops

    try:
        return flaggems_ops.prepare(FLAGGEMS, DEVICE)
    except FileNotFoundError as error:
        pytest.skip(str(error))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.op)
def test_flaggems_op(case, capabilities):
    import flaggems_ops

    row = flaggems_ops.run_case(case, DEVICE, capabilities)
    if row.status == "skipped":
        pytest.skip(row.note)
    if not row.ok and DEVICE == "cpu" and case.cpu_issue:
        pytest.xfail(case.cpu_issue)
    assert row.ok, row.note
