"""Tiling schemes: one module per scheme, looked up by name in registry.py."""

from .registry import SCHEMES, choose_scheme, get_scheme

__all__ = ["SCHEMES", "choose_scheme", "get_scheme"]
