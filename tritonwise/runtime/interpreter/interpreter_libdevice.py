"""libdevice for Triton's interpreter: the CUDA backend's symbols (`__nv_tanhf`, ...) computed with
NumPy, torch's special functions and mpmath, implementing the builder's create_extern_elementwise.
float32 arguments compute in float64 and round once, so correctly rounded operations agree with the
GPU bit for bit and transcendentals within its few ulp.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re

import numpy as np

from . import libdevice_bits as bits
from . import libdevice_exact as exact
from . import libdevice_functions as functions

STUB_MODULE = "triton.language.extra.libdevice"  # backend-neutral stubs payloads import
BACKEND_MODULE = "triton.language.extra.cuda.libdevice"  # the CUDA builtins the stubs resolve to


@functools.cache
def _table() -> dict:
    return {**functions.symbols(), **bits.symbols(), **exact.symbols()}


def extern_elementwise(self, lib_name, lib_path, symbol, args, ret_type, is_pure):
    """InterpreterBuilder.create_extern_elementwise: one libdevice symbol over NumPy arrays (float
    warnings are off: interpret.interpreting() runs it)."""
    from triton.runtime.interpreter import TensorHandle, _get_np_dtype

    implementation = _table().get(symbol)
    if implementation is None:
        raise NotImplementedError(
            f"libdevice function {_python_name(symbol)} ({symbol}) is not implemented for CPU tensors "
            "(Triton's interpreter); run it on a GPU or use a triton.language equivalent"
        )
    arrays = [a.data for a in args]
    result = np.asarray(implementation(*arrays))
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    result = np.broadcast_to(result, shape).astype(_get_np_dtype(ret_type))
    return TensorHandle(result, ret_type.scalar)


def unavailable(name: str):
    """A stand-in for a triton.language.extra.libdevice name that the CUDA backend lacks."""

    def call(*args, **kwargs):
        raise NotImplementedError(
            f"libdevice function {name} has no CUDA libdevice implementation, so none for CPU tensors either"
        )

    call.__name__ = name
    return call


def _python_name(symbol: str) -> str:
    """The triton.language.extra.libdevice function that dispatches to `symbol` (error messages)."""
    source = inspect.getsource(importlib.import_module(BACKEND_MODULE))
    position = source.find(f'"{symbol}"')
    names = re.findall(r"^def (\w+)\(", source[: max(position, 0)], flags=re.M)
    return f"libdevice.{names[-1]}" if position >= 0 and names else symbol

