"""flag_gems.runtime, as far as FlagGems' pointwise ops use it: `device.name` is the device type
the ops compare tensors against (the shim's `flag_gems.device`)."""

from types import SimpleNamespace

import flag_gems

device = SimpleNamespace(name=flag_gems.device, vendor_name=flag_gems.vendor_name)

__all__ = ["device"]
