"""Payloads computing on bf16/fp8 values and calling libdevice, shared by the CPU numerics tests
and the GPU comparison (tests/gpu/test_gpu_numerics.py). Each entry of ARITHMETIC pairs a payload
with the torch expression that computes the same thing: every operation in float32, rounded to
the operands' dtype after each one (what torch does for one bf16 op, and what the GPU does)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_libdevice
from triton.language.semantic import TritonSemantic

captured_tanh = cuda_libdevice.tanh  # as FlagGems' ops do: `erf = tl_extra_shim.erf`

# Triton 3.7+ negates a float by flipping its sign bit; 3.6 computes 0 - x (so -(+0.0) is +0.0).
NEGATION_FLIPS_SIGN = "create_fneg" in TritonSemantic.minus.__code__.co_names


@triton.jit
def add(x, y):
    return x + y


@triton.jit
def sub(x, y):
    return x - y


@triton.jit
def mul(x, y):
    return x * y


@triton.jit
def times_two(x):
    return x * 2


@triton.jit
def times_tenth(x):
    return x * 0.1


@triton.jit
def sum_times(x, y):
    return (x + y) * y


@triton.jit
def maximum(x, y):
    return tl.maximum(x, y)


@triton.jit
def smaller(x, y):
    return tl.where(x < y, x, y)


@triton.jit
def negate(x, y):
    return -x


@triton.jit
def absolute(x, y):
    return tl.abs(x)


@triton.jit
def one_minus(x, y):
    return 1 - x


# payload -> (arity, reference). A reference computes on float32 tensors with `r` applied after
# each operation and `c` to each constant: rounding to the storage dtype (NO_OPMATH, fp8) or
# nothing (DEFAULT's float32 opmath); the caller rounds the result once more to the dtype.
ARITHMETIC = {
    add: (2, lambda x, y, r, c: x + y),
    sub: (2, lambda x, y, r, c: x - y),
    mul: (2, lambda x, y, r, c: x * y),
    times_two: (1, lambda x, r, c: x * c(2.0)),
    times_tenth: (1, lambda x, r, c: x * c(0.1)),
    sum_times: (2, lambda x, y, r, c: r(x + y) * y),
    maximum: (2, lambda x, y, r, c: torch.maximum(x, y)),
    smaller: (2, lambda x, y, r, c: torch.where(x < y, x, y)),
    negate: (2, lambda x, y, r, c: -x if NEGATION_FLIPS_SIGN else c(0.0) - x),
    absolute: (2, lambda x, y, r, c: x.abs()),
    one_minus: (2, lambda x, y, r, c: c(1.0) - x),
}


def to_storage(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float32 -> dtype as the GPU converts: like torch, except that fp8 saturates (Triton's
    conversions to fp8 are `cvt.rn.satfinite`; torch gives NaN or inf)."""
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        largest = torch.finfo(dtype).max
        t = torch.where(t.isnan(), t, t.clamp(-largest, largest))
    return t.to(dtype)


def reference(payload, args, dtype, per_op: bool):
    """The torch result of ARITHMETIC[payload] on `args` (tensors of `dtype`), as `dtype`."""
    _, fn = ARITHMETIC[payload]

    def rounded(t):
        return to_storage(t, dtype).float() if per_op else t

    def constant(value):
        return rounded(torch.tensor(value, dtype=torch.float32))

    return to_storage(fn(*(a.float() for a in args), rounded, constant), dtype)


@triton.jit
def to_bf16(x):
    return x.to(tl.bfloat16)


@triton.jit
def to_bf16_toward_zero(x):
    return x.to(tl.bfloat16, fp_downcast_rounding="rtz")


@triton.jit
def to_fp16(x):
    return x.to(tl.float16)


@triton.jit
def to_e4m3(x):
    return x.to(tl.float8e4nv)


@triton.jit
def to_e5m2(x):
    return x.to(tl.float8e5)


def _toward_zero_bf16(t: torch.Tensor) -> torch.Tensor:
    bits = t.float().view(torch.int32) & ~0xFFFF  # drop the low half of a float32
    return torch.where(t.isnan(), t.float(), bits.view(torch.float32)).bfloat16()


# payload -> the torch conversion it performs (float inputs of any width)
CONVERSIONS = {
    to_bf16: lambda t: t.bfloat16(),
    to_bf16_toward_zero: _toward_zero_bf16,
    to_fp16: lambda t: t.half(),
    to_e4m3: lambda t: to_storage(t.float(), torch.float8_e4m3fn),
    to_e5m2: lambda t: to_storage(t.float(), torch.float8_e5m2),
}

BITS = {
    torch.float8_e4m3fn: torch.int8,
    torch.float8_e5m2: torch.int8,
    torch.bfloat16: torch.int16,
    torch.float16: torch.int16,
    torch.float32: torch.int32,
    torch.float64: torch.int64,
}


def same_bits(got: torch.Tensor, want: torch.Tensor, zero_sign: bool = True) -> None:
    """Equal bit patterns, any NaN equal to any NaN (and +0 equal to -0 unless `zero_sign`)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    got, want = got.cpu(), want.cpu()
    nan = want.float().isnan()
    assert torch.equal(got.float().isnan(), nan), f"NaN positions differ: {got} vs {want}"
    if want.dtype not in BITS:  # integers and bools
        assert torch.equal(got, want), f"{got} vs {want}"
        return
    differ = got.view(BITS[got.dtype]) != want.view(BITS[want.dtype])
    if not zero_sign:
        differ &= got.float() != want.float()
    mismatch = differ & ~nan
    assert not mismatch.any(), f"{got[mismatch].double().tolist()} where expected {want[mismatch].double().tolist()}"


@triton.jit
def lerp_tensor_kernel(input, end, weight):  # FlagGems' ops/lerp.py, verbatim
    return tl.where(
        tl.abs(weight) < 0.5,
        input + weight * (end - input),
        end - (end - input) * (1 - weight),
    )


@triton.jit
def stub_tanh(x):
    return libdevice.tanh(x)


@triton.jit
def backend_tanh(x):
    return cuda_libdevice.tanh(x)


@triton.jit
def tl_attribute_tanh(x):
    return tl.extra.cuda.libdevice.tanh(x)


@triton.jit
def captured(x):
    return captured_tanh(x)


@triton.jit
def missing_in_backend(x):
    return libdevice.rcp64h(x)
