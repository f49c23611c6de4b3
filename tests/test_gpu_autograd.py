"""Autograd on the GPU (marked `gpu`): libdevice rules, bf16, and the fast path after recording."""

import pytest
import torch
import triton
from triton.language.extra import libdevice

from tritonwise import pointwise_dynamic

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


@triton.jit
def tanh_erf_pow(x, y):
    return libdevice.tanh(x) * y + libdevice.erf(x * y) + libdevice.pow(x * x + 1.0, 1.5)


@triton.jit
def tanh_erf_pow_fp64(x, y):
    # a tensor exponent: Triton's libdevice.pow takes no fp64 tensor with a python float exponent
    return libdevice.tanh(x) * y + libdevice.erf(x * y) + libdevice.pow(x * x + 1.0, y)


@triton.jit
def gelu_erf(x):
    return 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))


def _torch_tanh_erf_pow(x, y):
    return torch.tanh(x) * y + torch.erf(x * y) + torch.pow(x * x + 1.0, 1.5)


TANH_ERF_POW = pointwise_dynamic(tanh_erf_pow, promotion_methods=[(0, 1, "DEFAULT")])
TANH_ERF_POW_FP64 = pointwise_dynamic(tanh_erf_pow_fp64, promotion_methods=[(0, 1, "DEFAULT")])
GELU = pointwise_dynamic(gelu_erf, promotion_methods=[(0, "DEFAULT")])


def test_gradcheck_libdevice_fp64():
    x = torch.randn(33, 17, dtype=torch.float64, device="cuda", requires_grad=True)
    y = torch.randn(17, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(TANH_ERF_POW_FP64, (x, y), fast_mode=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_backward_matches_torch(dtype):
    x = torch.randn(1000, 257, device="cuda", dtype=dtype).t().requires_grad_()  # transposed
    y = torch.randn(1000, device="cuda", dtype=dtype, requires_grad=True)
    g = torch.randn(257, 1000, device="cuda", dtype=dtype)
    TANH_ERF_POW(x, y).backward(g)
    xt, yt = x.detach().requires_grad_(), y.detach().requires_grad_()
    _torch_tanh_erf_pow(xt.float(), yt.float()).backward(g.float())  # torch in fp32: the opmath reference
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-4)
    assert x.grad.dtype == dtype and y.grad.dtype == dtype
    torch.testing.assert_close(x.grad.float(), xt.grad.float(), **tol)
    torch.testing.assert_close(y.grad.float(), yt.grad.float(), **dict(tol, rtol=5e-2) if dtype == torch.bfloat16 else tol)


def test_gelu_erf_matches_torch():
    x = torch.randn(4096, device="cuda", requires_grad=True)
    GELU(x).sum().backward()
    xt = x.detach().requires_grad_()
    torch.nn.functional.gelu(xt).sum().backward()
    torch.testing.assert_close(x.grad, xt.grad)


def test_recording_does_not_disturb_the_fast_path():
    x = torch.randn(256, device="cuda", requires_grad=True)
    for _ in range(3):
        GELU(x.detach())
    assert GELU(x).grad_fn is not None  # a plain call's fast plan exists; a grad call still records
    with torch.no_grad():
        assert GELU(x).grad_fn is None
