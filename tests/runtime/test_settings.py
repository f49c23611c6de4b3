"""The environment variables that switch parts of the runtime: their documented values, and a
clear error for any other (a variable set to `off` is not silently read as on)."""

import pytest

from tritonwise.config import setting
from tritonwise.runtime import hit_path, kernels

READERS = {
    "TRITONWISE_KERNEL_STORE": kernels.store_enabled,
    "TRITONWISE_C_NEW_SHAPES": hit_path.serves_new_shapes,
    "TRITONWISE_C_RECORDING": hit_path.records_in_c,
}


@pytest.mark.parametrize("name", list(READERS))
def test_each_switch_reads_0_1_and_unset(monkeypatch, name):
    for value, on in (("0", False), ("1", True), ("", True)):
        monkeypatch.setenv(name, value)
        assert READERS[name]() is on
    monkeypatch.delenv(name)
    assert READERS[name]() is True


@pytest.mark.parametrize("name", list(READERS))
@pytest.mark.parametrize("value", ["off", "false", "no", " 0"])
def test_another_value_is_an_error_naming_the_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=f"{name}={value!r}: expected '0' or '1'"):
        READERS[name]()


def test_a_setting_of_three_values(monkeypatch):
    monkeypatch.setenv("TRITONWISE_ATEN", "wait")
    assert setting("TRITONWISE_ATEN", ("0", "1", "wait")) == "wait"
    monkeypatch.setenv("TRITONWISE_ATEN", "later")
    with pytest.raises(ValueError, match="expected '0' or '1' or 'wait'"):
        setting("TRITONWISE_ATEN", ("0", "1", "wait"))
