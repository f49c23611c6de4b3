"""`fn.as_torch_op`: a torch.library custom op with a fake implementation from the same analysis."""

import pytest
import torch
import triton
from torch._subclasses.fake_tensor import FakeTensorMode

from tritonwise import pointwise_dynamic


@pointwise_dynamic(is_tensor=[True, True, False], dtypes=[None, None, float], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add_alpha(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(promotion_methods=[((0, 1), "DEFAULT"), ((0, 1), "ALWAYS_BOOL")])
@triton.jit
def diff_and_equal(x, y):
    return x - y, x == y


ADD = add_alpha.as_torch_op("tritonwise_test::add_alpha")
DIFF_EQ = diff_and_equal.as_torch_op("tritonwise_test::diff_and_equal")


def test_op_runs_like_the_function():
    x, y = torch.randn(6, 5), torch.randn(5)
    torch.testing.assert_close(ADD(x, y, 0.5), x + y * 0.5)
    d, e = DIFF_EQ(x, x[0])
    torch.testing.assert_close(d, x - x[0])
    assert e.dtype == torch.bool and torch.equal(e, x == x[0])


def test_schema_types_follow_the_function_schema():
    schema = str(torch.ops.tritonwise_test.add_alpha.default._schema)
    assert "Tensor in0, Tensor in1, float in2" in schema and schema.endswith("-> Tensor")
    assert str(torch.ops.tritonwise_test.diff_and_equal.default._schema).endswith("-> (Tensor, Tensor)")


@pytest.mark.parametrize(
    "make",
    [
        lambda: (torch.empty(4, 5).t(), torch.empty(5, 1)),  # transposed operand: transposed result
        lambda: (torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last), torch.empty(5)),
        lambda: (torch.empty(3, 1, dtype=torch.float16), torch.empty(7, dtype=torch.int32)),
    ],
)
def test_fake_outputs_match_the_real_ones(make):
    real_args = make()
    real = ADD(*(a.normal_() if a.is_floating_point() else a.zero_() for a in real_args), 2.0)
    with FakeTensorMode() as mode:
        fake_args = [mode.from_tensor(a) for a in real_args]
        fake = ADD(*fake_args, 2.0)
    assert fake.shape == real.shape and fake.dtype == real.dtype and fake.stride() == real.stride()


def test_compiles_fullgraph_without_breaks():
    f = torch.compile(lambda a, b: ADD(a, b, 2.0).sin(), fullgraph=True, backend="eager")
    x, y = torch.randn(8, 3), torch.randn(3)
    torch.testing.assert_close(f(x, y), (x + 2.0 * y).sin())


def test_bad_qualname_is_rejected():
    with pytest.raises(ValueError, match="namespace::name"):
        add_alpha.as_torch_op("no_namespace")
