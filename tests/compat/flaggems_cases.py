"""Which FlagGems ops `flaggems_ops.py` runs, how it calls them, and the torch op it compares with.

A `Case` names one file of FlagGems' `src/flag_gems/ops/` and the entries of it to call; each
`Call` gives the entry's arguments as `T(...)` (a tensor the harness builds, in the case's dtype
unless the `T` says otherwise) or python values passed as they are, and the torch function that
takes the same arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
I32, I16, U8, BOOL = torch.int32, torch.int16, torch.uint8, torch.bool
FLOATS = (F32, F16, BF16)
FLOATS_INT = (F32, F16, BF16, I32)
INTS = (I32, I16, U8, BOOL)


@dataclass(frozen=True)
class T:
    """A tensor argument. `domain`: the values drawn (see flaggems_ops.draw); `dtype`: fixed
    dtype instead of the case's."""

    domain: str | None = None
    dtype: torch.dtype | None = None


@dataclass(frozen=True)
class Call:
    entry: str
    reference: Callable
    args: tuple
    kwargs: dict = field(default_factory=dict)
    devices: tuple = ("cpu", "cuda")  # where the entry runs: FlagGems' where_self refuses CPU tensors
    out: str = ""  # the keyword of a given output: the harness passes a poisoned one and checks it


@dataclass(frozen=True)
class Case:
    op: str
    calls: tuple
    dtypes: tuple = FLOATS
    domain: str = "normal"
    cpu_issue: str = ""  # why the CPU path computes it wrong today, where known


def unary(op, entry=None, reference=None, dtypes=FLOATS, domain="normal", out_entry=None):
    """The op's entry on one tensor; with `out_entry`, also that entry with a given `out=`."""
    reference = reference or getattr(torch, op)
    calls = (Call(entry or op, reference, (T(),)),)
    calls += (Call(out_entry, reference, (T(),), out="out"),) if out_entry else ()
    return Case(op, calls, dtypes, domain)


def binary(op, entry=None, reference=None, dtypes=FLOATS, domain="normal", out_entry=None):
    reference = reference or getattr(torch, op)
    calls = (Call(entry or op, reference, (T(), T())),)
    calls += (Call(out_entry, reference, (T(), T()), out="out"),) if out_entry else ()
    return Case(op, calls, dtypes, domain)


def _where(condition, a, b):
    return torch.where(condition, a, b)


def _isclose(a, b, *tolerances):
    """torch.isclose in float64: FlagGems compares fp16/bf16 in fp32, torch in the input dtype,
    so values on the tolerance's edge may differ; float64 is the exact answer for both."""
    return torch.isclose(a.double(), b.double(), *tolerances)


CASES = (
    # arithmetic
    unary("abs", dtypes=FLOATS_INT),
    unary("neg", dtypes=FLOATS_INT),
    Case("add", (Call("add", torch.add, (T(), T()), {"alpha": 2}),
                 Call("add", torch.add, (T(), 1.5))), FLOATS_INT),
    Case("sub", (Call("sub", torch.sub, (T(), T()), {"alpha": 2}),
                 Call("sub", torch.sub, (T(), 1.5))), FLOATS_INT),
    Case("rsub", (Call("rsub_tensor", torch.rsub, (T(), T()), {"alpha": 2}),), FLOATS_INT),
    Case("addcmul", (Call("addcmul", torch.addcmul, (T(), T(), T()), {"value": 0.5}),
                     Call("addcmul_out", torch.addcmul, (T(), T(), T()), {"value": 0.5}, out="out")), FLOATS),
    Case("addcdiv", (Call("addcdiv", lambda x, a, b, value: torch.addcdiv(x, a, b, value=value),
                          (T(), T(), T("nonzero"), 0.5)),), FLOATS),
    Case("lerp", (Call("lerp_tensor", torch.lerp, (T(), T(), T("unit"))),
                  Call("lerp_scalar", torch.lerp, (T(), T(), 0.3)),
                  Call("lerp_scalar", torch.lerp, (T(), T(), 0.8))), FLOATS),
    unary("reciprocal", domain="nonzero"),
    unary("square", dtypes=FLOATS_INT, out_entry="square_out"),
    unary("rad2deg"),
    unary("floor", out_entry="floor_out"),
    unary("ceil", out_entry="ceil_out"),
    binary("maximum", dtypes=FLOATS_INT, domain="ties"),
    binary("minimum", dtypes=FLOATS_INT, domain="ties"),
    binary("copysign", domain="special", out_entry="copysign_out"),
    binary("heaviside", domain="ties", out_entry="heaviside_out"),
    Case("clamp", (Call("clamp", torch.clamp, (T(), -0.5, 0.7)),
                   Call("clamp_tensor", torch.clamp, (T(), T(), T()))), FLOATS_INT),
    Case("where", (Call("where_inner", _where, (T("bool", BOOL), T(), T())),
                   Call("where_self", _where, (T("bool", BOOL), T(), T()), devices=("cuda",))), FLOATS_INT),
    # comparisons and logic
    *(binary(op, dtypes=FLOATS_INT, domain="ties") for op in ("eq", "ne", "gt", "ge", "lt", "le")),
    *(binary(op, dtypes=(F32, I32, BOOL), domain="ties") for op in ("logical_and", "logical_or", "logical_xor")),
    unary("logical_not", dtypes=(F32, I32, BOOL), domain="ties"),
    unary("signbit", domain="special", out_entry="signbit_out"),
    # bitwise
    *(binary(op, f"{op}_tensor", dtypes=INTS) for op in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    Case("bitwise_not", (Call("bitwise_not", torch.bitwise_not, (T(),)),), INTS,
         cpu_issue="Triton 3.6's interpreter inverts uint8 with a -1 NumPy 2 refuses; 3.9's does not"),
    binary("bitwise_left_shift", dtypes=(I32, I16, U8), domain="shift"),
    binary("bitwise_right_shift", dtypes=(I32, I16, U8), domain="shift"),
    # math
    unary("sin"),
    unary("cos"),
    unary("exp", out_entry="exp_out"),
    unary("exp2"),
    unary("log", domain="positive"),
    unary("log1p", domain="positive", out_entry="log1p_out"),
    unary("sqrt", domain="positive"),
    unary("rsqrt", domain="positive"),
    unary("erf"),
    unary("sinc"),
    binary("logaddexp", out_entry="logaddexp_out"),
    Case("polar", (Call("polar", torch.polar, (T("positive"), T())),), (F32,)),
    # activations
    unary("relu"),
    Case("elu", (Call("elu", lambda x, alpha: F.elu(x, alpha), (T(), 1.5)),)),
    Case("celu", (Call("celu", lambda x, alpha: F.celu(x, alpha), (T(), 1.5)),)),
    Case("softplus", (Call("softplus", lambda x, beta, threshold: F.softplus(x, beta, threshold), (T(), 2.0, 3.0)),)),
    Case("threshold", (Call("threshold", F.threshold, (T(), 0.25, -3.0)),)),
    # payloads that call libdevice through tl_extra_shim or triton_lang_extension
    Case("gelu", (Call("gelu", F.gelu, (T(),)),
                  Call("gelu", lambda x, approximate: F.gelu(x, approximate=approximate), (T(),),
                       {"approximate": "tanh"}))),
    unary("sigmoid"),
    unary("tanh"),
    Case("silu", (Call("silu", F.silu, (T(),)),)),
    Case("mish", (Call("mish", F.mish, (T(),)),)),
    Case("pow", (Call("pow_tensor_tensor", torch.pow, (T("positive"), T())),
                 Call("pow_tensor_scalar", torch.pow, (T("positive"), 2.5)),
                 Call("pow_scalar", torch.pow, (1.7, T())))),
    binary("atan2", out_entry="atan2_out"),
    unary("acos", domain="unit"),
    unary("asin", domain="unit"),
    unary("atan"),
    unary("isnan", domain="special"),
    unary("isinf", domain="special"),
    unary("isfinite", domain="special"),
    Case("nan_to_num", (Call("nan_to_num", torch.nan_to_num, (T(), 0.5, 100.0, -100.0)),), FLOATS, "special"),
    Case("isclose", (Call("isclose", _isclose, (T("ties"), T("ties"))),
                     Call("isclose", _isclose, (T(), T(), 0.5, 0.3)),
                     Call("isclose", _isclose, (T("special"), T("special"), 1e-2, 1e-3, True)))),
    Case("div", (Call("true_divide", torch.true_divide, (T(), T("nonzero"))),
                 Call("true_divide_out", torch.true_divide, (T(), T("nonzero")), out="out"),
                 Call("div_mode", lambda a, b, rounding_mode: torch.div(a, b, rounding_mode=rounding_mode),
                      (T(), T("nonzero")), {"rounding_mode": "floor"}),
                 Call("div_mode", lambda a, b, rounding_mode: torch.div(a, b, rounding_mode=rounding_mode),
                      (T(), T("nonzero")), {"rounding_mode": "trunc"})), FLOATS_INT),
    binary("fmod", "fmod_tensor", dtypes=FLOATS_INT, domain="nonzero"),
)
