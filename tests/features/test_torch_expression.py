"""The torch expression of every payload in tritonwise.ops against our kernel.

tracing/expression.evaluate computes a call with torch operations (what torch.compile traces);
the kernel (Triton's interpreter on CPU) is the reference: integer and bool outputs bit-equal,
float outputs within the dtype's tolerance, with NaN and inf at the same places. Operands hold
NaN, infinities and signed zeros among random values.
"""

from __future__ import annotations

import itertools

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

import tritonwise
import tritonwise.ops.activation as activation
import tritonwise.ops.arithmetic as arithmetic
import tritonwise.ops.compare as compare
import tritonwise.ops.complex as complex_ops
import tritonwise.ops.layout as layout
import tritonwise.ops.math as math_ops
from tests.support.poison import poisoned_like
from tritonwise.ops._pointwise import Pointwise
from tritonwise.tracing.expression import evaluate, expression_or_reason
from tritonwise.tracing.translate import UnsupportedConstruct

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = (torch.float32, torch.float16, torch.int32, torch.bool)
MODULES = (activation, arithmetic, compare, complex_ops, layout, math_ops)


def _pointwise_objects() -> dict:
    """Every payload tritonwise.ops runs, by name: its Pointwise (or function) objects."""
    found = {}
    for module in MODULES:
        for name, value in vars(module).items():
            values = value.items() if isinstance(value, dict) else [(None, value)]
            for key, v in values:
                if isinstance(v, (Pointwise, tritonwise.PointwiseDynamicFunction)):
                    found[f"{module.__name__.split('.')[-1]}.{name}" + (f"[{key}]" if key else "")] = v
    return found


OPS = _pointwise_objects()


def function_of(op, kinds: tuple):
    if isinstance(op, Pointwise):
        return op.function(kinds)
    return op


def operand(dtype: torch.dtype, shape, seed: int, divisor: bool) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.ones(shape, dtype=torch.bool) if divisor else torch.rand(shape, generator=g) < 0.5
    if dtype.is_floating_point:
        t = torch.randn(shape, generator=g) * 3
        t.view(-1)[:5] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0])[: t.numel()]
        return t.to(dtype)
    t = torch.randint(-20, 20, shape, generator=g, dtype=dtype)
    return torch.where(t == 0, torch.ones_like(t), t) if divisor else t


def compare_outputs(got, expected) -> None:
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for g, e in zip(got, expected, strict=True):
        assert (g.dtype, g.shape) == (e.dtype, e.shape), f"{g.dtype}{tuple(g.shape)}, kernel {e.dtype}{tuple(e.shape)}"
        if e.dtype.is_floating_point:
            torch.testing.assert_close(g, e, equal_nan=True)
        else:
            assert torch.equal(g, e), f"{g} vs kernel {e}"


def cases(op):
    """(kinds, args): all tensors over each dtype, and the last operand a python scalar."""
    count = _arity(op)
    shapes = [(3, 4)] + [(4,)] * (count - 1)  # broadcast too
    for dtype in DTYPES:
        args = tuple(operand(dtype, s, i, divisor=i > 0) for i, s in enumerate(shapes))
        yield (True,) * count, args
    if count > 1:
        args = tuple(operand(torch.float32, s, i, divisor=i > 0) for i, s in enumerate(shapes[:-1])) + (1.5,)
        yield (True,) * (count - 1) + (False,), args


def _arity(op) -> int:
    payload = op._payload if isinstance(op, Pointwise) else op.payload
    return len(payload.fn.__code__.co_varnames[: payload.fn.__code__.co_argcount])


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_payload_translates(name):
    assert not isinstance(expression_or_reason(function_of(OPS[name], (True,) * _arity(OPS[name]))), str)


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(OPS))
def test_expression_matches_kernel(name, device):
    """The torch expression of each op against our kernel, on the CPU (Triton's interpreter) and
    on the GPU: integer and bool outputs bit for bit, floats within the dtype's tolerance, NaN
    and inf where the kernel gives them."""
    op, compared = OPS[name], 0
    for kinds, args in cases(op):
        args = tuple(a.to(device) if isinstance(a, torch.Tensor) else a for a in args)
        fn = function_of(op, kinds)
        try:
            expected = fn(*args)
        except Exception:  # a dtype the payload does not take (Triton refuses it): nothing to compare
            continue
        compare_outputs(evaluate(fn, args), expected)
        compared += 1
    assert compared, f"{name}: no case ran"


def test_given_outputs_are_written():
    fn = function_of(activation.SILU, (True,))
    x = operand(torch.float32, (3, 4), 0, False)
    out = poisoned_like(x)
    result = evaluate(fn, (x,), (out,))
    assert result is out
    compare_outputs(out, fn(x))


@triton.jit
def _sum_and_max(x, y):
    return x * y, x - y


def test_fused_reductions():
    fn = tritonwise.pointwise_dynamic(
        _sum_and_max, promotion_methods=[(0, 1, "DEFAULT"), (0, 1, "DEFAULT")], reductions=["sum", "max"]
    )
    x, y = operand(torch.float32, (3, 4), 1, False), operand(torch.float32, (4,), 2, False)
    x, y = torch.nan_to_num(x), torch.nan_to_num(y, posinf=1.0, neginf=-1.0)
    compare_outputs(evaluate(fn, (x, y)), fn(x, y))


def test_reductions_along_dims():
    fn = tritonwise.pointwise_dynamic(
        _sum_and_max, promotion_methods=[(0, 1, "DEFAULT"), (0, 1, "DEFAULT")], reductions=[("sum", 1), ("max", 1)]
    )
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    compare_outputs(evaluate(fn, (x, y)), fn(x, y))


@triton.jit
def _promoting(x, y, scale):
    return (x + y * scale).to(tl.float16), x < y


def test_promotion_follows_the_schema():
    """Each output computed in its computation dtype and cast to its own result dtype."""
    fn = tritonwise.pointwise_dynamic(
        _promoting, is_tensor=[True, True, False], promotion_methods=[(0, 1, 2, "INT_TO_FLOAT"), (0, 1, "ALWAYS_BOOL")]
    )
    for dx, dy in itertools.product((torch.int32, torch.float16, torch.bool), (torch.float32, torch.int64)):
        x, y = operand(dx, (5,), 3, False), operand(dy, (5,), 4, False)
        compare_outputs(evaluate(fn, (x, y, 3)), fn(x, y, 3))


@triton.jit
def _integer_semantics(x, y):
    return x // y, x % y, x / y, x + y


def test_integer_division_and_bool_arithmetic_follow_triton():
    """`//` and `%` truncate as C does, integer `/` divides in float32, bools add as torch's."""
    fn = tritonwise.pointwise_dynamic(_integer_semantics, promotion_methods=[(0, 1, "DEFAULT")] * 4)
    x = torch.tensor([7, -7, 7, -7, 0, 9], dtype=torch.int32)
    y = torch.tensor([2, 2, -2, -2, 3, 4], dtype=torch.int32)
    compare_outputs(evaluate(fn, (x, y)), fn(x, y))
    a, b = torch.tensor([True, False]), torch.tensor([True, True])  # True divisors: no division by zero
    compare_outputs(evaluate(fn, (a, b)), fn(a, b))


@triton.jit
def _extrema(x, y):
    return (
        tl.maximum(x, y),
        tl.minimum(x, 0.5),
        tl.clamp(x, y, y + 1.0),
        tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL),  # an enum: Triton keeps none in a variable
    )


@pytest.mark.parametrize("device", DEVICES)
def test_maximum_minimum_and_clamp_drop_nan_as_triton_does(device):
    """By default Triton's maximum, minimum and clamp return the operand that is not NaN;
    with propagate_nan=ALL, NaN."""
    fn = tritonwise.pointwise_dynamic(_extrema, promotion_methods=[(0, 1, "DEFAULT")] * 4)
    nan = float("nan")
    x = torch.tensor([nan, 1.0, nan, 3.0, -2.0, 0.25], device=device)
    y = torch.tensor([0.0, nan, nan, 2.0, 1.0, -1.0], device=device)
    expected = fn(x, y)
    assert expected[0][:2].tolist() == [0.0, 1.0] and expected[3][:3].isnan().all()
    compare_outputs(evaluate(fn, (x, y)), expected)


@triton.jit
def _round(x):
    return libdevice.round(x)


@pytest.mark.parametrize("device", DEVICES)
def test_libdevice_round_is_exact_near_halves(device):
    """Halves away from zero; 0.49999997 rounds to 0 (adding 0.5 first would round it up)."""
    fn = tritonwise.pointwise_dynamic(_round, promotion_methods=[(0, "DEFAULT")])
    x = torch.tensor([0.49999997, -0.49999997, 0.5, -2.5, 8388609.0, -1.5, float("nan"), float("inf")], device=device)
    try:
        expected = fn(x)
    except tritonwise.PayloadError:
        pytest.skip("this Triton interpreter has no libdevice round")
    assert expected[:4].tolist() == [0.0, -0.0, 1.0, -3.0]
    compare_outputs(evaluate(fn, (x,)), expected)


@triton.jit
def _scalar_quotient(x, s, d):
    return x + s // d


def test_python_int_quotients_are_exact():
    fn = tritonwise.pointwise_dynamic(
        _scalar_quotient, is_tensor=[True, False, False], promotion_methods=[(0, 1, 2, "DEFAULT")]
    )
    x = torch.zeros(2, dtype=torch.int64)
    for s, d in ((2**60 + 5, 7), (-(2**60) - 5, 7), (2**60 + 5, -7), (7, 2)):
        compare_outputs(evaluate(fn, (x, s, d)), fn(x, s, d))


@triton.jit
def _toward_zero(x):
    return x.to(tl.float16, fp_downcast_rounding="rtz")


@triton.jit
def _toward_zero_by_position(x):
    return tl.cast(x, tl.float16, "rtz") + x.to(tl.float16, "rtz")


@triton.jit
def _bits_by_position(x):
    return x.to(tl.int32, None, True)


def test_a_conversion_rounding_toward_zero_does_not_translate():
    for payload in (_toward_zero, _toward_zero_by_position):
        reason = expression_or_reason(tritonwise.pointwise_dynamic(payload, promotion_methods=[(0, "DEFAULT")]))
        assert isinstance(reason, str) and "the rounding `'rtz'`" in reason


def test_conversion_arguments_by_position_are_triton_s():
    """`x.to(dtype, fp_downcast_rounding, bitcast)`, as Triton orders them."""
    fn = tritonwise.pointwise_dynamic(_bits_by_position, promotion_methods=[(0, "DEFAULT")])
    x = torch.tensor([1.0, -2.5, 0.0])
    got = evaluate(fn, (x,))
    assert torch.equal(got, fn(x).float()) and torch.equal(got, x.view(torch.int32).float())


@triton.jit
def _branch_on_values(x):
    if x > 0:
        y = x
    else:
        y = -x
    return y


@triton.jit
def _random(x):
    return x + tl.rand(0, x.to(tl.int32))


@pytest.mark.parametrize(
    "payload, construct",
    [(_branch_on_values, "an `if` on values computed per element (`x > 0`"), (_random, "`tl.rand`")],
)
def test_unsupported_constructs_are_named(payload, construct):
    fn = tritonwise.pointwise_dynamic(payload, promotion_methods=[(0, "DEFAULT")])
    reason = expression_or_reason(fn)
    assert isinstance(reason, str) and construct in reason and "line" in reason
    with pytest.raises(UnsupportedConstruct, match="has no torch equivalent"):
        evaluate(fn, (torch.randn(3),))


def test_translation_reads_like_the_payload():
    fn = function_of(activation.GELU["tanh"], (True,))
    source = expression_or_reason(fn).source
    assert "tw.exp(-2.0 * tw.abs(z))" in source and "def _tanh__" in source and "tw.where(z < 0, -t, t)" in source
