"""Two questions the harness asks tritonwise's CPU path before choosing what to run there: does
it compute libdevice calls, and bf16 arithmetic? Each runs one small payload against torch."""

from __future__ import annotations

import torch
import triton

from tritonwise import libdevice, pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def _erf(x):
    return libdevice.erf(x)


@pointwise_dynamic(promotion_methods=[(0, "NO_OPMATH")])
@triton.jit
def _double(x):
    return x * 2


def _matches(function, torch_function, dtype) -> bool:
    x = torch.tensor([0.1, 0.7, 0.3, -0.9], dtype=dtype)
    try:
        return torch.allclose(function(x).float(), torch_function(x).float(), rtol=1e-2, atol=1e-3)
    except Exception:
        return False


def libdevice_works() -> bool:
    return _matches(_erf, torch.erf, torch.float32)


def bf16_arithmetic_works() -> bool:
    return _matches(_double, lambda x: x * 2, torch.bfloat16)
