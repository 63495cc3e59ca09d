"""The index's storage: growable numpy columns, and timestamps as int64 microseconds (so
that a point-in-time filter is a vector comparison)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NEVER = np.iinfo(np.int64).max


def micros(value: datetime | None) -> int:
    """A timestamp as int64 microseconds; a missing one (open interval) is NEVER."""
    if value is None:
        return int(NEVER)
    return (value - EPOCH) // timedelta(microseconds=1)


class Column:
    """A growable one- or two-dimensional numpy array (rows appended, capacity doubled)."""

    def __init__(self, dtype: Any, fill: Any = 0, width: int = 0) -> None:
        self.dtype, self.fill, self.width = dtype, fill, width
        self.data = np.full((0, width) if width else 0, fill, dtype=dtype)

    def ensure(self, size: int, width: int = 0) -> None:
        if width and width != self.width:  # the first vector fixes the width
            self.width = width
            self.data = np.full((len(self.data), width), self.fill, dtype=self.dtype)
        if size <= len(self.data):
            return
        capacity = max(size, 2 * len(self.data), 256)
        shape = (capacity, self.width) if self.width else capacity
        grown = np.full(shape, self.fill, dtype=self.dtype)
        grown[: len(self.data)] = self.data
        self.data = grown
