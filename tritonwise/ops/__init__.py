"""tritonwise.ops: torch ops written with the public tritonwise API, as worked examples.

Each op is a @triton.jit payload turned into tensor functions by `pointwise_dynamic`, plus a
few lines of Python for torch's argument rules. They run on CUDA tensors, or on CPU tensors
through Triton's interpreter, and match torch's values, dtypes and shapes.

    arithmetic  add, sub, mul, div          python scalars in either position, alpha, rounding
    math        abs, neg, sin, exp          abs of complex tensors too
    activation  sigmoid, silu, gelu
    compare     eq, lt, where, clamp
    complex     polar                       two outputs written into a view_as_real buffer
    layout      flip, contiguous, transpose_copy, permute_copy
                                            StridedBuffer with negative strides + instantiate
"""

from .activation import gelu, sigmoid, silu
from .arithmetic import add, div, mul, sub
from .compare import clamp, eq, lt, where
from .complex import polar
from .layout import contiguous, flip, permute_copy, transpose_copy
from .math import abs, exp, neg, sin

__all__ = [
    "abs", "add", "clamp", "contiguous", "div", "eq", "exp", "flip", "gelu", "lt", "mul", "neg",
    "permute_copy", "polar", "sigmoid", "silu", "sin", "sub", "transpose_copy", "where",
]  # fmt: skip
