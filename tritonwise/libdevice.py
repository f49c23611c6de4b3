"""libdevice by its libdevice names: FlagGems' `tl_extra_shim` for tritonwise.

FlagGems' payloads call device math through `flag_gems.utils.tl_extra_shim` (`tl_extra_shim.pow`,
`.erf`, `.isfinited`, `.nearbyint`, ...), which on NVIDIA is Triton's CUDA libdevice module; its
`triton_lang_extension` helpers `div_rn`, `div_rz`, `fmod`, `trunc` resolve to the libdevice
functions of the same names there. `tritonwise.libdevice` is Triton's backend-neutral
`triton.language.extra.libdevice` module itself (this file replaces itself with it on import),
which has every one of those names; so `from tritonwise import libdevice as tl_extra_shim` runs
such payloads unchanged.

It must be that module, not a copy of its functions: Triton's compiler swaps the module for the
backend's (CUDA or HIP libdevice) by module name when a payload reaches a function through it
(`tl_extra_shim.asin(x)`), and whatever the CPU path does for libdevice calls in the interpreter
applies to it as to a direct import.
"""

import sys

try:
    from triton.language.extra import libdevice as _libdevice
except ImportError:  # pragma: no cover - Triton < 3.0 kept libdevice in triton.language.math
    from triton.language import math as _libdevice

sys.modules[__name__] = _libdevice
