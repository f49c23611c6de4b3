"""libdevice by its libdevice names: FlagGems' `tl_extra_shim` for tritonwise.

`tritonwise.libdevice` is Triton's `triton.language.extra.libdevice` module itself (this file
replaces itself with it on import), so `from tritonwise import libdevice as tl_extra_shim` runs
FlagGems' payloads unchanged. It must be that module, not a copy: Triton's compiler swaps it for the
backend's by module name.
"""

import sys

from triton.language.extra import libdevice as _libdevice

sys.modules[__name__] = _libdevice
