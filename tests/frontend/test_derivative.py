"""The derived backward payloads as Python: run with torch standing in for triton.language.

This checks the symbolic differentiation itself, for every rule, without Triton's interpreter
(which has no libdevice on CPU): the backward source is executed with `tl` and `libdevice`
bound to torch functions, and its gradients are compared with torch.autograd's.
"""

import math
import textwrap
import types

import pytest
import torch
import triton.language as tl
from triton.language.extra import libdevice

from tritonwise.autodiff import rules
from tritonwise.autodiff.derivative import NotDifferentiable, derive

TORCH_TL = types.SimpleNamespace(
    exp=torch.exp, exp2=torch.exp2, log=torch.log, log2=torch.log2, sqrt=torch.sqrt, rsqrt=torch.rsqrt,
    sin=torch.sin, cos=torch.cos, sigmoid=torch.sigmoid, abs=torch.abs, maximum=torch.maximum,
    minimum=torch.minimum, where=torch.where, zeros_like=torch.zeros_like, fma=lambda a, b, c: a * b + c,
    clamp=lambda x, lo, hi: torch.minimum(torch.maximum(x, torch.as_tensor(lo, dtype=x.dtype)), hi),
    floor=torch.floor, float32=torch.float32, float64=torch.float64,
)  # fmt: skip
TORCH_LIBDEVICE = types.SimpleNamespace(tanh=torch.tanh, erf=torch.erf, pow=torch.pow, log1p=torch.log1p)
GLOBALS = {"tl": tl, "libdevice": libdevice}


def _run(source: str, wrt, args, grads, reductions=None):
    reductions = reductions or [None] * len(grads)
    backward = derive(textwrap.dedent(source), GLOBALS, "payload", wrt, reductions)
    namespace = {"tl": TORCH_TL, "libdevice": TORCH_LIBDEVICE}
    exec(backward.source.split("\n", 1)[1], namespace)
    result = namespace[backward.name](*args, *grads)
    return result if isinstance(result, tuple) else (result,)


def _forward(source: str):
    namespace = {"tl": TORCH_TL, "libdevice": TORCH_LIBDEVICE}
    exec(textwrap.dedent(source), namespace)
    return namespace["payload"]


BODIES = {
    "libdevice tanh": "return libdevice.tanh(x) * y",
    "libdevice erf": "return libdevice.erf(x * y)",
    "libdevice pow by a constant": "return libdevice.pow(x * x + 1.0, 1.5) + y",
    "libdevice pow of tensors": "return libdevice.pow(x * x + 1.0, y)",
    "exp2 log2": "return tl.exp2(x) + tl.log2(y * y + 1.0)",
    "fma": "return tl.fma(x, y, x)",
    "clamp": "return tl.clamp(x, -0.5, y)",
    "cast": "return x.to(tl.float64) * tl.floor(y) + y",
    "log1p": "return libdevice.log1p(x * x) * y",
}
# Bodies checked where their formulas meet special points: at base 0 pow's gradients are torch's
# masked zeros, not the NaN and infinities of the plain formulas.
SPECIAL_POINTS = {
    "pow at base 0": ("return libdevice.pow(x, y)", [0.0, 0.0, 0.0, 0.0, 2.0], [0.0, 2.0, 0.5, -1.0, 0.0]),
    "pow by a constant 0": ("return libdevice.pow(x, 0.0) + y", [0.0, 2.0], [1.0, 1.0]),
}


@pytest.mark.parametrize("body", list(BODIES))
def test_derived_gradients_match_torch(body):
    source = f"def payload(x, y):\n    {BODIES[body]}\n"
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    y = torch.rand(4, dtype=torch.float64).add(0.5).requires_grad_()
    g = torch.randn(5, 4, dtype=torch.float64)
    want = torch.autograd.grad(_forward(source)(x, y), (x, y), g)
    got = _run(source, [0, 1], (x.detach(), y.detach()), (g,))
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1].sum_to_size(y.shape), want[1])


@pytest.mark.parametrize("body", list(SPECIAL_POINTS))
def test_derived_gradients_match_torch_at_special_points(body):
    line, xs, ys = SPECIAL_POINTS[body]
    source = f"def payload(x, y):\n    {line}\n"
    x = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    y = torch.tensor(ys, dtype=torch.float64, requires_grad=True)
    g = torch.ones_like(x)
    want = torch.autograd.grad(_forward(source)(x, y), (x, y), g)
    got = _run(source, [0, 1], (x.detach(), y.detach()), (g,))
    torch.testing.assert_close(got, want, equal_nan=True)


def test_generated_source_reads_as_written():
    backward = derive("def silu(x):\n    return x * tl.sigmoid(x)\n", GLOBALS, "silu", [0], [None])
    assert backward.source == textwrap.dedent(
        """\
        @triton.jit
        def silu_backward(x, grad_out0):
            # the forward, recomputed
            t1 = tl.sigmoid(x)
            t2 = x * t1
            # the adjoints, last operation first
            grad_t1 = grad_out0 * x
            grad_x = grad_out0 * t1 + grad_t1 * t1 * (1.0 - t1)
            return grad_x
        """
    )


def test_inputs_reaching_no_output_differentiably_are_reported():
    source = "def payload(x, m):\n    return tl.where(m > 0, x, 2.0 * x)\n"
    backward = derive(source, GLOBALS, "payload", [0, 1], [None])
    assert backward.returns == (True, False)


@pytest.mark.parametrize(
    "body, construct",
    [
        ("return x // y", "the operator in `x // y`"),
        ("return x.exp()", "the method `.exp`"),
        ("return tl.exp(x=x)", "keyword arguments"),
        ("for i in range(2):\n        x = x * y\n    return x", "the statement `for i in range"),
        ("return [x][0]", "the expression `\\[x\\]\\[0\\]`"),
        ("return tl.cumsum(x, 0)", "no derivative rule for `tl.cumsum`"),
    ],
)
def test_underivable_constructs_name_themselves(body, construct):
    with pytest.raises(NotDifferentiable, match=f"payload payload, line \\d+ of the payload: .*{construct}"):
        derive(f"def payload(x, y):\n    {body}\n", GLOBALS, "payload", [0], [None])


def test_rule_constants_are_exact():
    assert float(rules.TWO_OVER_SQRT_PI) == 2 / math.sqrt(math.pi)
    assert float(rules.LN2) == math.log(2) and float(rules.LN10) == math.log(10)
