"""FunctionSchema: which arguments are tensors, and how each output's dtype is promoted."""

from __future__ import annotations

from typing import Optional, Sequence

from .promotion import ELEMENTWISE_TYPE_PROMOTION_KIND


class SchemaError(ValueError, AssertionError):
    """An invalid schema. Both a ValueError and an AssertionError: FlagGems code catches either."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise SchemaError(message)


class FunctionSchema:
    """The argument kinds and per-output promotion methods (kept as `(i, ..., KIND member)`) of a function."""

    def __init__(
        self,
        *,
        num_inputs: Optional[int] = None,
        is_tensor: Optional[Sequence[bool]] = None,
        dtypes: Optional[Sequence[Optional[type]]] = None,
        num_outputs: Optional[int] = None,
        promotion_methods: Optional[Sequence] = None,
    ):
        self._num_inputs, self._is_tensor, self._dtypes = _resolve_inputs(num_inputs, is_tensor, dtypes)
        _check(promotion_methods is not None, "promotion_methods is required: one entry per output")
        self._promotion_methods = [_canonical_method(m, self._num_inputs) for m in promotion_methods]
        if num_outputs is None:
            num_outputs = len(self._promotion_methods)
        _check(num_outputs > 0, "a pointwise function needs at least one output (num_outputs > 0)")
        _check(
            num_outputs == len(self._promotion_methods),
            f"num_outputs={num_outputs} but {len(self._promotion_methods)} promotion_methods were given",
        )
        self._num_outputs = num_outputs

    @staticmethod
    def canonicalize_promotion_methods(promotion_methods) -> list:
        """FlagGems' canonical form: one `(i, j, ..., KIND)` tuple per output, KIND the enum member."""
        return [_canonical_method(m) for m in promotion_methods]

    def num_inputs(self) -> int:
        return self._num_inputs

    def num_outputs(self) -> int:
        return self._num_outputs

    def is_tensor(self, i: int) -> bool:
        return self._is_tensor[i]

    def input_type(self, i: int) -> Optional[type]:
        return self._dtypes[i]

    def output_type(self, i: int) -> tuple:
        """The canonical promotion method `(arg indices..., KIND)` of output `i`."""
        return self._promotion_methods[i]

    def promotion_methods(self) -> list:
        return list(self._promotion_methods)

    def num_input_tensors(self) -> int:
        return sum(self._is_tensor)

    def num_output_tensors(self) -> int:
        return self._num_outputs

    def num_non_tensor_args(self) -> int:
        return self._num_inputs - self.num_input_tensors()

    def input_index(self, i: int) -> int:
        """Position of argument `i` among the tensors, or among the scalars ([T,F,T] -> 0,0,1)."""
        return self._is_tensor[:i].count(self._is_tensor[i])

    def signature(self, outputs_in_arg: bool = False) -> str:
        kinds = zip(self._is_tensor, self._dtypes)
        ins = ["StridedBuffer" if t else "scalar" if d is None else d.__name__ for t, d in kinds]
        if outputs_in_arg:
            ins += [f"StridedBuffer(a{i}!)" for i in range(self._num_outputs)]
        outs = ["StridedBuffer"] * self._num_outputs
        return f"Pointwise: {', '.join(ins)} -> {', '.join(outs)}"

    def __str__(self) -> str:
        return self.signature()

    def __repr__(self) -> str:
        return f"FunctionSchema({self.signature()}, promotion_methods={self._promotion_methods})"


def _resolve_inputs(num_inputs, is_tensor, dtypes):
    _check(
        not (num_inputs is None and is_tensor is None and dtypes is None),
        "one of num_inputs, is_tensor or dtypes is required",
    )
    if dtypes is not None:
        dtypes = list(dtypes)
        for i, d in enumerate(dtypes):
            _check(d is None or isinstance(d, type), f"dtypes[{i}] must be a python type or None, got {d!r}")
    if is_tensor is not None:
        is_tensor = [bool(t) for t in is_tensor]
    elif dtypes is not None:
        is_tensor = [d is None for d in dtypes]
    lengths = {
        name: len(v) if name != "num_inputs" else v
        for name, v in (("num_inputs", num_inputs), ("is_tensor", is_tensor), ("dtypes", dtypes))
        if v is not None
    }
    _check(len(set(lengths.values())) == 1, f"input counts disagree: {lengths}")
    n = next(iter(lengths.values()))
    _check(isinstance(n, int) and n >= 0, f"num_inputs must be a non-negative int, got {n!r}")
    return n, is_tensor or [True] * n, dtypes or [None] * n


def _canonical_method(method, num_inputs: Optional[int] = None) -> tuple:
    _check(isinstance(method, (tuple, list)) and len(method) >= 2, f"bad promotion method {method!r}")
    *indices, kind = method
    if len(indices) == 1 and isinstance(indices[0], (tuple, list)):
        indices = list(indices[0])
    _check(len(indices) > 0, f"promotion method {method!r} names no argument")
    for i in indices:
        _check(
            isinstance(i, int) and 0 <= i and (num_inputs is None or i < num_inputs),
            f"promotion method {method!r}: argument index {i!r} out of range for {num_inputs} inputs",
        )
    names = [k.name for k in ELEMENTWISE_TYPE_PROMOTION_KIND]
    if isinstance(kind, str) and kind.upper() in names:  # a kind by name: "DEFAULT", "int_to_float", ...
        kind = ELEMENTWISE_TYPE_PROMOTION_KIND[kind.upper()]
    _check(
        isinstance(kind, ELEMENTWISE_TYPE_PROMOTION_KIND),
        f"promotion method {method!r}: unknown kind {kind!r} (expected one of {', '.join(names)})",
    )
    return (*indices, kind)

