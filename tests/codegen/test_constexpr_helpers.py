"""A payload calling @tl.constexpr helpers of its module: the generated file imports them (it
held `tl.constexpr(<function ...>)`, a SyntaxError, before) and the call matches torch."""

from __future__ import annotations

import pytest
import torch

from tests.support import constexpr_payloads
from tests.support.poison import poisoned_like
from tritonwise import pointwise_dynamic

COPYSIGN = pointwise_dynamic(constexpr_payloads.copysign, promotion_methods=[(0, 1, "DEFAULT")])


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_a_constexpr_helper_is_imported_and_the_call_matches_torch(dtype):
    x, y = torch.randn(33, dtype=dtype), torch.randn(33, dtype=dtype)
    out = poisoned_like(x)
    COPYSIGN(x, y, out0=out)
    torch.testing.assert_close(out, torch.copysign(x, y), rtol=0, atol=0)
    source = open(COPYSIGN.explain(x, y).path).read()
    compile(source, "generated", "exec")
    assert "from tests.support.constexpr_payloads import unsigned_of" in source
