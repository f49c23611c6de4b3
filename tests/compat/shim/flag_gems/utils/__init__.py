"""flag_gems.utils, as far as FlagGems' pointwise tests and ops use it."""

import torch

from tritonwise import libdevice as tl_extra_shim  # FlagGems' name for libdevice on NVIDIA

# As in FlagGems: import the submodule here, so that `flag_gems.utils.pointwise_dynamic` stays the
# decorator (a later `import flag_gems.utils.pointwise_dynamic` would otherwise rebind the name).
from .pointwise_dynamic import ComplexMode, PointwiseDynamicFunction, pointwise_dynamic


def get_device_properties(index: int = 0):
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(index)

    class _Host:  # CPU runs: enough for the tests' memory checks
        total_memory = 0

    return _Host()


__all__ = ["ComplexMode", "PointwiseDynamicFunction", "get_device_properties", "pointwise_dynamic", "tl_extra_shim"]
