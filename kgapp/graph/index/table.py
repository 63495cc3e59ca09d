"""One table's index as a process reads it: the rows' keys, their columns (memory-
mapped), BM25 over their text (tantivy, and the tail of text put since its last commit)
and their nearest vectors (usearch).

A row is a record's place in the index, for as long as the index is not rebuilt: a
record that changes keeps its row, one deleted keeps it dead (`alive` false), one
created again gets it back. The writer (`writer.TableWriter`) appends keys and codes to
text files and records in the manifest how far readers may read them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kgapp.graph.index import vectors as nearest_vectors
from kgapp.graph.index.columns import Columns, Spec
from kgapp.graph.index.directories import TableState
from kgapp.graph.index.text import TextReader
from kgapp.graph.records import JsonObject

# Every table's columns beside its own: whether the row is a current record, has a
# vector, has it in the saved graph (vectors.py), and the hash of its texts.
COMMON: Spec = {
    "alive": np.dtype(np.bool_),
    "has_vector": np.dtype(np.bool_),
    "in_hnsw": np.dtype(np.bool_),
    "text_hash": np.dtype(np.uint64),
}
# Term matches asked of tantivy per wanted hit, before the mask: more when too few pass.
BM25_OVERFETCH = 4


# A record's values in its row, by column: a code, a count, a time in microseconds, a score.
ColumnValues = dict[str, int | float]


@dataclass(frozen=True)
class TableSpec:
    """What one table's index holds, and how a record fills its row. A record is a row
    of the table as the feed or a read gives it (an untyped dict: the spec names its
    fields, so one writer serves every indexed table)."""

    table: str
    text_fields: tuple[str, ...]
    vector_field: str
    columns: Spec
    ids: str  # the query of every id (a rebuild)
    rows: str  # the query of the indexed fields of `$ids`
    values: Callable[[JsonObject, Callable[[str], int], Callable[[str], int]], ColumnValues]
    alive: Callable[[JsonObject], bool]

    @property
    def all_columns(self) -> Spec:
        return {**COMMON, **self.columns}


class Lines:
    """An append-only file of one value per line, read as far as the manifest says."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.values: list[str] = []
        self.codes: dict[str, int] = {}
        self.read_bytes = 0

    def read_to(self, size: int) -> None:
        if size <= self.read_bytes:
            return
        with open(self.path, "rb") as handle:
            handle.seek(self.read_bytes)
            chunk = handle.read(size - self.read_bytes)
        for line in chunk.decode().split("\n")[:-1]:
            self.codes[line] = len(self.values)
            self.values.append(line)
        self.read_bytes = size


class TableIndex:
    """A table's index, read-only, as of the manifest last given to `update`."""

    spec: TableSpec

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.lock = threading.Lock()
        self.state = TableState()
        self.columns = Columns(directory or Path("."), self.spec.all_columns, writable=False)
        self.columns.map(0, 0)
        self.text = TextReader(directory / "text", self.spec.text_fields) if directory else None
        self.keys_file = Lines(directory / "keys.txt") if directory else None
        self.codes_file = Lines(directory / "codes.txt") if directory else None
        self.ends_file = Lines(directory / "ends.txt") if directory else None
        self.graph: Any = None

    def update(self, state: TableState) -> None:
        """Take up what the writer committed, as the manifest describes it."""
        if self.directory is None:
            return
        if state == self.state and (self.graph is not None or not state.hnsw):
            return
        with self.lock:
            for lines, size in (
                (self.keys_file, state.keys_bytes),
                (self.codes_file, state.codes_bytes),
                (self.ends_file, state.ends_bytes),
            ):
                assert lines is not None
                lines.read_to(size)
            self.columns.map(state.capacity, state.width)
            if self.text is not None:
                self.text.update(
                    state.text_commit != self.state.text_commit,
                    self.directory / state.tail if state.tail else None,
                    state.tail_bytes,
                )
            if state.hnsw != self.state.hnsw or self.graph is None:
                self.graph = self._view(state.hnsw)
            self.state = state

    def _view(self, name: str) -> Any:
        if not name or self.directory is None:
            return None
        try:
            return nearest_vectors.view_graph(self.directory / name)
        except (OSError, RuntimeError, ValueError):  # replaced meanwhile: exact until then
            return None

    # --- what readers use -------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.state.rows

    @property
    def keys(self) -> list[str]:
        return self.keys_file.values if self.keys_file else []

    @property
    def positions(self) -> dict[str, int]:
        return self.keys_file.codes if self.keys_file else {}

    @property
    def codes(self) -> dict[str, int]:
        return self.codes_file.codes if self.codes_file else {}

    @property
    def ends(self) -> dict[str, int]:
        return self.ends_file.codes if self.ends_file else {}

    def column(self, name: str) -> np.ndarray:
        return self.columns[name][: self.size]

    def base_mask(self) -> np.ndarray:
        return np.array(self.column("alive"), dtype=np.bool_)

    def coded(self, column: str, values: Sequence[str]) -> np.ndarray:
        """Rows whose `column` (a code of codes.txt) is one of `values`."""
        wanted = [self.codes[v] for v in values if v in self.codes]
        return np.isin(self.column(column), wanted)

    def bm25(self, text: str, mask: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """The `limit` best rows within `mask` by BM25 (ties by row), with their scores."""
        if self.text is None or not limit:
            return []
        with self.lock:
            ask = limit * BM25_OVERFETCH
            while True:
                rows, scores, more = self.text.search(text, ask)
                inside = rows < self.size
                inside[inside] = mask[rows[inside]]
                if np.count_nonzero(inside) >= limit or not more:
                    break
                ask *= 8
            rows, scores = rows[inside], scores[inside]
            order = np.lexsort((rows, -scores))[:limit]
            return [(self.keys[int(rows[i])], float(scores[i])) for i in order]

    def matching(self, text: str, limit: int) -> list[str]:
        """The keys of live rows whose text holds every term of `text` (at most `limit`,
        the best matches by BM25)."""
        if self.text is None or not limit:
            return []
        with self.lock:
            rows = self.text.matching(text, limit)
            alive = self.column("alive")
            rows = rows[rows < self.size]
            return [self.keys[int(row)] for row in rows if alive[row]]

    def cosine(
        self, vector: Sequence[float], mask: np.ndarray, limit: int
    ) -> list[tuple[str, float]]:
        query = np.asarray(vector, dtype=np.float32)
        with self.lock:
            if not self.size or len(query) != self.state.width:
                return []
            usable = mask[: self.size] & self.column("has_vector")
            found = nearest_vectors.nearest(
                self.column("vectors"), query, usable, self.column("in_hnsw"), self.graph, limit
            )
            return [(self.keys[row], score) for row, score in found]

    def vectors_of(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """The unit vectors of those keys that have one."""
        with self.lock:
            rows = {k: self.positions.get(k) for k in keys}
            has = self.column("has_vector")
            return {
                k: np.array(self.column("vectors")[i])
                for k, i in rows.items()
                if i is not None and i < self.size and has[i]
            }
