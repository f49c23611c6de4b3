"""Complex tensors, by running real kernels over `torch.view_as_real` data.

`fn.register_complex(mode, cross_kernel=None, tensorize_scalars=False, fallback_target=None)`:
- ELEMENTWISE (add-like): the payload applies to real and imaginary parts alike. Each complex
  operand is viewed as real with a trailing dim of 2; a real tensor beside complex ones is
  first converted to complex (zero imaginary part), as torch does.
- CROSS (mul-like): `cross_kernel`, a PointwiseDynamicFunction, receives (real, imag) for
  every tensor input (an imaginary part of zeros, broadcast without memory, for real
  tensors) followed by the scalars, and returns (real, imag) of the one output, written
  straight into the complex result through strided views.
Complex python scalars are accepted only with `tensorize_scalars=True` (they become 0-d
complex tensors). Calls without complex operands take the ordinary path. `fallback_target`,
when given, handles what neither mode covers (e.g. a complex scalar without tensorization).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from .frontend.dtypes import resolve_types


class ComplexMode(enum.Enum):
    NONE = 0
    ELEMENTWISE = 1
    CROSS = 2


@dataclass(frozen=True)
class ComplexHandler:
    mode: ComplexMode
    cross_kernel: Optional[Callable] = None
    tensorize_scalars: bool = False
    fallback_target: Optional[Callable] = None

    def applies(self, args: tuple, outs: tuple) -> bool:
        operands = [a for a in (*args, *outs) if isinstance(a, torch.Tensor)]
        return any(t.dtype.is_complex for t in operands) or any(isinstance(a, complex) for a in args)

    def __call__(self, fn, args: tuple, outs: tuple):
        converted = self._scalars(args)
        if converted is None or self.mode is ComplexMode.NONE:
            if self.fallback_target is None:
                raise TypeError(
                    f"{fn.__name__}: complex arguments need register_complex(ELEMENTWISE or CROSS), and complex "
                    "python scalars need tensorize_scalars=True"
                )
            return self.fallback_target(*args, **{f"out{k}": o for k, o in enumerate(outs) if o is not None})
        args = converted
        results = [dtype for dtype in resolve_types(fn.schema, args).results]
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        shape = torch.broadcast_shapes(*[a.shape for a in args if isinstance(a, torch.Tensor)])
        outputs = [o if o is not None else torch.empty(shape, dtype=d, device=device) for o, d in zip(outs, results)]
        if self.mode is ComplexMode.ELEMENTWISE:
            _elementwise(fn, args, outputs)
        else:
            _cross(fn, self.cross_kernel, args, outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _scalars(self, args: tuple):
        if not any(isinstance(a, complex) for a in args):
            return args
        if not self.tensorize_scalars:
            return None
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        return tuple(torch.tensor(a, device=device) if isinstance(a, complex) else a for a in args)


def _elementwise(fn, args: tuple, outputs: list) -> None:
    complex_dtype = next(o.dtype for o in outputs if o.dtype.is_complex)
    real_args = []
    for a in args:
        if isinstance(a, torch.Tensor):
            a = torch.view_as_real(a if a.dtype.is_complex else a.to(complex_dtype))
        real_args.append(a)
    fn(*real_args, **{f"out{k}": torch.view_as_real(o) for k, o in enumerate(outputs)})


def _cross(fn, cross_kernel, args: tuple, outputs: list) -> None:
    if cross_kernel is None or len(outputs) != 1:
        raise TypeError(f"{fn.__name__}: ComplexMode.CROSS needs a cross_kernel and exactly one output")
    parts = []
    for a in args:
        if isinstance(a, torch.Tensor):
            if a.dtype.is_complex:
                pair = torch.view_as_real(a)
                parts += [pair[..., 0], pair[..., 1]]
            else:
                parts += [a, torch.zeros((), dtype=a.dtype, device=a.device).expand(a.shape)]
        else:
            parts.append(a)
    out = torch.view_as_real(outputs[0])
    cross_kernel(*parts, out0=out[..., 0], out1=out[..., 1])
