"""The few CUDA driver calls tritonwise makes itself, through ctypes (cuLaunchKernel's address,
parameter sizes, errors, primary contexts, loading a stored binary); launches go through
launch.c, except a process's first ones while launch.c builds (launcher.driver_launcher).
Loaded on first use, so importing tritonwise never needs libcuda.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Optional

CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_INVALID_CONTEXT = 201


class CudaError(RuntimeError):
    pass


@lru_cache(maxsize=None)
def driver() -> Optional[ctypes.CDLL]:
    """libcuda, or None where it cannot be loaded (CPU machines)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuLaunchKernel  # noqa: B018 (raises AttributeError when absent)
    except (OSError, AttributeError):
        return None
    return lib


def error_text(code: int) -> str:
    text = ctypes.c_char_p()
    driver().cuGetErrorString(code, ctypes.byref(text))
    return f"CUDA error {code}: {text.value.decode() if text.value else 'unknown'}"


@lru_cache(maxsize=None)
def param_sizes(function: int) -> Optional[tuple]:
    """Byte size of each kernel parameter of `function` (CUDA 12.4+), or None when this driver cannot tell."""
    lib = driver()
    query = getattr(lib, "cuFuncGetParamInfo", None)
    if query is None:
        return None
    sizes, offset, size = [], ctypes.c_size_t(), ctypes.c_size_t()
    handle = ctypes.c_void_p(function)
    while True:
        code = query(handle, ctypes.c_size_t(len(sizes)), ctypes.byref(offset), ctypes.byref(size))
        if code == CUDA_ERROR_INVALID_VALUE:  # past the last parameter
            return tuple(sizes)
        if code != 0:
            return None
        sizes.append(size.value)


def load_function(binary: bytes, name: str, device_index: int) -> int:
    """The CUfunction `name` of the cubin `binary`, loaded for the process into `device_index`'s primary context."""
    lib, module, function = driver(), ctypes.c_void_p(), ctypes.c_void_p()
    make_primary_context_current(device_index)
    image = ctypes.create_string_buffer(binary, len(binary))
    _check(lib.cuModuleLoadData(ctypes.byref(module), image), device_index, f"loading the binary of {name}")
    code = lib.cuModuleGetFunction(ctypes.byref(function), module, name.encode())
    _check(code, device_index, f"finding {name} in its binary")
    return function.value


def make_primary_context_current(device_index: int) -> None:
    """What a thread that never touched CUDA needs before its first launch."""
    lib, device, context = driver(), ctypes.c_int(), ctypes.c_void_p()
    _check(lib.cuDeviceGet(ctypes.byref(device), device_index), device_index)
    _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), device_index)
    _check(lib.cuCtxSetCurrent(context), device_index)


def _check(code: int, device_index: int, doing: str = "making the context current") -> None:
    if code != 0:
        raise CudaError(f"device {device_index}: {doing}: {error_text(code)}")
