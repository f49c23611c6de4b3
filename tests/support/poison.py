"""Poisoned outputs: any element a kernel forgets to write fails a comparison with torch."""

import torch


def poison_value(dtype: torch.dtype, fill=None):
    """NaN for floats; for ints the dtype's minimum; True for bools (unless `fill` says otherwise)."""
    if fill is not None:
        return fill
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).min


def poisoned_like(t: torch.Tensor, fill=None) -> torch.Tensor:
    """`torch.full_like(t, poison)` (same layout): any element a kernel forgets to write fails a comparison."""
    return torch.full_like(t, poison_value(t.dtype, fill))
