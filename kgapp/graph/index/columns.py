"""An index's columns: one file per column, memory-mapped, so every process on the
machine reads the same pages. Timestamps are int64 microseconds, so a point-in-time
filter is a vector comparison.

The writer grows a file by extending it (rows keep their place) and records the new
capacity in the manifest; a reader maps as many rows as the manifest says exist.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import numpy as np

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NEVER = np.iinfo(np.int64).max


def micros(value: datetime | None) -> int:
    """A timestamp as int64 microseconds; a missing one (open interval) is NEVER."""
    if value is None:
        return int(NEVER)
    return (value - EPOCH) // timedelta(microseconds=1)


Spec = dict[str, np.dtype]  # column name -> type (vectors: float32 rows of `width`)


class Columns:
    """The column files of one table's index, mapped read-write (the writer) or
    read-only (readers). `vectors` is the matrix of unit vectors, `width` wide."""

    def __init__(self, directory: Path, spec: Spec, *, writable: bool) -> None:
        self.directory, self.spec, self.writable = directory, spec, writable
        self.capacity, self.width = 0, 0
        self.data: dict[str, np.ndarray] = {}

    def map(self, capacity: int, width: int) -> None:
        """Map `capacity` rows (a writer first extends the files to hold them)."""
        if capacity == self.capacity and width == self.width and self.data:
            return
        self.data = {}
        shapes: dict[str, tuple[int, ...]] = {name: (capacity,) for name in self.spec}
        if width:
            shapes["vectors"] = (capacity, width)
        for name, shape in shapes.items():
            dtype = np.dtype(np.float32) if name == "vectors" else self.spec[name]
            path = self.directory / f"{name}.bin"
            size = int(np.prod(shape)) * dtype.itemsize
            if self.writable and (not path.exists() or path.stat().st_size < size):
                with open(path, "ab") as handle:
                    handle.truncate(size)
            if not size:
                self.data[name] = np.zeros(shape, dtype=dtype)
                continue
            mode: Literal["r+", "r"] = "r+" if self.writable else "r"
            self.data[name] = np.memmap(path, dtype=dtype, mode=mode, shape=shape)
        self.capacity, self.width = capacity, width

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[name]

    def flush(self, names: Iterable[str] | None = None) -> None:
        """Write the columns `names` (None: all) to disk and wait for it."""
        for name in self.data if names is None else names:
            array = self.data.get(name)
            if isinstance(array, np.memmap):
                array.flush()
