"""libdevice's integer and bit-level functions over NumPy arrays, by symbol (CUDA semantics:
products and sums wrap at 32 bits, counts of 0 are the width, bit casts keep every bit)."""

from __future__ import annotations

import numpy as np


def _unsigned(x, bits: int) -> np.ndarray:
    """The bits of an integer array as uint64 (two's complement)."""
    x = np.asarray(x)
    return x.view(f"uint{x.dtype.itemsize * 8}").astype(np.uint64) & np.uint64((1 << bits) - 1)


def _clz(bits: int):
    def count(x):
        value = _unsigned(x, bits)
        result = np.zeros(value.shape, dtype=np.int32)
        shift = bits // 2
        while shift:
            empty = (value >> np.uint64(bits - shift)) == 0
            result += np.where(empty, shift, 0).astype(np.int32)
            value = np.where(empty, (value << np.uint64(shift)) & np.uint64((1 << bits) - 1), value)
            shift //= 2
        return np.where(_unsigned(x, bits) == 0, bits, result)

    return count


def _bit_count(value: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (np.bitwise_count where NumPy has it, 2.0 and later)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(value)
    return sum(((value >> np.uint64(i)) & np.uint64(1)) for i in range(64))


def _popc(bits: int):
    return lambda x: _bit_count(_unsigned(x, bits)).astype(np.int32)


def _brev(bits: int):
    def reverse(x):
        value, result = _unsigned(x, bits), np.zeros(np.shape(x), dtype=np.uint64)
        for position in range(bits):
            bit = (value >> np.uint64(position)) & np.uint64(1)
            result |= bit << np.uint64(bits - 1 - position)
        return result.astype(f"uint{bits}").view(f"int{bits}")

    return reverse


def _ffs(bits: int):
    """1 + the index of the lowest set bit, 0 for 0."""

    def find(x):
        value = _unsigned(x, bits)
        lowest = value & ((~value + np.uint64(1)) & np.uint64((1 << bits) - 1))
        return np.where(value == 0, 0, _bit_count(lowest - np.uint64(1)) + 1).astype(np.int32)

    return find


def _high_product(signed: bool):
    """The high 64 bits of a 128-bit product (Python integers, element by element)."""

    def high(a, b):
        def one(x, y):
            product = (int(x) * int(y)) >> 64
            return product if signed else product & ((1 << 64) - 1)

        a, b = np.broadcast_arrays(a, b)
        flat = [one(x, y) for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())]
        return np.array(flat, dtype=np.int64 if signed else np.uint64).reshape(a.shape)

    return high


def _wrap32(values) -> np.ndarray:
    return (np.asarray(values).astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)


def _sign_extend24(x) -> np.ndarray:
    return ((np.asarray(x).astype(np.int64) & 0xFFFFFF) ^ 0x800000) - 0x800000


def _low24(x) -> np.ndarray:
    return np.asarray(x).astype(np.int64) & 0xFFFFFF


def _byte_perm(x, y, selector):
    """Byte n of the result is byte (selector >> 4n) & 7 of the 8 bytes y:x."""
    source = (_unsigned(y, 32) << np.uint64(32)) | _unsigned(x, 32)
    selector = _unsigned(selector, 32)
    result = np.zeros(np.broadcast_shapes(np.shape(x), np.shape(y), np.shape(selector)), dtype=np.uint64)
    for n in range(4):
        pick = (selector >> np.uint64(4 * n)) & np.uint64(7)
        result |= ((source >> (pick * np.uint64(8))) & np.uint64(0xFF)) << np.uint64(8 * n)
    return result.astype(np.uint32)


def _bits_as(dtype):
    return lambda x: np.ascontiguousarray(x).view(dtype)


def _double_bits(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)


def _hilo(hi, lo):
    bits = (_unsigned(hi, 32) << np.uint64(32)) | _unsigned(lo, 32)
    return np.ascontiguousarray(bits).view(np.float64)


def symbols() -> dict:
    counts = {"clz": _clz, "popc": _popc, "brev": _brev, "ffs": _ffs}  # __nv_<name> on 32 bits, __nv_<name>ll on 64
    return {
        **{f"__nv_{name}": make(32) for name, make in counts.items()},
        **{f"__nv_{name}ll": make(64) for name, make in counts.items()},
        "__nv_abs": np.abs,
        "__nv_llabs": np.abs,
        "__nv_mulhi": lambda a, b: (np.asarray(a, np.int64) * np.asarray(b, np.int64)) >> 32,
        "__nv_umulhi": lambda a, b: (np.asarray(a, np.uint64) * np.asarray(b, np.uint64)) >> np.uint64(32),
        "__nv_mul64hi": _high_product(signed=True),
        "__nv_umul64hi": _high_product(signed=False),
        "__nv_mul24": lambda a, b: _wrap32(_sign_extend24(a) * _sign_extend24(b)),
        "__nv_umul24": lambda a, b: _wrap32(_low24(a) * _low24(b)),
        "__nv_hadd": lambda a, b: (np.asarray(a, np.int64) + b) >> 1,
        "__nv_uhadd": lambda a, b: (np.asarray(a, np.uint64) + b) >> np.uint64(1),
        "__nv_rhadd": lambda a, b: (np.asarray(a, np.int64) + b + 1) >> 1,
        "__nv_urhadd": lambda a, b: (np.asarray(a, np.uint64) + b + np.uint64(1)) >> np.uint64(1),
        **dict.fromkeys(("__nv_sad", "__nv_usad"), lambda a, b, c: _wrap32(np.abs(np.asarray(a, np.int64) - b) + c)),
        "__nv_byte_perm": _byte_perm,
        "__nv_float_as_int": _bits_as(np.int32),
        "__nv_float_as_uint": _bits_as(np.uint32),
        "__nv_int_as_float": _bits_as(np.float32),
        "__nv_uint_as_float": _bits_as(np.float32),
        "__nv_double_as_longlong": _bits_as(np.int64),
        "__nv_longlong_as_double": _bits_as(np.float64),
        "__nv_double2loint": lambda x: (_double_bits(x) & np.uint64(0xFFFFFFFF)).astype(np.uint32),
        "__nv_double2hiint": lambda x: (_double_bits(x) >> np.uint64(32)).astype(np.uint32),
        "__nv_hiloint2double": _hilo,
    }
