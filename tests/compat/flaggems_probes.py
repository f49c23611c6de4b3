"""The question the harness asks tritonwise's CPU path before choosing what to run there: does it
compute libdevice calls? One small payload, against torch."""

from __future__ import annotations

import torch
import triton

from tritonwise import libdevice, pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def _erf(x):
    return libdevice.erf(x)


def libdevice_works() -> bool:
    x = torch.tensor([0.1, 0.7, 0.3, -0.9])
    try:
        return torch.allclose(_erf(x), torch.erf(x))
    except Exception:  # today: a PayloadError, as the interpreter's libdevice functions return None
        return False

