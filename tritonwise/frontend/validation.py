"""Validating a call's arguments before planning: kinds, scalars, devices, given outputs."""

from __future__ import annotations

import sys
from numbers import Number
from typing import Optional, Sequence

import torch

from ..strided_buffer import is_tensor_like

Tensor = torch.Tensor

SCALAR_KINDS = (bool, int, float)


def python_scalars(args: tuple) -> tuple:
    """`args` with NumPy scalars replaced by what torch's argument parser reads them as (`np.bool_`
    as float); `args` itself when nothing is replaced, so the router does not re-enter forever."""
    if not any(type(a).__module__ == "numpy" for a in args):
        return args
    import numpy as np

    converted = tuple(_python_scalar(a) if isinstance(a, np.generic) else a for a in args)
    return args if all(c is a for c, a in zip(converted, args)) else converted


def _python_scalar(a):
    """The python scalar torch's argument parser reads the NumPy scalar `a` as."""
    import numpy as np

    if isinstance(a, np.integer):
        return int(a)
    if isinstance(a, np.complexfloating):
        return complex(a)
    if isinstance(a, (np.floating, np.bool_)):
        return float(a)
    return a  # np.str_, np.datetime64, ...: check_kinds names it


def output_keywords(outs: Sequence) -> dict:
    """The `out0=`, `out1=`, ... keywords that pass the given outputs on to another call."""
    return {f"out{k}": o for k, o in enumerate(outs) if o is not None}


def check_kinds(name: str, schema, args: Sequence) -> None:
    for i, arg in enumerate(args):
        if schema.is_tensor(i):
            if not is_tensor_like(arg):
                raise TypeError(
                    f"{name}: argument {i} must be a Tensor or StridedBuffer, got {type_name(arg)}"
                    f"{_tensor_hint(schema, i, arg)}"
                )
        elif is_tensor_like(arg) or not isinstance(arg, Number):
            raise TypeError(
                f"{name}: argument {i} must be a python scalar (bool, int, float), got {type_name(arg)}"
                f"{_scalar_hint(i, arg)}"
            )
        elif type(arg) is int and not -(2**63) <= arg < 2**64:
            raise OverflowError(
                f"{name}: argument {i} = {arg} is out of range: a python int argument must fit in int64 or "
                "uint64 ([-2**63, 2**64)), as in torch"
            )
        if isinstance(arg, complex) or (is_tensor_like(arg) and arg.dtype.is_complex):
            kind = arg.dtype if is_tensor_like(arg) else "a python complex"
            raise TypeError(f"{name}: argument {i} is complex ({kind}); {needs_register_complex(name)}")
        if not schema.is_tensor(i) and type(arg) not in SCALAR_KINDS:  # complex raised above
            raise TypeError(f"{name}: argument {i} must be a python bool, int or float, got {type_name(arg)}")


def type_name(x) -> str:
    """`float`, `Tensor`, `NoneType` for builtins and torch's types, module-qualified otherwise (`numpy.ndarray`)."""
    cls = type(x)
    module = cls.__module__.split(".")[0]
    return cls.__name__ if module in ("builtins", "torch", "tritonwise") else f"{module}.{cls.__qualname__}"


def _tensor_hint(schema, i: int, arg) -> str:
    """How to fix a non-tensor where the schema declares a tensor."""
    if type(arg).__module__ == "numpy":
        return " (torch does not read NumPy arrays as tensors either: pass torch.from_numpy(array))"
    if isinstance(arg, (list, tuple)):
        return " (torch does not convert a list or tuple either: pass torch.tensor(values))"
    if not isinstance(arg, Number):
        return ""
    flags = [schema.is_tensor(j) and j != i for j in range(schema.num_inputs())]
    return (
        f"; every input is a tensor unless declared otherwise: to take a python scalar at position {i}, "
        f"declare is_tensor={flags} (or its python type at position {i} of dtypes=[...], "
        f"e.g. {type(arg).__name__})"
    )


def _scalar_hint(i: int, arg) -> str:
    """How to fix a non-scalar where the schema declares a python scalar."""
    if is_tensor_like(arg):
        return f"; pass a python scalar (x.item() of a 0-d tensor x), or declare argument {i} a tensor in is_tensor"
    if type(arg).__module__ == "numpy":
        return " (torch reads NumPy scalars as python scalars, but not NumPy arrays: pass a python scalar)"
    return ""


def needs_register_complex(name: str) -> str:
    return (
        f"the payload computes on real values: call {name}.register_complex(ComplexMode.ELEMENTWISE) (add-like) "
        f"or {name}.register_complex(ComplexMode.CROSS, cross_kernel=...) (mul-like) to accept complex arguments"
    )


def has_dtensor(args: Sequence, outs: Sequence) -> bool:
    """Whether any operand is a DTensor (without importing torch.distributed.tensor: a DTensor's holder has)."""
    cls = getattr(sys.modules.get("torch.distributed.tensor"), "DTensor", None)
    return cls is not None and any(isinstance(a, cls) for a in (*args, *outs))


def launch_device(name: str, operands: Sequence) -> Optional[torch.device]:
    """The device of every (label, tensor) operand (0-d CPU tensors act as scalars); RuntimeError for two."""
    sized = [(label, t) for label, t in operands if not (t.device.type == "cpu" and t.ndim == 0)]
    first: dict = {}
    for label, t in sized or operands:
        first.setdefault(t.device, label)
    if len(first) > 1:
        (da, la), (db, lb) = sorted(first.items(), key=lambda item: str(item[0]))[:2]
        raise RuntimeError(
            f"{name}: expected all tensors to be on the same device, but found at least two devices, "
            f"{da} and {db}! ({la} is on {da}, {lb} on {db})"
        )
    return next(iter(first), None)


def check_output(name: str, k: int, out, shape: tuple, dtype: torch.dtype, device, complex_ok=False) -> None:
    """`dtype` is the result's; a given output must accept it under torch's casting rule."""
    if not is_tensor_like(out):
        raise TypeError(f"{name}: out{k} must be a Tensor or StridedBuffer, got {type(out).__name__}")
    if out.dtype.is_complex and not complex_ok:
        raise TypeError(f"{name}: out{k} is complex ({out.dtype}); {needs_register_complex(name)}")
    if tuple(out.shape) != tuple(shape):
        raise RuntimeError(f"{name}: out{k} has shape {tuple(out.shape)}, but the result has shape {tuple(shape)}")
    if device is not None and out.device != device:
        raise RuntimeError(f"{name}: out{k} is on {out.device}, but the operands are on {device}")
    if not torch.can_cast(dtype, out.dtype):
        raise RuntimeError(f"{name}: result type {dtype} can't be cast to the desired output type {out.dtype} (out{k})")
    if has_internal_overlap(out.shape, out.stride()):
        raise RuntimeError(
            f"{name}: out{k} (shape {tuple(out.shape)}, strides {tuple(out.stride())}) has internal overlap: "
            "more than one element is written to the same memory location"
        )


def output_layout_fits(layout: tuple, expected: tuple) -> bool:
    """Whether a given output's (shape, strides) is of shape `expected` with no internal overlap."""
    shape, strides = layout
    return tuple(shape) == tuple(expected) and not has_internal_overlap(shape, strides)


def has_internal_overlap(shape, strides) -> bool:
    """True when a dim of size > 1 has stride 0 (torch's definite overlap; other cases are allowed)."""
    return any(n > 1 and s == 0 for n, s in zip(shape, strides))


def result_subclass(name: str, operands: Sequence) -> Optional[type]:
    """The subclass torch's default __torch_function__ gives the results on `operands` (None: none);
    a TypeError where no operand subclass derives from all the others."""
    types = {type(a) for a in operands if isinstance(a, Tensor) and type(a) is not Tensor}
    types = {t for t in types if getattr(t.__torch_function__, "__func__", None) is _TENSOR_FUNCTION}
    if not types:
        return None
    for cls in types:
        if all(issubclass(cls, t) for t in types):
            return cls
    names = ", ".join(sorted(t.__qualname__ for t in types))
    raise TypeError(
        f"{name}: operands of unrelated tensor subclasses ({names}): torch gives such a call no result type"
    )


_TENSOR_FUNCTION = Tensor.__torch_function__.__func__  # a subclass that keeps it is torch's default


def plain(operands: Sequence) -> tuple:
    """`operands` with every tensor subclass instance viewed as a plain tensor (torch's as_subclass)."""
    return tuple(a.as_subclass(Tensor) if isinstance(a, Tensor) and type(a) is not Tensor else a for a in operands)


def given_or(result, outs: Sequence, make=lambda r: r):
    """`result` with each given output (`outs`) returned as the object given, the others as `make(r)`."""
    results = result if isinstance(result, tuple) else (result,)
    given = list(outs) + [None] * (len(results) - len(outs))
    merged = tuple(o if o is not None else make(r) for r, o in zip(results, given))
    return merged if isinstance(result, tuple) else merged[0]
