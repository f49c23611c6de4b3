"""polar and the modulus of complex tensors, computed on `torch.view_as_real` views."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._pointwise import Pointwise, require_tensor


@triton.jit
def _polar(abs, angle):
    return abs * tl.cos(angle), abs * tl.sin(angle)


@triton.jit
def _hypot(re, im):
    """sqrt(re^2 + im^2) without overflow: inf if either part is inf, else NaN if one is NaN."""
    a = tl.abs(re)
    b = tl.abs(im)
    hi = tl.where(a > b, a, b)
    lo = tl.where(a > b, b, a)
    ratio = tl.where(hi == 0, 0.0, lo / hi)
    r = hi * tl.sqrt(1.0 + ratio * ratio)
    return tl.where((a == float("inf")) | (b == float("inf")), float("inf"), r)


POLAR = Pointwise(_polar, [(0, 1, "DEFAULT"), (0, 1, "DEFAULT")])
HYPOT = Pointwise(_hypot, [(0, 1, "DEFAULT")])

_COMPLEX_OF = {torch.float32: torch.complex64, torch.float64: torch.complex128}


def _real_parts(z: torch.Tensor) -> tuple:
    """Views of the real and imaginary parts of a complex tensor."""
    return torch.view_as_real(z).unbind(-1)


def polar(abs, angle, *, out=None):
    """torch.polar: abs * (cos(angle) + i sin(angle)) for float32/float64 `abs` and `angle`."""
    require_tensor("polar", "abs", abs)
    require_tensor("polar", "angle", angle)
    if abs.dtype != angle.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {abs.dtype} but got scalar type {angle.dtype} for second argument"
        )
    dtype = _COMPLEX_OF.get(abs.dtype)
    if dtype is None:
        raise NotImplementedError(f"polar: inputs must be float32 or float64 tensors, got {abs.dtype}")
    if out is not None and out.dtype != dtype:
        raise RuntimeError(f"polar: expected out to have dtype {dtype}, got {out.dtype}")
    if out is None:
        out = torch.empty(torch.broadcast_shapes(abs.shape, angle.shape), dtype=dtype, device=abs.device)
    real, imag = _real_parts(out)
    POLAR(abs, angle, out0=real, out1=imag)
    return out


def complex_abs(z: torch.Tensor, *, out=None):
    """torch.abs of a complex tensor: the modulus, as a real tensor (complex64 -> float32)."""
    real, imag = _real_parts(z.conj() if z.is_conj() else z)  # the modulus ignores the sign of im
    return HYPOT(real, imag, out0=out)
