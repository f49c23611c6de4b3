"""`as_torch_op` ops are differentiable: register_autograd, opcheck, torch.compile with dynamic shapes."""

import pytest
import torch
import torch._dynamo.testing
import triton
import triton.language as tl

from tritonwise import pointwise_dynamic


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, 2, "DEFAULT")])
@triton.jit
def gated(x, y, alpha):
    return x * tl.sigmoid(y) * alpha


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT"), (0, 1, "ALWAYS_BOOL")])
@triton.jit
def product_and_order(x, y):
    return tl.exp(x) * y, x > y


@triton.jit
def squared_error(x, y):
    d = x - y
    return d * d


GATED = gated.as_torch_op("tritonwise_autograd_test::gated")
PRODUCT = product_and_order.as_torch_op("tritonwise_autograd_test::product_and_order")
SSE = pointwise_dynamic(squared_error, promotion_methods=[(0, 1, "DEFAULT")], reductions=["sum"]).as_torch_op(
    "tritonwise_autograd_test::sse"
)
WORST = pointwise_dynamic(squared_error, promotion_methods=[(0, 1, "DEFAULT")], reductions=["max"]).as_torch_op(
    "tritonwise_autograd_test::worst"
)


def _inputs(dtype=torch.float64):
    return torch.randn(4, 3, dtype=dtype, requires_grad=True), torch.randn(3, dtype=dtype, requires_grad=True)


CASES = {
    "gated": (GATED, lambda x, y: (x, y, 1.5)),
    "two_outputs": (PRODUCT, lambda x, y: (x, y)),
    "sum": (SSE, lambda x, y: (x, y)),
    "max": (WORST, lambda x, y: (x, y)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_opcheck_with_inputs_requiring_grad(case):
    op, args = CASES[case]
    result = torch.library.opcheck(op, args(*_inputs()))
    assert all(v == "SUCCESS" for v in result.values()), result


@pytest.mark.parametrize("case", ["gated", "sum", "max"])
def test_gradcheck_through_the_op(case):
    op, args = CASES[case]
    x, y = _inputs()
    assert torch.autograd.gradcheck(lambda a, b: op(*args(a, b)), (x, y), fast_mode=True)


def test_bool_output_of_the_op_has_no_gradient():
    x, y = _inputs()
    product, order = PRODUCT(x, y)
    assert order.dtype == torch.bool and not order.requires_grad
    product.sum().backward()
    torch.testing.assert_close(x.grad, (torch.exp(x) * y).detach())


def test_compiled_forward_and_backward_do_not_recompile_per_shape():
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    step = torch.compile(lambda x, y: GATED(x, y, 1.5).sin().sum(), fullgraph=True, dynamic=True, backend=counter)
    for rows in (5, 7, 11):
        x = torch.randn(rows, 3, requires_grad=True)
        y = torch.randn(3, requires_grad=True)
        step(x, y).backward()
        xt, yt = x.detach().requires_grad_(), y.detach().requires_grad_()
        (xt * torch.sigmoid(yt) * 1.5).sin().sum().backward()
        torch.testing.assert_close(x.grad, xt.grad)
        torch.testing.assert_close(y.grad, yt.grad)
    assert counter.frame_count == 1


def test_double_backward_through_the_op_is_a_clear_error():
    x, y = _inputs()
    (gx,) = torch.autograd.grad(GATED(x, y, 1.5).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        gx.sum().backward()
