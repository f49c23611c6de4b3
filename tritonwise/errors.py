"""Exceptions tritonwise raises beyond Python's own (TypeError, ValueError, RuntimeError)."""

from __future__ import annotations


class PayloadError(RuntimeError):
    """The payload failed to compile or run inside its generated kernel. The message names the
    payload, the generated file and what Triton reported; the original exception is chained."""


class NotDifferentiable(PayloadError):
    """The payload uses a construct tritonwise cannot derive a backward for (named with its line);
    give the backward by hand (`backward=` or `fn.register_backward`)."""
