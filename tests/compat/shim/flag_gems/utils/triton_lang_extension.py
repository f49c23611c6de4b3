"""FlagGems' triton_lang_extension helpers that ops import by name. On NVIDIA FlagGems resolves
each to the libdevice function of the same name (`use_tl_extra`); so does this shim."""

from tritonwise.libdevice import div_rn, div_rz, fmod, trunc  # noqa: F401
