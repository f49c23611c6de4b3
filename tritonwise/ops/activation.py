"""sigmoid, silu, gelu: activations with torch's formulas and result dtypes, each with an optional
`out=`; only Triton math present since 3.6 (exp, erf), tanh written with exp.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._pointwise import FLOATING, Pointwise, category, require_tensor


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _silu(x):
    return x / (1.0 + tl.exp(-x))


@triton.jit
def _gelu_erf(x):
    return 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))


@triton.jit
def _tanh(z):
    """tanh through exp of a non-positive argument: no overflow, exact signs."""
    e = tl.exp(-2.0 * tl.abs(z))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(z < 0, -t, t)


@triton.jit
def _gelu_tanh(x):
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + _tanh(inner))


SIGMOID = Pointwise(_sigmoid, [(0, "INT_TO_FLOAT")])
SILU = Pointwise(_silu, [(0, "DEFAULT")])
GELU = {"none": Pointwise(_gelu_erf, [(0, "DEFAULT")]), "tanh": Pointwise(_gelu_tanh, [(0, "DEFAULT")])}


def _require_floating(op: str, input) -> None:
    require_tensor(op, "input", input)
    if category(input) != FLOATING:
        raise NotImplementedError(f"\"{op}\" not implemented for '{input.dtype}' (floating tensors only, as torch)")


def sigmoid(input, *, out=None):
    """torch.sigmoid: 1 / (1 + exp(-input)); integers give the default float dtype (INT_TO_FLOAT)."""
    require_tensor("sigmoid", "input", input)
    return SIGMOID(input, out0=out)


def silu(input, *, out=None):
    """torch.nn.functional.silu: input / (1 + exp(-input)) of a floating tensor (integers raise, as in torch)."""
    _require_floating("silu", input)
    return SILU(input, out0=out)


def gelu(input, approximate="none", *, out=None):
    """torch.nn.functional.gelu, approximate "none" (erf) or "tanh"; integers raise; `out=` is ours."""
    fn = GELU.get(approximate)
    if fn is None:
        raise RuntimeError("approximate argument must be either none or tanh.")
    _require_floating("gelu", input)
    return fn(input, out0=out)
