"""A 16-bit float input no promotion method names is widened to float32 beside a named input of
its dtype that computes in float32, so the payload sees one dtype for both. FlagGems' angle
payload (its ops/angle.py: real and imag of complex32, only `real` named, a branch on
`real.dtype == tl.float16`) failed to compile on complex32 before."""

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from conftest import poisoned_like
from tritonwise import pointwise_dynamic


def _angle():
    @pointwise_dynamic(is_tensor=[True, True], promotion_methods=[(0, "DEFAULT")])
    @triton.jit
    def angle_func(real, imag):
        real_last, imag_last = (
            (real.to(tl.float32), imag.to(tl.float32)) if real.dtype == tl.float16 else (real, imag)
        )
        return libdevice.atan2(imag_last, real_last)

    return angle_func


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_flag_gems_angle_payload_on_16_bit_parts_computes_torchs_angle(dtype):
    z = torch.randn(33, dtype=torch.complex64)
    real, imag = z.real.to(dtype), z.imag.to(dtype)
    expected = torch.atan2(imag.float(), real.float()).to(dtype)
    f = _angle()
    got = f(real, imag)
    assert got.dtype == dtype
    torch.testing.assert_close(got, expected)
    out = poisoned_like(expected)
    f(real, imag, out0=out)
    torch.testing.assert_close(out, expected)


def test_complex32_parts_as_flag_gems_passes_them():
    z = torch.randn(2, 5, dtype=torch.complex64).to(torch.complex32)
    expected = torch.angle(z.to(torch.complex64)).half()
    torch.testing.assert_close(_angle()(z.real, z.imag), expected)


def test_only_16_bit_floats_beside_a_widened_input_of_their_dtype_are_widened():
    @pointwise_dynamic(is_tensor=[True, True, True], promotion_methods=[(0, "DEFAULT")])
    @triton.jit
    def pick(x, half, other):
        return x + half.to(x.dtype) + other.to(x.dtype)

    x, half, other = torch.randn(4).half(), torch.randn(4).half(), torch.randn(4).bfloat16()
    loads = {line.split(" = ")[0]: line for line in _lines(pick.generate(x, half, other)) if "tl.load(" in line}
    assert loads["in1"].endswith(".to(tl.float32)")
    assert loads["in2"].endswith("mask=mask)")  # bfloat16: not x's dtype
    expected = (x.float() + half.float() + other.float()).half()
    torch.testing.assert_close(pick(x, half, other), expected)


def _lines(path) -> list:
    return [line.strip() for line in open(path).read().splitlines()]
