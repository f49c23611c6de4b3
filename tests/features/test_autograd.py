"""Autograd: gradients of pointwise functions against torch's, for every construct derived."""

import pytest
import torch
import triton
import triton.language as tl

from triton.language.extra import libdevice

from tritonwise import PayloadError, pointwise_dynamic
from tritonwise.autodiff.derivative import NotDifferentiable

from tests.support import payload_no_tl
from tests.support.payload_helpers import twice

F64 = dict(dtype=torch.float64)


def _binary(payload):
    return pointwise_dynamic(payload, promotion_methods=[(0, 1, "DEFAULT")])


@triton.jit
def arith(x, y):
    return (x + y) * x - y / (x * x + 1.0) + -x


@triton.jit
def compare_where(x, y):
    return tl.where(x > y, x * y, y - x) + tl.where((x < 0.5) & (y != 0.25), x, 0.0)


@triton.jit
def exp_log(x, y):
    return tl.exp(x) + tl.log(y * y + 1.0)


@triton.jit
def roots(x, y):
    return tl.sqrt(y * y + 1.0) + tl.rsqrt(x * x + 2.0)


@triton.jit
def trig(x, y):
    return tl.sin(x) * tl.cos(y)


@triton.jit
def sigmoid_abs(x, y):
    return x * tl.sigmoid(y) + tl.abs(x) * y


@triton.jit
def max_min(x, y):
    return tl.maximum(x, y) + tl.minimum(x, 0.5 * y)


@triton.jit
def local_names(x, y):
    """Reassigned and augmented locals."""
    a = x * y
    a = a + x
    a += y
    b, c = a * a, a - x
    return b - c


@triton.jit
def exp2_log2_fma_clamp(x, y):
    return tl.exp2(x) + tl.log2(y * y + 1.0) + tl.fma(x, y, x) + tl.clamp(x, -0.5, 0.5)


@triton.jit
def casts(x, y):
    return x.to(tl.float64) * y + tl.floor(y)


CONSTRUCTS = {
    "arith": (arith, lambda x, y: (x + y) * x - y / (x * x + 1.0) + -x),
    "compare_where": (
        compare_where,
        lambda x, y: torch.where(x > y, x * y, y - x) + torch.where((x < 0.5) & (y != 0.25), x, 0.0),
    ),
    "exp_log": (exp_log, lambda x, y: torch.exp(x) + torch.log(y * y + 1.0)),
    "roots": (roots, lambda x, y: torch.sqrt(y * y + 1.0) + torch.rsqrt(x * x + 2.0)),
    "trig": (trig, lambda x, y: torch.sin(x) * torch.cos(y)),
    "sigmoid_abs": (sigmoid_abs, lambda x, y: x * torch.sigmoid(y) + torch.abs(x) * y),
    "max_min": (max_min, lambda x, y: torch.maximum(x, y) + torch.minimum(x, 0.5 * y)),
    "exp2_log2_fma_clamp": (
        exp2_log2_fma_clamp,
        lambda x, y: torch.exp2(x) + torch.log2(y * y + 1.0) + (x * y + x) + torch.clamp(x, -0.5, 0.5),
    ),
    "casts": (casts, lambda x, y: x.double() * y + torch.floor(y)),
    "local_names": (local_names, lambda x, y: (((x * y + x) + y) ** 2) - ((x * y + x) + y - x)),
}
FUNCTIONS = {name: _binary(payload) for name, (payload, _) in CONSTRUCTS.items()}

LAYOUTS = {
    "same": lambda: (torch.randn(3, 4, **F64), torch.randn(3, 4, **F64)),
    "broadcast": lambda: (torch.randn(2, 1, 3, **F64), torch.randn(4, 3, **F64)),
    "transposed": lambda: (torch.randn(4, 3, **F64).t(), torch.randn(3, 4, **F64)),
}


def _leaves(tensors):
    return tuple(t.detach().requires_grad_() for t in tensors)


@pytest.mark.parametrize("name", list(CONSTRUCTS))
def test_gradcheck_each_construct(name):
    x, y = _leaves(LAYOUTS["same"]())
    assert torch.autograd.gradcheck(FUNCTIONS[name], (x, y), fast_mode=True)


@pytest.mark.parametrize("layout", ["broadcast", "transposed"])
@pytest.mark.parametrize("name", ["arith", "sigmoid_abs"])
def test_gradcheck_broadcast_and_transposed(name, layout):
    x, y = _leaves(LAYOUTS[layout]())
    assert torch.autograd.gradcheck(FUNCTIONS[name], (x, y), fast_mode=True)


@pytest.mark.parametrize("name", list(CONSTRUCTS))
def test_backward_fp32_matches_torch(name):
    x, y = _leaves(t.float() for t in LAYOUTS["broadcast"]())
    weight = torch.randn(2, 4, 3)
    (FUNCTIONS[name](x, y) * weight).sum().backward()
    xt, yt = _leaves((x, y))
    (CONSTRUCTS[name][1](xt, yt) * weight).sum().backward()
    torch.testing.assert_close(x.grad, xt.grad)
    torch.testing.assert_close(y.grad, yt.grad)
    assert x.grad.shape == x.shape and y.grad.shape == y.shape


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT"), (0, 1, "DEFAULT"), (0, 1, "ALWAYS_BOOL")])
@triton.jit
def three_outputs(x, y):
    return x * y, tl.exp(x) - y, x > y


def test_gradcheck_two_outputs_and_a_bool_one():
    x, y = _leaves(LAYOUTS["broadcast"]())
    assert torch.autograd.gradcheck(lambda a, b: three_outputs(a, b)[:2], (x, y), fast_mode=True)
    product, _, greater = three_outputs(x, y)
    assert not greater.requires_grad and product.requires_grad


def test_only_one_output_used():
    x, y = _leaves(LAYOUTS["same"]())
    three_outputs(x, y)[1].sum().backward()
    torch.testing.assert_close(x.grad, torch.exp(x.detach()))
    torch.testing.assert_close(y.grad, -torch.ones_like(y))


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 2, "DEFAULT")])
@triton.jit
def masked_scale(x, mask, alpha):
    return tl.where(mask, x * alpha, -x) + 2.0


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def times_int(x, n):
    return x * n


def test_bf16_backward_matches_torch_in_fp32():
    x, y = _leaves(t.to(torch.bfloat16) for t in LAYOUTS["broadcast"]())
    FUNCTIONS["sigmoid_abs"](x, y).sum().backward()
    xt, yt = _leaves(t.float() for t in (x, y))
    CONSTRUCTS["sigmoid_abs"][1](xt, yt).sum().backward()
    assert x.grad.dtype == y.grad.dtype == torch.bfloat16
    # both are broadcast: gradients are rounded to bf16 per element, then summed over the
    # broadcast dims, as torch's bf16 autograd does: two roundings, against one in fp32
    torch.testing.assert_close(x.grad.float(), xt.grad, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(y.grad.float(), yt.grad, rtol=2e-2, atol=2e-2)


def test_bool_mask_and_scalar_get_no_gradient():
    x = torch.randn(3, 4, **F64, requires_grad=True)
    mask = torch.rand(4) > 0.5
    assert torch.autograd.gradcheck(lambda a: masked_scale(a, mask, 1.5), (x,), fast_mode=True)
    masked_scale(x, mask, 1.5).sum().backward()
    torch.testing.assert_close(x.grad, torch.where(mask, 1.5, -1.0).expand(3, 4).to(x.dtype))


def test_integer_tensor_gets_no_gradient():
    x = torch.randn(3, 4, requires_grad=True)
    n = torch.randint(-3, 4, (3, 4), dtype=torch.int32)
    times_int(x, n).sum().backward()
    torch.testing.assert_close(x.grad, n.float())


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def select_by_sign(x, s):
    return tl.where(s > 0, x, 2.0 * x)


def test_float_input_used_only_in_a_condition_gets_no_gradient():
    x, s = _leaves(LAYOUTS["broadcast"]())
    select_by_sign(x, s).sum().backward()
    assert s.grad is None
    torch.testing.assert_close(x.grad, torch.where(s > 0, 1.0, 2.0).to(x.dtype).expand(2, 4, 3).sum_to_size(x.shape))
    assert select_by_sign.explain_backward(x, s).wrt == (0,)


def _reducing(kind):
    @triton.jit
    def squared_error(x, y):
        d = x - y
        return d * d

    return pointwise_dynamic(squared_error, promotion_methods=[(0, 1, "DEFAULT")], reductions=[kind])


REDUCING = {kind: _reducing(kind) for kind in ("sum", "max", "min")}
TORCH_REDUCE = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_gradcheck_fused_reduction(kind):
    x, y = _leaves(LAYOUTS["broadcast"]())
    assert torch.autograd.gradcheck(REDUCING[kind], (x, y), fast_mode=True)


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_fused_reduction_fp32_matches_torch_with_ties(kind):
    x = torch.tensor([[1.0, 3.0, -3.0], [0.5, -3.0, 3.0]], requires_grad=True)
    y = torch.zeros(3, requires_grad=True)
    REDUCING[kind](x, y).backward()
    xt, yt = _leaves((x, y))
    TORCH_REDUCE[kind]((xt - yt) * (xt - yt)).backward()
    torch.testing.assert_close(x.grad, xt.grad)
    torch.testing.assert_close(y.grad, yt.grad)


@triton.jit
def silu_payload(x):
    return x * tl.sigmoid(x)


@triton.jit
def gelu_tanh_payload(x):
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (2.0 * tl.sigmoid(2.0 * inner))  # 1 + tanh(z) == 2 sigmoid(2z)


@pytest.mark.parametrize(
    "payload, reference",
    [
        (silu_payload, torch.nn.functional.silu),
        (gelu_tanh_payload, lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
    ],
)
def test_activations_fp32_match_torch(payload, reference):
    fn = pointwise_dynamic(payload, promotion_methods=[(0, "DEFAULT")])
    x = torch.randn(4, 6, requires_grad=True)
    g = torch.randn(4, 6)
    fn(x).backward(g)
    xt = x.detach().requires_grad_()
    reference(xt).backward(g)
    torch.testing.assert_close(x.grad, xt.grad)


def test_payload_from_a_module_without_triton_language():
    x, y = _leaves(LAYOUTS["broadcast"]())
    assert torch.autograd.gradcheck(_binary(payload_no_tl.add), (x, y), fast_mode=True)


def test_no_grad_calls_record_nothing_and_reuse_plans():
    fn = _binary(arith)
    x, y = _leaves(LAYOUTS["same"]())
    with torch.no_grad():
        assert fn(x, y).grad_fn is None
    plain = fn(x.detach(), y.detach())
    assert plain.grad_fn is None and fn(x, y).grad_fn is not None
    misses = fn.plan_cache.misses
    fn(x.detach(), y.detach())
    assert fn.plan_cache.misses == misses  # the recorded call reused the no-grad plan


def test_given_outputs_with_grad_are_an_error():
    x, y = _leaves(LAYOUTS["same"]())
    with pytest.raises(RuntimeError, match="out0=.*automatic differentiation"):
        FUNCTIONS["arith"](x, y, out0=torch.empty(3, 4, **F64))


def test_given_outputs_that_require_grad_are_refused_with_grad_and_written_without():
    """As torch's out=: a leaf written in place would keep none of the values' history. Under
    no_grad the call writes it, and that call's plan does not serve the next call with grad."""
    fn, x = FUNCTIONS["trig"], torch.randn(3, 4, **F64)
    with torch.no_grad():
        out = torch.full((3, 4), float("nan"), **F64).requires_grad_()
        assert fn(x, x, out0=out) is out
    torch.testing.assert_close(out.detach(), torch.sin(x) * torch.cos(x))
    for _ in range(2):
        with pytest.raises(RuntimeError, match="out0= requires grad"):
            fn(x, x, out0=torch.zeros(3, 4, **F64).requires_grad_())
    with pytest.raises(RuntimeError, match="out0= requires grad"):
        fn.instantiate(2)(x, x, out0=torch.zeros(3, 4, **F64).requires_grad_())


def test_given_outputs_are_refused_after_the_same_arguments_recorded():
    """The checks a recorded call passed are kept per its arguments' kinds; given outputs are still refused."""
    fn = _binary(arith)
    x, y = _leaves(LAYOUTS["same"]())
    assert fn(x, y).grad_fn is not None
    with pytest.raises(RuntimeError, match="out0=.*automatic differentiation"):
        fn(x, y, out0=torch.empty(3, 4, **F64))
    (gx,) = torch.autograd.grad(fn(x, y).sum(), x)
    assert gx.shape == x.shape


@pytest.mark.parametrize("both", [True, False], ids=["two inputs need grad", "one input needs grad"])
def test_double_backward_is_a_clear_error(both):
    x, y = _leaves(LAYOUTS["same"]())
    y = y if both else y.detach()
    (gx,) = torch.autograd.grad(FUNCTIONS["trig"](x, y).sum(), x, create_graph=True)
    assert gx.shape == x.shape
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        gx.sum().backward()


@triton.jit
def calls_a_helper(x, y):
    return twice(x) + y


@triton.jit
def branches(x, y):
    if x.dtype == tl.float64:
        x = x * 2
    return x + y


@triton.jit
def tanh_erf_pow(x, y):
    # a tensor exponent: the interpreter's libdevice.pow takes no fp64 tensor with a python float
    # (the GPU promotes the constant); tests/frontend/test_derivative.py covers constant exponents
    return libdevice.tanh(x) * y + libdevice.erf(x * y) + libdevice.pow(x * x + 1.0, y)


def _libdevice_runs_on_cpu() -> bool:
    try:
        _binary(tanh_erf_pow)(torch.ones(1), torch.ones(1))
    except PayloadError:
        return False
    return True


def test_gradcheck_libdevice():
    """libdevice on CPU needs the interpreter's libdevice (tests/frontend/test_derivative.py checks these
    rules without it; tests/gpu/test_gpu_autograd.py on the GPU)."""
    if not _libdevice_runs_on_cpu():
        pytest.skip("this Triton interpreter has no libdevice tanh/erf/pow")
    x, y = _leaves(LAYOUTS["broadcast"]())
    assert torch.autograd.gradcheck(_binary(tanh_erf_pow), (x, y), fast_mode=True)


@triton.jit
def power(x, y):
    return libdevice.pow(x, y)


def test_pow_at_base_zero_matches_torch():
    """At base 0 the plain formulas give NaN and infinities where torch's masks give 0."""
    if not _libdevice_runs_on_cpu():
        pytest.skip("this Triton interpreter has no libdevice tanh/erf/pow")
    x, y = _leaves((torch.tensor([0.0, 0.0, 0.0, 0.0, 2.0], **F64), torch.tensor([0.0, 2.0, 0.5, -1.0, 0.0], **F64)))
    _binary(power)(x, y).sum().backward()
    xt, yt = _leaves((x, y))
    torch.pow(xt, yt).sum().backward()
    torch.testing.assert_close(x.grad, xt.grad, equal_nan=True)
    torch.testing.assert_close(y.grad, yt.grad, equal_nan=True)


@triton.jit
def powers_of_literal_bases(y):
    return libdevice.pow(0.0, y) + libdevice.pow(2.0, y)


def test_pow_of_a_literal_base_matches_torch():
    """A literal base decides its mask when the backward is written (autodiff/rules.py _pow_rule):
    base 0 gives the exponent no gradient where it is not negative and -inf where it is, as torch;
    base 2 the plain y * log(2). fp32: the interpreter's libdevice.pow takes no fp64 tensor beside
    a python float."""
    if not _libdevice_runs_on_cpu():
        pytest.skip("this Triton interpreter has no libdevice tanh/erf/pow")
    (y,) = _leaves([torch.tensor([0.0, 2.0, 0.5, -1.0, -2.5])])
    fn = pointwise_dynamic(powers_of_literal_bases, promotion_methods=[(0, "DEFAULT")])
    result, (yt,) = fn(y), _leaves([y])
    want = torch.pow(0.0, yt) + torch.pow(2.0, yt)
    torch.testing.assert_close(result, want)
    result.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(y.grad, yt.grad)


def test_maximum_and_minimum_with_a_nan_operand_give_the_gradient_to_the_value_returned():
    """Triton's maximum and minimum return the operand that is not NaN, as torch.fmax and torch.fmin
    do; their gradients in torch go to a NaN operand too, so the oracle picks the operand itself."""
    x, y = _leaves((torch.tensor([float("nan"), 2.0, 3.0], **F64), torch.tensor([1.0, float("nan"), -1.0], **F64)))
    result = FUNCTIONS["max_min"](x, y)
    xt, yt = _leaves((x, y))
    half = 0.5 * yt
    want = torch.where(yt.isnan() | (xt > yt), xt, yt) + torch.where(half.isnan() | (xt < half), xt, half)
    torch.testing.assert_close(result, want)
    result.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(x.grad, xt.grad)
    torch.testing.assert_close(y.grad, yt.grad)


@triton.jit
def clamp_between(x, lo, hi):
    return tl.clamp(x, lo, hi)


def test_clamp_of_a_nan_gives_the_gradient_to_the_bound_returned():
    """Triton's clamp returns lo for a NaN x (by default it drops NaN, as fmax and fmin)."""
    fn = pointwise_dynamic(clamp_between, promotion_methods=[(0, 1, 2, "DEFAULT")])
    x, lo, hi = _leaves(torch.tensor([v], **F64) for v in (float("nan"), 0.0, 1.0))
    result = fn(x, lo, hi)
    if result.isnan().item():  # Triton 3.5's interpreter keeps a NaN through clamp (its GPU code does not)
        pytest.skip("this Triton's interpreter returns NaN for clamp of a NaN")
    assert result.item() == 0.0
    result.backward()
    assert (x.grad.item(), lo.grad.item(), hi.grad.item()) == (0.0, 1.0, 0.0)


@pytest.mark.parametrize("bounds", [(1.0, 0.0), (-1.0, 1.0)], ids=["crossed", "apart"])
def test_clamp_gives_each_gradient_where_torch_does_whether_or_not_its_bounds_cross(bounds):
    """torch.clamp with tensor bounds: lo > hi returns hi everywhere and gives hi every gradient;
    apart, x keeps those between them, lo those below and hi those above. Against torch in fp64,
    no x on a bound (torch's share of a tie changed between releases)."""
    fn = pointwise_dynamic(clamp_between, promotion_methods=[(0, 1, 2, "DEFAULT")])
    values = torch.tensor([-2.0, -0.3, 0.2, 0.7, 3.0], **F64)
    mine = _leaves([values, torch.full_like(values, bounds[0]), torch.full_like(values, bounds[1])])
    theirs = _leaves(mine)
    result, want = fn(*mine), torch.clamp(*theirs)
    torch.testing.assert_close(result, want)
    result.backward(torch.arange(1.0, 6.0, **F64))
    want.backward(torch.arange(1.0, 6.0, **F64))
    for got, expected in zip(mine, theirs):
        torch.testing.assert_close(got.grad, expected.grad)


def test_clamp_between_equal_bounds_gives_lo_those_below_and_hi_those_above():
    """lo == hi returns that bound: x below it gives its gradient to lo, x above to hi, as torch
    2.14's clamp does; x takes none. Explicit values: torch's rule for these has changed between
    releases."""
    fn = pointwise_dynamic(clamp_between, promotion_methods=[(0, 1, 2, "DEFAULT")])
    values = torch.tensor([-2.0, -0.3, 0.2, 0.7, 3.0], **F64)
    x, lo, hi = _leaves([values, torch.full_like(values, 0.5), torch.full_like(values, 0.5)])
    result = fn(x, lo, hi)
    torch.testing.assert_close(result, torch.full_like(values, 0.5))
    result.backward(torch.arange(1.0, 6.0, **F64))
    assert (x.grad.tolist(), lo.grad.tolist(), hi.grad.tolist()) == (
        [0.0] * 5, [1.0, 2.0, 3.0, 0.0, 0.0], [0.0, 0.0, 0.0, 4.0, 5.0])


@pytest.mark.parametrize(
    "payload, construct", [(calls_a_helper, r"the call `twice\(x\)`"), (branches, r"the statement `if")]
)
def test_underivable_construct_is_named(payload, construct):
    fn = _binary(payload)
    x, y = _leaves(LAYOUTS["same"]())
    with pytest.raises(NotDifferentiable, match=construct + ".*backward="):
        fn(x, y)


def test_a_helper_off_the_differentiated_path_is_fine():
    x, y = _leaves(LAYOUTS["same"]())
    _binary(calls_a_helper)(x.detach(), y).sum().backward()
    torch.testing.assert_close(y.grad, torch.ones_like(y))


@triton.jit
def calls_a_helper_backward(x, y, grad):
    return grad * 2.0, grad


def test_backward_given_by_hand():
    fn = pointwise_dynamic(calls_a_helper, promotion_methods=[(0, 1, "DEFAULT")], backward=calls_a_helper_backward)
    x, y = _leaves(LAYOUTS["broadcast"]())
    assert torch.autograd.gradcheck(fn, (x, y), fast_mode=True)
    again = _binary(calls_a_helper).register_backward(calls_a_helper_backward)
    again(x, y).sum().backward()
    torch.testing.assert_close(y.grad, torch.full_like(y, 2.0))  # summed over the broadcast dim


def test_backward_given_by_hand_with_the_wrong_arity_is_named():
    fn = _binary(calls_a_helper).register_backward(silu_payload)
    x, y = _leaves(LAYOUTS["same"]())
    with pytest.raises(ValueError, match=r"silu_payload takes 1 positional argument, but the backward of calls_a"):
        fn(x, y)


def test_explain_backward_names_a_readable_file():
    x, y = _leaves(LAYOUTS["transposed"]())
    explained = FUNCTIONS["sigmoid_abs"].explain_backward(x, y)
    text = open(explained.payload_path).read()
    assert "def sigmoid_abs_backward(x, y, grad_out0):" in text and "tl.where(x > 0" in text
    assert explained.wrt == (0, 1) and explained.kernel.scheme == "tile2d"
    assert "sigmoid_abs_backward" in str(explained)
