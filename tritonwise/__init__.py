"""tritonwise: rank-specialized Triton kernels for pointwise payloads over any PyTorch tensors."""

from ._version import __version__
from .complex import ComplexMode
from .config import CodeGenConfig
from .errors import NotDifferentiable, PayloadError
from .frontend.decorator import pointwise_dynamic
from .frontend.promotion import ELEMENTWISE_TYPE_PROMOTION_KIND
from .frontend.schema import FunctionSchema, SchemaError
from .function import Explanation, InstantiatedFunction, PointwiseDynamicFunction
from .prepared import KernelInfo
from .runtime.freeze import FrozenError, freeze, frozen, unfreeze
from .runtime.strided_buffer import StridedBuffer

__all__ = [
    "__version__",
    "CodeGenConfig",
    "ComplexMode",
    "ELEMENTWISE_TYPE_PROMOTION_KIND",
    "Explanation",
    "FrozenError",
    "FunctionSchema",
    "InstantiatedFunction",
    "KernelInfo",
    "NotDifferentiable",
    "PayloadError",
    "PointwiseDynamicFunction",
    "SchemaError",
    "StridedBuffer",
    "freeze",
    "frozen",
    "pointwise_dynamic",
    "unfreeze",
]
