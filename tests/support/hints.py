"""Compiler hints checked where kernels run in Triton's interpreter: a `tl.multiple_of` the
compiler trusts (and vectorizes by) must hold for every value it is stated of, or a GPU reads
misaligned addresses; on the CPU nothing would notice."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def checked_hints(monkeypatch):
    """Each 1-D value the kernels under test state `tl.multiple_of(value, n)` of is checked to
    be a multiple of n; the count of values checked is returned in a list, to show hints ran."""
    from triton.runtime import interpreter

    original = interpreter.TensorHandle.set_attr
    checked = []

    def set_attr(handle, key, values):
        if key == "tt.divisibility" and len(values) == 1:
            data = np.asarray(handle.data)
            assert (data % values[0] == 0).all(), f"tl.multiple_of(..., {values[0]}) stated of {data}"
            checked.append(data.size)
        return original(handle, key, values)

    monkeypatch.setattr(interpreter.TensorHandle, "set_attr", set_attr)
    return checked
