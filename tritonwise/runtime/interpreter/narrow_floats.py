"""Float formats as Triton's interpreter stores them (bf16 bits in uint16, fp8 in uint8), decoded to
float32 exactly and rounded back once, to nearest even or toward zero, with the GPU's overflow rule:
IEEE formats overflow to inf (toward zero: the largest finite value); fp8 e4m3fn and e5m2 saturate
(`cvt.rn.satfinite`); NaN results are the canonical NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    name: str  # Triton's dtype name
    exponent_bits: int
    mantissa_bits: int
    storage: np.dtype  # the NumPy dtype of the interpreter's arrays for this format
    has_inf: bool  # False: the all-ones exponent holds finite values (e4m3fn), NaN only at all ones
    saturates: bool  # overflow (infinities included) rounds to the largest finite value

    @property
    def bias(self) -> int:
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def min_exponent(self) -> int:
        """The exponent of the smallest normal value."""
        return 1 - self.bias

    @cached_property
    def max_finite(self) -> float:
        top = (1 << self.exponent_bits) - 1
        if self.has_inf:
            top -= 1  # the all-ones exponent is inf/NaN
            fraction = 2.0 - 2.0**-self.mantissa_bits
        else:
            fraction = 2.0 - 2.0 ** (1 - self.mantissa_bits)  # all-ones mantissa there is NaN
        return fraction * 2.0 ** (top - self.bias)

    @property
    def width(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def emulated(self) -> bool:
        """True where NumPy has no such float type (the interpreter stores raw bits)."""
        return self.storage.kind == "u"

    def decode(self, data: np.ndarray) -> np.ndarray:
        """The values of stored data, as float32 (float64 for float64 data)."""
        if not self.emulated:
            return np.asarray(data)
        if self.width == 16:  # bf16: the top half of a float32
            return (np.asarray(data, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)
        return self._decode_table[np.asarray(data, dtype=np.uint8)]

    @cached_property
    def _decode_table(self) -> np.ndarray:
        """float32 value of every code of an 8-bit format."""
        bits = np.arange(256, dtype=np.uint64)
        m = self.mantissa_bits
        sign = np.where((bits >> (self.width - 1)) & 1, -1.0, 1.0)
        field = ((bits >> m) & ((1 << self.exponent_bits) - 1)).astype(np.int64)
        mantissa = (bits & ((1 << m) - 1)).astype(np.float64)
        normal = field > 0
        significand = np.where(normal, 1.0 + mantissa / 2**m, mantissa / 2**m)
        values = sign * np.ldexp(significand, np.where(normal, field, 1) - self.bias)
        all_ones = field == (1 << self.exponent_bits) - 1
        if self.has_inf:
            values = np.where(all_ones & (mantissa == 0), sign * np.inf, values)
            values = np.where(all_ones & (mantissa != 0), np.nan, values)
        else:
            values = np.where(all_ones & (mantissa == 2**m - 1), np.nan, values)
        return values.astype(np.float32)

    def encode(self, values, toward_zero: bool = False) -> np.ndarray:
        """Stored data for float values (any float dtype), rounded once."""
        x = np.asarray(values, dtype=np.float64)
        with np.errstate(all="ignore"):
            magnitude = self._round(np.abs(x), toward_zero)
            magnitude = self._overflow(magnitude, np.isinf(x), toward_zero)
            codes = self._magnitude_codes(magnitude)
        codes = np.where(np.signbit(x), codes | np.uint64(1 << (self.width - 1)), codes)
        nan = np.uint64((1 << (self.width - 1)) - 1)  # the canonical NaN: every bit but the sign
        codes = np.where(np.isnan(x), nan, codes).astype(f"uint{self.width}")
        return codes.view(self.storage) if not self.emulated else codes

    def _round(self, magnitude: np.ndarray, toward_zero: bool) -> np.ndarray:
        """Round |x| to this format's precision (range handled by _overflow): scaled by its
        power-of-two quantum, the significand becomes an integer, exactly in float64."""
        _, exponent = np.frexp(magnitude)
        exponent = np.maximum(exponent - 1, self.min_exponent)
        quantum = np.ldexp(1.0, exponent - self.mantissa_bits)
        steps = magnitude / quantum
        return (np.trunc(steps) if toward_zero else np.rint(steps)) * quantum

    def _overflow(self, magnitude: np.ndarray, was_inf: np.ndarray, toward_zero: bool) -> np.ndarray:
        over = magnitude > self.max_finite  # NaN compares False
        if self.saturates:
            return np.where(over, self.max_finite, magnitude)
        if toward_zero:
            return np.where(over & ~was_inf, self.max_finite, magnitude)
        return np.where(over, np.inf if self.has_inf else np.nan, magnitude)

    def _magnitude_codes(self, magnitude: np.ndarray) -> np.ndarray:
        """Codes (sign clear) of non-negative values that this format represents exactly."""
        m = self.mantissa_bits
        _, exponent = np.frexp(magnitude)
        exponent = np.maximum(exponent - 1, self.min_exponent)
        normal = magnitude >= 2.0**self.min_exponent
        field = np.where(normal, exponent + self.bias, 0)
        mantissa = magnitude / np.ldexp(1.0, exponent - m) - np.where(normal, 2.0**m, 0.0)
        finite = np.isfinite(magnitude)
        codes = (np.where(finite, field, 0).astype(np.uint64) << np.uint64(m)) | np.where(
            finite, mantissa, 0
        ).astype(np.uint64)
        infinity = np.uint64(((1 << self.exponent_bits) - 1) << m)
        return np.where(np.isinf(magnitude), infinity, codes)


FORMATS = {
    f.name: f
    for f in (
        FloatFormat("bf16", 8, 7, np.dtype(np.uint16), has_inf=True, saturates=False),
        FloatFormat("fp8e4nv", 4, 3, np.dtype(np.uint8), has_inf=False, saturates=True),
        FloatFormat("fp8e5", 5, 2, np.dtype(np.uint8), has_inf=True, saturates=True),
        FloatFormat("fp16", 5, 10, np.dtype(np.float16), has_inf=True, saturates=False),
        FloatFormat("fp32", 8, 23, np.dtype(np.float32), has_inf=True, saturates=False),
    )
}
