"""Every tiling scheme by name, in the order a task tries them: the first that applies wins."""

from __future__ import annotations

from .base import Scheme
from .column_looped import ColumnLooped
from .flat import Flat
from .nd import Nd
from .row_looped import RowLooped
from .row_persistent import RowPersistent
from .tile2d import Tile2d

SCHEMES = {s.name: s for s in (Flat(), Tile2d(), Nd(), ColumnLooped(), RowPersistent(), RowLooped())}


def get_scheme(name: str) -> Scheme:
    try:
        return SCHEMES[name]
    except KeyError:
        raise ValueError(f"unknown tiling scheme {name!r} (known: {', '.join(SCHEMES)})") from None


def choose_scheme(task_shape: tuple, strides, split=None, config=None) -> Scheme:
    """`split` (the number of kept dims) is given for a reduction along dims: a row scheme then."""
    return next(s for s in SCHEMES.values() if s.applies(task_shape, strides, split, config))
