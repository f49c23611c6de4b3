"""A stand-in for the `flag_gems` package that only renames modules: FlagGems code imports
`flag_gems.utils.pointwise_dynamic` and gets tritonwise. Put `tests/compat/shim` first on
sys.path (see tests/compat/README.md). `device` is "cuda" when a GPU is present, else "cpu"
(the Triton interpreter), overridable with TRITONWISE_COMPAT_DEVICE."""

import os

import torch

device = os.environ.get("TRITONWISE_COMPAT_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
vendor_name = "nvidia"
