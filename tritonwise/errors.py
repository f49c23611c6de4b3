"""Exceptions tritonwise raises beyond Python's own (TypeError, ValueError, RuntimeError)."""

from __future__ import annotations


class PayloadError(RuntimeError):
    """The payload failed to compile or run inside its generated kernel. The message names the
    payload, the generated file and what Triton reported; the original exception is chained."""
