"""Autograd on the GPU (marked `gpu`): libdevice rules, bf16, and the fast path after recording."""

import sys

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
    """Gradients against torch's in fp32 (the opmath reference). In bf16, y's gradient sums 257
    broadcast rows of rounded terms, so it is held to torch's own bf16 error, not a fixed bound."""
    x = torch.randn(1000, 257, device="cuda", dtype=dtype).t().requires_grad_()  # transposed
    y = torch.randn(1000, device="cuda", dtype=dtype, requires_grad=True)
    g = torch.randn(257, 1000, device="cuda", dtype=dtype)
    TANH_ERF_POW(x, y).backward(g)
    assert x.grad.dtype == dtype and y.grad.dtype == dtype
    reference = _torch_grads(x, y, g, torch.float32)
    if dtype == torch.float32:
        for ours, want in zip((x.grad, y.grad), reference):
            torch.testing.assert_close(ours, want, rtol=1e-4, atol=1e-4)
        return
    torch.testing.assert_close(x.grad.float(), reference[0], rtol=2e-2, atol=2e-2)
    torch_bf16 = _torch_grads(x, y, g, dtype)
    for ours, theirs, want in zip((x.grad, y.grad), torch_bf16, reference):
        assert (ours.float() - want).abs().max() <= 2 * (theirs.float() - want).abs().max() + 1e-2


def _torch_grads(x, y, g, dtype) -> tuple:
    xt, yt = (t.detach().to(dtype).requires_grad_() for t in (x, y))
    _torch_tanh_erf_pow(xt, yt).backward(g.to(dtype))
    return xt.grad, yt.grad


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


def _python_frames(fn, *args):
    """fn(*args) and the names of the Python functions it ran (none: served and recorded in C)."""
    frames = []
    sys.setprofile(lambda frame, event, arg: frames.append(frame.f_code.co_name) if event == "call" else None)
    try:
        return fn(*args), frames
    finally:
        sys.setprofile(None)


@pytest.fixture
def aten_helpers_in_use():
    """C records only through the ATen helpers: built (or loaded) and handed over first, with the
    C __call__ installed (a process that compiled a call on torch before 2.13 has the Python one)."""
    from tritonwise.runtime import aten, hit_path, native

    aten.use(native.launch_module(), aten.helpers())
    before = hit_path.install_c_calls()
    yield
    hit_path.restore_calls(before)


def test_a_signature_recorded_once_is_recorded_in_c_after(aten_helpers_in_use):
    x = torch.randn(1024, device="cuda", requires_grad=True)
    first = GELU(x)  # through Python's autograd.Function, which caches the signature's RecordingPlan
    out, frames = _python_frames(GELU, x)
    assert frames == [] and out.grad_fn.name() == "TritonwiseBackward" and first.grad_fn.name() != out.grad_fn.name()
    g = torch.randn(1024, device="cuda")
    out.backward(g)
    xt = x.detach().requires_grad_()
    torch.nn.functional.gelu(xt).backward(g)
    torch.testing.assert_close(x.grad, xt.grad)
    torch.testing.assert_close(out, torch.nn.functional.gelu(x.detach()))


def test_gradcheck_through_the_c_recording(aten_helpers_in_use):
    x = torch.randn(33, 17, dtype=torch.float64, device="cuda", requires_grad=True)
    y = torch.randn(17, dtype=torch.float64, device="cuda", requires_grad=True)
    TANH_ERF_POW_FP64(x, y)
    assert TANH_ERF_POW_FP64(x, y).grad_fn.name() == "TritonwiseBackward"
    assert torch.autograd.gradcheck(TANH_ERF_POW_FP64, (x, y))
    y_only = x.detach()  # one input needing grad: its own signature, its own recording
    TANH_ERF_POW_FP64(y_only, y)
    assert torch.autograd.gradcheck(lambda b: TANH_ERF_POW_FP64(y_only, b), (y,))


def test_double_backward_is_refused_through_the_c_recording(aten_helpers_in_use):
    x = torch.randn(64, device="cuda", requires_grad=True)
    GELU(x)
    out = GELU(x)
    assert out.grad_fn.name() == "TritonwiseBackward"
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        g.sum().backward()


def test_the_c_recording_keeps_torchs_checks(aten_helpers_in_use):
    x = torch.randn(64, device="cuda", requires_grad=True)
    h = x * 2.0
    GELU(h)
    out = GELU(h)
    with torch.no_grad():
        h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_c_recording_can_be_turned_off(aten_helpers_in_use, monkeypatch):
    """TRITONWISE_C_RECORDING=0: every call through torch.autograd.Function (compiled autograd
    cannot trace the C++ node)."""
    monkeypatch.setenv("TRITONWISE_C_RECORDING", "0")
    x = torch.randn(96, device="cuda", requires_grad=True)
    outs = [GELU(x) for _ in range(3)]
    assert {out.grad_fn.name() for out in outs} == {"_RecordBackward"}


def test_a_negative_view_beside_a_grad_input_is_never_recorded_from_a_raw_plan(aten_helpers_in_use):
    """Routing resolves a negative view before the plain call: no recording may launch its raw memory."""
    neg = torch.randn(256, dtype=torch.complex64, device="cuda").conj().imag
    y = torch.randn(256, device="cuda", requires_grad=True)
    want = _torch_tanh_erf_pow(neg.resolve_neg(), y)
    for _ in range(3):
        torch.testing.assert_close(TANH_ERF_POW(neg, y), want)
