"""Preparing a call never dispatches to the aten ops FlagGems overrides with functions built on
tritonwise (`neg`, `resolve_neg`, `resolve_conj`, `fill_`, `zero_`, `clone`): here they raise for
CPU tensors while a call runs, and calls on negative and conjugate views still compute what torch
computes. (`copy_` is not among them: Triton's interpreter, which runs CPU kernels, copies its
arguments back with it; on the GPU nothing does.)"""

import pytest
import torch
import triton

from tritonwise import ComplexMode, pointwise_dynamic

OVERRIDDEN = ["neg", "resolve_neg", "resolve_conj", "fill_.Scalar", "zero_", "clone", "conj_physical"]


class Reentered(AssertionError):
    pass


def _raising(name: str):
    def kernel(*args, **kwargs):
        raise Reentered(f"aten::{name} was called while preparing a tritonwise call")

    return kernel


def run_with_aten_ops_raising(call):
    """`call()` while the OVERRIDDEN aten ops raise for CPU tensors (the library is scoped to it)."""
    lib = torch.library.Library("aten", "IMPL")
    try:
        for name in OVERRIDDEN:
            lib.impl(name, _raising(name), "CPU")
        return call()
    finally:
        lib._destroy()


def _functions():
    @pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
    @triton.jit
    def neg(x):
        return -x

    @pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
    @triton.jit
    def add(x, y):
        return x + y

    @pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
    @triton.jit
    def mul(x, y):
        return x * y

    @pointwise_dynamic(num_outputs=2, promotion_methods=[(0, 1, 2, 3, "DEFAULT"), (0, 1, 2, 3, "DEFAULT")])
    @triton.jit
    def mul_cross(ar, ai, br, bi):
        return ar * br - ai * bi, ar * bi + ai * br

    add.register_complex(ComplexMode.ELEMENTWISE)
    mul.register_complex(ComplexMode.CROSS, cross_kernel=mul_cross)
    return neg, add, mul


def _cases():
    z = torch.randn(3, 4, dtype=torch.complex64)
    w = torch.randn(4, 3, dtype=torch.complex64).t()
    neg, add, mul = _functions()
    poisoned = torch.full((3, 4), 7 + 7j, dtype=torch.complex64)
    return {
        "neg of z.conj().imag": (lambda: neg(z.conj().imag), lambda: -(z.imag.clone()) * -1),
        "neg of a strided negative view": (lambda: neg(w.conj().imag), lambda: w.imag.clone()),
        "add of negative views": (lambda: add(z.conj().imag, w.conj().imag), lambda: -(z.imag + w.imag)),
        "add of conjugate views": (lambda: add(z.conj(), w.conj()), lambda: (z + w).conj()),
        "add of a negative complex view": (lambda: add(torch._neg_view(z), w), lambda: w - z),
        "add of a conjugated negative view": (lambda: add(torch._neg_view(z).conj(), w), lambda: w - z.conj()),
        "mul of conjugate views": (lambda: mul(z.conj(), w), lambda: z.conj() * w),
        "real operands into a complex output": (
            lambda: add(z.real, w.real, out0=poisoned),
            lambda: torch.complex(z.real + w.real, torch.zeros(3, 4)),
        ),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_calls_on_views_with_bits_dispatch_to_no_overridden_aten_op(case):
    call, reference = _cases()[case]
    expected = reference().resolve_conj().resolve_neg()  # torch's value, before the overrides
    got = run_with_aten_ops_raising(call)
    assert not got.is_neg() and not got.is_conj()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected)


def test_the_overrides_do_intercept_the_ops():
    with pytest.raises(Reentered, match="aten::resolve_neg"):
        run_with_aten_ops_raising(lambda: torch.randn(3, dtype=torch.complex64).conj().imag.resolve_neg())


def test_a_negative_output_is_refused():
    neg, _, _ = _functions()
    with pytest.raises(RuntimeError, match=r"out0 is a negative view \(is_neg\(\)\)"):
        neg(torch.randn(3), out0=torch.randn(3, dtype=torch.complex64).conj().imag)


def test_flag_gems_resolve_neg_terminates():
    """FlagGems' resolve_neg(A) is `neg_func(A) if A.is_neg() else A`, registered as
    aten::resolve_neg: a call on a negative view must not call resolve_neg again."""
    neg, _, _ = _functions()
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("resolve_neg", lambda a: neg(a) if a.is_neg() else a, "CPU")
    try:
        out = torch.randn(3, dtype=torch.complex64).conj().imag.resolve_neg()
    finally:
        lib._destroy()
    assert not out.is_neg()
