"""Outputs of different computation kinds in one payload: each output is computed by a variant
of the payload keeping only the statements it needs (frontend/variants.py), so integer inputs
with a DEFAULT and an INT_TO_FLOAT output compile (`tl.sin` of an int does not) and match
torch for every integer and bool dtype."""

import pytest
import torch
import triton
import triton.language as tl

from conftest import poisoned_like
from tritonwise import pointwise_dynamic

UNSIGNED = [torch.uint8, torch.uint16, torch.uint32, torch.uint64]
DTYPES = [torch.bool, *UNSIGNED, torch.int8, torch.int16, torch.int32, torch.int64]


@triton.jit
def _square_plus(a, b):
    return a * a + b


def _two():
    @pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT"), (0, "INT_TO_FLOAT")])
    @triton.jit
    def mul_and_sin(x, y):
        return x * y, tl.sin(x)

    return mul_and_sin, lambda x, y: (x * y, torch.sin(x))


def _three_with_helpers():
    @pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT"), (0, "INT_TO_FLOAT"), (0, 1, "ALWAYS_BOOL")])
    @triton.jit
    def mixed(x, y):
        s = tl.sin(x)
        p = x * y
        e = tl.exp(s * 0.5)
        return p, _square_plus(e, s), x == y

    return mixed, lambda x, y: (x * y, torch.exp(torch.sin(x) * 0.5) ** 2 + torch.sin(x), x == y)


def _values(dtype, shape, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    low = 0 if dtype in UNSIGNED else -6
    return torch.randint(low, 7, shape, generator=g).to(dtype)


@pytest.mark.parametrize("make", [_two, _three_with_helpers], ids=["x*y, sin(x)", "three outputs, helpers"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_mixed_kinds_match_torch_for_integer_and_bool_inputs(make, dtype):
    f, reference = make()
    for shape in [(33,), (4, 5)]:
        x, y = _values(dtype, shape, 1), _values(dtype, shape, 2)
        expected = reference(x, y)
        got = f(x, y)
        outs = [poisoned_like(e) for e in expected]
        given = f(x, y, **{f"out{k}": o for k, o in enumerate(outs)})
        for g, o, e in zip(got, given, expected):
            assert g.dtype == e.dtype and g.shape == e.shape
            torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(o, e, rtol=1e-5, atol=1e-5)


def test_each_call_runs_the_variant_of_its_outputs():
    f, _ = _two()
    x = torch.arange(5, dtype=torch.int32)
    source = open(f.generate(x, x)).read()
    assert "out0 = mul_and_sin_out0(in0, in1)" in source
    assert "out1 = mul_and_sin_out1(in0_for_out1, in1)" in source
    assert "def mul_and_sin_out1(x, y):\n        t2 = tl.sin(x)\n        return t2" in source


def test_a_payload_that_is_not_straight_line_code_still_runs_whole_per_call():
    @pointwise_dynamic(promotion_methods=[(0, "DEFAULT"), (0, "INT_TO_FLOAT")])
    @triton.jit
    def branchy(x):
        if x.dtype == tl.float32:
            y = x * 2
        else:
            y = x * 2
        return y, y.to(tl.float32) + 0.5

    x = torch.arange(6, dtype=torch.int32)
    a, b = branchy(x)
    assert torch.equal(a, x * 2) and torch.equal(b, x * 2 + 0.5)
    assert "_out0(" not in open(branchy.generate(x)).read()
