"""A copy's given output takes any dtype, converted on store as torch's `copy_` / `.to(dtype)`
convert (FlagGems' to_copy and copy_ rely on it); every other output keeps torch's out= rule
(torch.can_cast). docs/flaggems_semantics.md states the rule."""

import pytest
import torch
import triton

from conftest import poisoned_like
from tritonwise import pointwise_dynamic
from tritonwise.frontend.payload import passed_through

SOURCES = [torch.float16, torch.float32, torch.float64, torch.int8, torch.int32, torch.int64, torch.bool]
TARGETS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool, torch.float16, torch.float32]


def _copy():
    @pointwise_dynamic(is_tensor=[True], promotion_methods=[(0, "DEFAULT")])
    @triton.jit
    def copy(x):
        return x

    return copy


def _values(dtype: torch.dtype, unsigned_target: bool) -> torch.Tensor:
    """Finite values every target holds after truncation (NaN and out-of-range float -> int are
    implementation-defined in torch and in Triton alike); non-negative for unsigned targets."""
    if dtype == torch.bool:
        return torch.tensor([True, False, True, True, False, False, True])
    values = torch.tensor([1.75, -2.5, 3.99, -0.25, 100.5, 0.0, -0.0, 7.0, -127.0, 64.5])
    if unsigned_target:
        values = values.abs()
    if not dtype.is_floating_point:
        values = values.trunc()
    return values.to(dtype)


@pytest.mark.parametrize("target", TARGETS, ids=str)
@pytest.mark.parametrize("source", SOURCES, ids=str)
def test_a_copy_converts_to_a_given_output_of_any_dtype_as_torch_does(source, target):
    f = _copy()
    x = _values(source, target == torch.uint8)
    expected = x.to(target)
    for _ in range(2):  # the first call, then the cached plan
        out = poisoned_like(expected, fill=3)
        assert f(x, out0=out) is out
        assert torch.equal(out, expected), (out, expected)


def test_a_strided_copy_converts_too():
    f = _copy()
    x = torch.randn(6, 4).t() * 10
    out = torch.full((4, 6), -1, dtype=torch.int32)
    f(x, out0=out)
    assert torch.equal(out, x.to(torch.int32))


def test_outputs_that_compute_keep_torchs_out_rule():
    @pointwise_dynamic(promotion_methods=[(0, "DEFAULT"), (0, "DEFAULT")])
    @triton.jit
    def twice_and_copy(x):
        return x * 2, x

    x = torch.randn(5)
    with pytest.raises(RuntimeError, match=r"result type torch.float32 can't be cast to the desired output type"):
        twice_and_copy(x, out0=torch.empty(5, dtype=torch.int32))
    out1 = torch.empty(5, dtype=torch.int32)
    twice, copied = twice_and_copy(x * 10, out1=out1)
    assert copied is out1 and torch.equal(out1, (x * 10).to(torch.int32))
    torch.testing.assert_close(twice, x * 20)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def f(x):\n    return x\n", (0,)),
        ("def f(x, y):\n    '''doc'''\n    return x * 2, y\n", (None, 1)),
        ("def f(x, y):\n    return y, x\n", (1, 0)),
        ("def f(x):\n    x = x + 1\n    return x\n", ()),
        ("def f(x):\n    return tl.abs(x)\n", (None,)),
    ],
)
def test_passed_through_reads_the_single_return(source, expected):
    assert passed_through(source, ["x", "y"]) == expected
