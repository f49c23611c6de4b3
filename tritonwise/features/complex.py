"""Complex arguments, by running real kernels over `torch.view_as_real` data.

`fn.register_complex(mode, cross_kernel=None, tensorize_scalars=False, fallback_target=None)`
(FlagGems' API). A call takes this path when an operand its promotion methods name, or a given
output, is complex. With `tensorize_scalars=True` and `fallback_target`, python scalar operands
become 0-d tensors of the call's complex dtype and the call goes to `fallback_target`.

ELEMENTWISE (add-like): the payload applies to real and imaginary parts alike: one launch over
`view_as_real` views when every operand is a complex tensor, else one per part (a real operand's
imaginary part is zero, so `complex_tensor + 2.0` adds to the real part only).

CROSS (mul-like): `cross_kernel`, with 2 outputs, takes (real, imag) of every operand, then the
other arguments, and writes the result's parts through strided views.

Conjugate and negative views are resolved first; results are complex and C-contiguous.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from ..frontend import validation
from ..frontend.dtypes import resolve_types
from ..frontend.promotion import ELEMENTWISE_TYPE_PROMOTION_KIND, promote
from ..runtime import arguments as argcheck
from . import own_ops


class ComplexMode(enum.Enum):
    NONE = 0
    ELEMENTWISE = 1
    CROSS = 2


_REAL_OF = {torch.complex32: torch.float16, torch.complex64: torch.float32, torch.complex128: torch.float64}


def is_complex(a) -> bool:
    return isinstance(a, complex) or (argcheck.is_tensor_like(a) and a.dtype.is_complex)


@dataclass(frozen=True)
class ComplexHandler:
    """How one function handles complex calls; built (and validated) by `complex_handler`."""

    mode: ComplexMode
    operands: tuple  # positions the promotion methods name, ascending
    cross_kernel: Optional[Callable] = None
    tensorize_scalars: bool = False
    fallback_target: Optional[Callable] = None

    def applies(self, args: tuple, outs: tuple) -> bool:
        return any(is_complex(a) for a in (*args, *outs))

    def __call__(self, fn, args: tuple, outs: tuple):
        name = fn.__name__
        if len(args) != fn.schema.num_inputs():
            raise TypeError(f"{name}() takes {fn.schema.num_inputs()} positional inputs but {len(args)} were given")
        for i, a in enumerate(args):
            if is_complex(a) and i not in self.operands:
                raise TypeError(
                    f"{name}: argument {i} is complex, but no promotion method names it: only operands "
                    f"(arguments {list(self.operands)}) may be complex"
                )
        if not any(is_complex(args[i]) for i in self.operands):
            return _real_into_complex(fn, args, outs)
        if self.tensorize_scalars and self.fallback_target is not None:
            return self.fallback_target(*self._tensorized(args), **validation.output_keywords(outs))
        args = tuple(own_ops.resolved(a) for a in args)
        outputs = _outputs(fn, args, outs)
        if self.mode is ComplexMode.CROSS:
            self._cross(args, outputs[0])
        elif all(argcheck.is_tensor_like(args[i]) and args[i].dtype.is_complex for i in self.operands):
            _elementwise_pairs(fn, args, self.operands, outputs)
        else:
            _elementwise_parts(fn, args, self.operands, outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _tensorized(self, args: tuple) -> tuple:
        dtype = promote((*self.operands, ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT), args)[1]
        tensors = [(f"argument {i}", a) for i, a in enumerate(args) if argcheck.is_tensor_like(a)]
        device = validation.launch_device("register_complex", tensors)
        return tuple(
            torch.tensor(a, dtype=dtype, device=device) if i in self.operands and not argcheck.is_tensor_like(a) else a
            for i, a in enumerate(args)
        )

    def _cross(self, args: tuple, out: torch.Tensor) -> None:
        real = _REAL_OF[out.dtype]
        takes_tensor = self.cross_kernel.schema.is_tensor
        parts = []
        for i in self.operands:
            for part in _parts(args[i], real, out.device):
                if not takes_tensor(len(parts)):
                    if part.ndim:
                        raise TypeError(
                            f"{self.cross_kernel.__name__}: argument {len(parts)} is a scalar in the cross kernel, "
                            f"but operand {i} is a tensor"
                        )
                    part = part.item()
                parts.append(part)
        parts += [a for i, a in enumerate(args) if i not in self.operands]
        pair = torch.view_as_real(out)
        self.cross_kernel(*parts, out0=pair[..., 0], out1=pair[..., 1])


def _parts(a, real: torch.dtype, device) -> tuple:
    """(real, imaginary) of one operand, as tensors: views of a complex tensor, zeros broadcast for a
    real tensor, 0-d tensors of `real` for a python scalar (converted as torch converts it)."""
    if argcheck.is_tensor_like(a):
        return _part(a, 0), _part(a, 1)
    z = complex(a)
    return torch.tensor(z.real, dtype=real, device=device), torch.tensor(z.imag, dtype=real, device=device)


def _elementwise_pairs(fn, args: tuple, operands: tuple, outputs: list) -> None:
    """One launch over view_as_real data; real non-operand tensors get a trailing dim of 1."""
    real_args = [
        torch.view_as_real(a) if i in operands else a.unsqueeze(-1) if argcheck.is_tensor_like(a) else a
        for i, a in enumerate(args)
    ]
    fn(*real_args, **validation.output_keywords([torch.view_as_real(o) for o in outputs]))


def _elementwise_parts(fn, args: tuple, operands: tuple, outputs: list) -> None:
    """Two launches: real parts, then imaginary parts (zeros for real tensors and scalars)."""
    for half in (0, 1):
        parts = [_part(a, half) if i in operands else a for i, a in enumerate(args)]
        fn(*parts, **validation.output_keywords([torch.view_as_real(o)[..., half] for o in outputs]))


def _part(a, half: int):
    if argcheck.is_tensor_like(a):
        if a.dtype.is_complex:
            return torch.view_as_real(a)[..., half]
        return a if half == 0 else torch.zeros((), dtype=a.dtype, device=a.device).expand(a.shape)
    if isinstance(a, complex):
        return a.imag if half else a.real
    return a if half == 0 else type(a)(0)


def _real_into_complex(fn, args: tuple, outs: tuple):
    """Real operands, complex given outputs: the real result, with a zero imaginary part."""
    reals = [torch.view_as_real(own_ops.resolved(o))[..., 0] if is_complex(o) else o for o in outs]
    result = fn(*args, **validation.output_keywords(reals))
    for o in outs:
        if is_complex(o):
            own_ops.zero_(torch.view_as_real(o)[..., 1])
    return validation.given_or(result, outs)


def _outputs(fn, args: tuple, outs: tuple) -> list:
    """The complex outputs of a call: given ones checked, the others allocated C-contiguous."""
    name = fn.__name__
    results = resolve_types(fn.schema, args).results
    tensors = [(f"argument {i}", a) for i, a in enumerate(args) if argcheck.is_tensor_like(a)]
    device = validation.launch_device(name, tensors + [(f"out{k}", o) for k, o in enumerate(outs) if o is not None])
    try:
        shape = torch.broadcast_shapes(*[a.shape for _, a in tensors])
    except RuntimeError as e:
        raise RuntimeError(f"{name}: {e}") from None
    outputs = []
    for k, (out, dtype) in enumerate(zip(outs, results)):
        if not dtype.is_complex:
            raise TypeError(
                f"{name}: out{k}'s promotion gives {dtype} for complex operands; register_complex computes "
                "complex results only"
            )
        if out is None:
            out = torch.empty(shape, dtype=dtype, device=device)
        else:
            validation.check_output(name, k, out, shape, dtype, device, complex_ok=True)
            if out.is_conj():
                raise RuntimeError(f"{name}: out{k} is a conjugate view; give a tensor without the conjugate bit")
        outputs.append(out)
    return outputs


def complex_handler(fn, mode, cross_kernel=None, tensorize_scalars=False, fallback_target=None):
    """The handler `fn.register_complex(...)` installs (None for ComplexMode.NONE), after checking
    the registration against fn's schema: a mistake is an error here, not at the first call."""
    mode = _mode(mode)
    name = f"{fn.__name__}.register_complex"
    if cross_kernel is not None and mode is not ComplexMode.CROSS:
        raise ValueError(f"{name}: cross_kernel is used by ComplexMode.CROSS only, got mode {mode}")
    if fallback_target is not None and not tensorize_scalars:
        raise ValueError(
            f"{name}: fallback_target is used only with tensorize_scalars=True (the tensorized call goes to it)"
        )
    if mode is ComplexMode.NONE:
        return None
    schema = fn.schema
    operands = tuple(sorted({i for k in range(schema.num_outputs()) for i in schema.output_type(k)[:-1]}))
    if fallback_target is not None:
        _check_fallback(name, schema, operands, fallback_target)
    elif mode is ComplexMode.CROSS:
        _check_cross(name, schema, operands, cross_kernel)
    return ComplexHandler(mode, operands, cross_kernel, bool(tensorize_scalars), fallback_target)


def _mode(mode) -> ComplexMode:
    if isinstance(mode, ComplexMode):
        return mode
    if isinstance(mode, enum.Enum):
        mode = mode.name  # a look-alike enum (e.g. FlagGems' own ComplexMode)
    if isinstance(mode, str) and mode.upper() in ComplexMode.__members__:
        return ComplexMode[mode.upper()]
    raise ValueError(f"register_complex: mode must be a ComplexMode (NONE, ELEMENTWISE, CROSS), got {mode!r}")


def _schema_of(name: str, role: str, target):
    schema = getattr(target, "schema", None)
    if schema is None or not callable(target):
        hint = ""
        if hasattr(target, "fn") and hasattr(target, "run"):
            hint = "; it is a bare @triton.jit function: wrap it with pointwise_dynamic(promotion_methods=[...])"
        raise TypeError(f"{name}: {role} must be a PointwiseDynamicFunction, got {target!r}{hint}")
    return schema


def _check_cross(name: str, schema, operands: tuple, cross_kernel) -> None:
    if schema.num_outputs() != 1:
        count = schema.num_outputs()
        raise ValueError(f"{name}: ComplexMode.CROSS needs a function with exactly one output, got {count}")
    if cross_kernel is None:
        raise ValueError(
            f"{name}: ComplexMode.CROSS needs cross_kernel= (or tensorize_scalars=True with a fallback_target)"
        )
    cross = _schema_of(name, "cross_kernel", cross_kernel)
    others = schema.num_inputs() - len(operands)
    expected = 2 * len(operands) + others
    if cross.num_inputs() != expected or cross.num_outputs() != 2:
        raise ValueError(
            f"{name}: cross_kernel must take {expected} inputs (real, imag of each of the {len(operands)} operands, "
            f"then the {others} other arguments) and return 2 outputs (real, imag); "
            f"{cross_kernel.__name__} takes {cross.num_inputs()} and returns {cross.num_outputs()}"
        )


def _check_fallback(name: str, schema, operands: tuple, target) -> None:
    other = _schema_of(name, "fallback_target", target)
    if (other.num_inputs(), other.num_outputs()) != (schema.num_inputs(), schema.num_outputs()):
        raise ValueError(
            f"{name}: fallback_target must take the same {schema.num_inputs()} inputs and {schema.num_outputs()} "
            f"outputs; {target.__name__} takes {other.num_inputs()} and returns {other.num_outputs()}"
        )
    scalars = [i for i in operands if not schema.is_tensor(i) and not other.is_tensor(i)]
    if scalars:
        which = f"argument {scalars[0]} as a scalar" if len(scalars) == 1 else f"arguments {scalars} as scalars"
        raise ValueError(
            f"{name}: fallback_target receives scalar operands as tensors, but {target.__name__} takes {which}"
        )
