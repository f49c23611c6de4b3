"""Shared plumbing of the ops: payloads called with any mix of tensors and python scalars, one
function made per pattern a call brings (`Pointwise`).
"""

from __future__ import annotations

from numbers import Number

import torch

from tritonwise import StridedBuffer, pointwise_dynamic

BOOL, INTEGRAL, FLOATING, COMPLEX = range(4)


def is_tensor_like(arg) -> bool:
    return isinstance(arg, (torch.Tensor, StridedBuffer))


def category(arg) -> int:
    """BOOL, INTEGRAL, FLOATING or COMPLEX; a promoted result has its operands' highest."""
    if is_tensor_like(arg):
        dtype = arg.dtype
        if dtype == torch.bool:
            return BOOL
        return COMPLEX if dtype.is_complex else FLOATING if dtype.is_floating_point else INTEGRAL
    if isinstance(arg, bool):
        return BOOL
    return {int: INTEGRAL, float: FLOATING, complex: COMPLEX}.get(type(arg), FLOATING)


def result_category(*args) -> int:
    return max(category(a) for a in args)


def require_tensor(op: str, name: str, arg) -> None:
    """torch's TypeError for a non-tensor in a position that takes only tensors."""
    if not is_tensor_like(arg):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(arg).__name__}")


def require_number(op: str, name: str, arg) -> None:
    if is_tensor_like(arg) or not isinstance(arg, Number):
        raise TypeError(f"{op}(): argument '{name}' must be Number, not {type(arg).__name__}")


class Pointwise:
    """A payload with its promotion methods, callable with tensors or scalars anywhere (outputs as `out0=`, ...)."""

    def __init__(self, payload, promotion_methods: list):
        self._payload = payload
        self._methods = promotion_methods
        self._functions: dict = {}
        self.__name__ = payload.fn.__name__

    def __call__(self, *args, **outs):
        fn = self.function(tuple(is_tensor_like(a) for a in args))
        return fn(*args, **{k: v for k, v in outs.items() if v is not None})

    def function(self, kinds: tuple):
        """The pointwise function for arguments that are tensors (True) or python scalars (False), made once."""
        fn = self._functions.get(kinds)
        if fn is None:
            if not any(kinds):
                raise TypeError(f"{self.__name__}: expected at least one tensor argument, got only python scalars")
            fn = pointwise_dynamic(self._payload, is_tensor=list(kinds), promotion_methods=self._methods)
            fn = self._functions.setdefault(kinds, fn)  # a racing first call keeps one function
        return fn
