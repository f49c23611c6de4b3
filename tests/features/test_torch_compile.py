"""Under torch.compile, a tritonwise function traces as its payload's torch expression.

Each test compiles an expression holding a tritonwise function and compares it with the same
expression run eagerly (our kernels, Triton's interpreter on CPU). Backends are counting ones
over eager/aot_eager execution, so the graphs dynamo hands a backend can be inspected, and one
test compiles with Inductor to see the fusion itself. Compiles cost seconds on CPU: shapes are
tiny and the tests few.
"""

from __future__ import annotations

import re

import pytest
import torch
import torch._dynamo.testing
import triton
import triton.language as tl

from tests.support.poison import poisoned_like
from tritonwise import pointwise_dynamic

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@triton.jit
def silu_payload(x):
    return x / (1.0 + tl.exp(-x))


silu = pointwise_dynamic(silu_payload, promotion_methods=[(0, "DEFAULT")])


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT"), (0, "ALWAYS_BOOL")])
@triton.jit
def scaled_and_positive(x, scale):
    return x * scale, x > 0


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def looped(x):
    y = x
    for _ in range(2):
        y = y * x
    return y


SILU_OP = silu.as_torch_op("tritonwise_compile_test::silu")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def opaque_calls(gm: torch.fx.GraphModule) -> list:
    """The graph's calls that are not torch's own (aten, torch functions, operators)."""
    calls = [n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
    return [t for t in calls if not isinstance(t, str) and not _is_torch(t)]


def _is_torch(target) -> bool:
    if isinstance(target, torch._ops.OpOverload):
        return target.namespace in ("aten", "prims")
    module = getattr(target, "__module__", None) or ""
    return module.startswith("torch") or module in ("_operator", "operator", "builtins")


def test_traces_with_no_graph_break_and_matches_eager():
    x = torch.randn(4, 5)
    x.view(-1)[:3] = torch.tensor([float("nan"), float("inf"), -float("inf")])
    expected = silu(x) * 2 + 1

    def f(x):
        return silu(x) * 2 + 1

    explained = torch._dynamo.explain(f)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    assert opaque_calls(explained.graphs[0]) == []
    counter = torch._dynamo.testing.CompileCounterWithBackend("eager")
    got = torch.compile(f, fullgraph=True, backend=counter)(x)
    torch.testing.assert_close(got, expected, equal_nan=True)


def test_several_outputs_scalars_and_promotion():
    x = torch.randn(6).to(torch.float16)
    expected = scaled_and_positive(x, 3)
    counter = torch._dynamo.testing.CompileCounterWithBackend("eager")
    got = torch.compile(lambda x: scaled_and_positive(x, 3), fullgraph=True, backend=counter)(x)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype
        torch.testing.assert_close(g, e)
    assert all(opaque_calls(g) == [] for g in counter.graphs)


def test_dynamic_shapes_compile_once():
    counter = torch._dynamo.testing.CompileCounterWithBackend("eager")
    f = torch.compile(lambda x: silu(x) * 2 + 1, fullgraph=True, dynamic=True, backend=counter)
    for n in (3, 5, 7):
        x = torch.randn(2, n)
        torch.testing.assert_close(f(x), silu(x) * 2 + 1)
    assert counter.frame_count == 1


def test_dynamic_shapes_compile_once_for_a_function_reached_through_a_closure():
    """A function made inside another and reached through its closure: with dynamic=True dynamo
    makes an int attribute read that way symbolic, and the key naming the function to
    assume_constant_result must stay a constant (tracing.register)."""

    def make():
        fn = pointwise_dynamic(silu_payload, promotion_methods=[(0, "DEFAULT")])
        return lambda x: fn(x) * 2 + 1

    counter = torch._dynamo.testing.CompileCounterWithBackend("eager")
    f = torch.compile(make(), fullgraph=True, dynamic=True, backend=counter)
    for n in (3, 5, 7):
        x = torch.randn(2, n)
        torch.testing.assert_close(f(x), silu(x) * 2 + 1)
    assert counter.frame_count == 1 and all(opaque_calls(g) == [] for g in counter.graphs)


def test_given_outputs_and_instantiate_are_written():
    x = torch.randn(3, 4)
    expected = silu(x)
    out, out_rank2 = poisoned_like(x), poisoned_like(x)
    rank2 = silu.instantiate(2)  # made outside: creating it is not traceable

    def f(x, out, out_rank2):
        silu(x, out0=out)
        rank2(x, out0=out_rank2)
        return out + out_rank2

    counter = torch._dynamo.testing.CompileCounterWithBackend("eager")
    total = torch.compile(f, fullgraph=True, backend=counter)(x, out, out_rank2)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(out_rank2, expected)
    torch.testing.assert_close(total, expected * 2)
    assert all(opaque_calls(g) == [] for g in counter.graphs)


def test_autograd_under_compile_matches_eager_autograd():
    x = torch.randn(5, requires_grad=True)
    silu(x).mul(torch.arange(5.0)).sum().backward()  # eager: our forward and derived backward kernels
    expected, x.grad = x.grad, None
    f = torch.compile(lambda x: silu(x).mul(torch.arange(5.0)).sum(), fullgraph=True, backend="aot_eager")
    f(x).backward()
    torch.testing.assert_close(x.grad, expected)


def test_unsupported_payload_stays_opaque_and_explain_names_it():
    x = torch.randn(4)
    explanation = looped.explain(x)
    assert "unsupported construct" in explanation.torch_compile and "`for _ in range(2)" in explanation.torch_compile
    assert "compile" in str(explanation)
    assert "traced as its torch expression" in silu.explain(x).torch_compile
    f = torch.compile(lambda x: looped(x) + 1, backend="eager")
    torch.testing.assert_close(f(x), x * x * x + 1)


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT"), (0, "DEFAULT")])
@triton.jit
def scaled_and_truncated(x):
    return x * 2.5, (x * 2).to(tl.int32)


def test_an_output_typed_by_the_payload_runs_opaque_under_compile():
    """A given int32 output of a float promotion (FlagGems' frexp): the kernel stores the payload's
    int32 value, which the expression's cast check cannot see, so the call keeps the kernel."""
    x = torch.tensor([1.0, 2.7, -3.3])
    given = lambda: (torch.empty(3), torch.full((3,), 77, dtype=torch.int32))  # noqa: E731
    expected = scaled_and_truncated(x, out0=given()[0], out1=given()[1])
    out0, out1 = given()
    torch.compile(lambda x: scaled_and_truncated(x, out0=out0, out1=out1), backend="eager")(x)
    torch.testing.assert_close((out0, out1), expected)


def test_inductor_fuses_the_function_and_the_op_with_their_neighbours():
    """One C++ kernel for both tritonwise calls and the arithmetic around them, one for the
    backward, and no call left to our op or its backward op (Inductor decomposed both into
    torch expressions). Inductor's caches are off: their keys see the op, not its decomposition."""
    import torch._functorch.config
    import torch._inductor.config
    from torch._inductor.utils import run_and_get_code

    x = torch.randn(64, requires_grad=True)
    (silu(x) * 2 + SILU_OP(x)).sum().backward()
    expected, x.grad = x.grad, None
    f = torch.compile(lambda x: (silu(x) * 2 + SILU_OP(x)).sum(), fullgraph=True)
    with torch._inductor.config.patch(fx_graph_cache=False), torch._functorch.config.patch(enable_autograd_cache=False):
        _, codes = run_and_get_code(lambda: f(x).backward())
    torch.testing.assert_close(x.grad, expected)
    code = "\n".join(codes)
    kernels = re.findall(r"^(\w+) = async_compile\.", code, flags=re.MULTILINE)
    assert len(kernels) == 2, code  # the forward's and the backward's
    assert "tritonwise_compile_test" not in code


def test_opcheck_passes_for_an_op_with_a_torch_expression():
    torch.library.opcheck(SILU_OP, (torch.randn(3, 4),))


def test_the_c_call_method_is_traced_too():
    """On GPU the hit path replaces __call__ with a C method (runtime/call.h); dynamo traces
    its polyfill (tracing/hook.trace_c_calls). Installed here by hand on CPU, then restored."""
    got, expected, counter, installed = _compiled_with_the_c_call_installed()
    assert not callable(getattr(installed, "__code__", None))  # the C method
    torch.testing.assert_close(got, expected)
    assert counter.frame_count == 1 and all(opaque_calls(g) == [] for g in counter.graphs)


def test_a_dynamo_without_method_polyfills_gets_the_python_call_back(monkeypatch):
    """torch before 2.13 cannot trace the C method even with a polyfill: once dynamo is loaded,
    the class gets its Python __call__ back, which dynamo traces (and which still asks hit())."""
    import tritonwise.tracing as tracing
    from tritonwise.function import PointwiseDynamicFunction

    monkeypatch.setattr(tracing, "polyfills_methods", lambda: False)
    got, expected, counter, installed = _compiled_with_the_c_call_installed()
    assert installed is PointwiseDynamicFunction.__dict__["__call__"]  # the Python one, given back
    torch.testing.assert_close(got, expected)
    assert counter.frame_count == 1 and all(opaque_calls(g) == [] for g in counter.graphs)


def _compiled_with_the_c_call_installed():
    """`silu(x) * 2 + 1` compiled after the hit path installs its C __call__ as it does on the GPU
    (its listeners run); the class's __call__ is given back after. (result, torch's result, the
    compile counter, the __call__ the class had while compiling)."""
    from tritonwise.function import PointwiseDynamicFunction
    from tritonwise.runtime import hit_path, native

    x = torch.randn(6)
    expected = silu(x) * 2 + 1
    python_call = PointwiseDynamicFunction.__dict__["__call__"]
    try:
        hit_path._install(native.launch_module(), PointwiseDynamicFunction, PointwiseDynamicFunction._call_missed)
        installed = PointwiseDynamicFunction.__dict__["__call__"]
        counter = torch._dynamo.testing.CompileCounterWithBackend("eager")
        got = torch.compile(lambda x: silu(x) * 2 + 1, fullgraph=True, backend=counter)(x)
    finally:
        PointwiseDynamicFunction.__call__ = python_call
    return got, expected, counter, installed
