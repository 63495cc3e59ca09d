"""One table's index as its writer keeps it: records put and deleted, then committed
(tantivy's commit, the columns flushed, the graph of vectors saved when due), and the
new TableState handed to the manifest.

The columns are shared memory maps: what a writer puts there is in the files at once,
committed or not. A row's text hash (the text tantivy holds for it) is therefore written
only once tantivy has committed that text, and a writer that opens an index first
forgets what one that died wrote past the committed rows; else a writer killed between
the two left a hash that said the text was indexed when it was not, and the next one
never indexed it (issue 32: a fact no search on that machine found).
"""

from __future__ import annotations

import dataclasses
import hashlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from kgapp.graph.index import vectors as nearest_vectors
from kgapp.graph.index.columns import Columns
from kgapp.graph.index.directories import TableState
from kgapp.graph.index.table import COMMON, Lines, TableSpec
from kgapp.graph.index.text import TextWriter
from kgapp.graph.records import JsonObject, record_key

MIN_CAPACITY = 1024


class _Appender(Lines):
    """Lines this writer appends to (a line a crashed writer left half written is cut)."""

    def __init__(self, path: Path, size: int) -> None:
        super().__init__(path)
        path.touch()
        with open(path, "r+b") as handle:
            handle.truncate(size)
        self.read_to(size)
        self._handle = open(path, "ab")  # noqa: SIM115 (closed by close())

    def code(self, value: str) -> int:
        found = self.codes.get(value)
        if found is None:
            found = self.codes[value] = len(self.values)
            self.values.append(value)
            line = (value.replace("\n", " ") + "\n").encode()
            self._handle.write(line)
            self.read_bytes += len(line)
        return found

    def flush(self) -> None:
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


class TableWriter:
    def __init__(self, directory: Path, spec: TableSpec, state: TableState) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory, self.spec = directory, spec
        self.state = dataclasses.replace(state)
        self.keys = _Appender(directory / "keys.txt", state.keys_bytes)
        self.codes = _Appender(directory / "codes.txt", state.codes_bytes)
        self.ends = _Appender(directory / "ends.txt", state.ends_bytes)
        self.columns = Columns(directory, spec.all_columns, writable=True)
        self.columns.map(state.capacity, state.width)
        self.text = TextWriter(directory / "text", spec.text_fields, directory)
        self.graph: Any = None  # the graph of vectors, loaded when first due to grow
        self.hashes: dict[int, int] = {}  # rows' text hashes tantivy has yet to commit
        self._forget_uncommitted()
        if state.tail:  # a writer's tail, to commit (raises when it cannot be read)
            for entry in self.text.replay(state.tail, state.tail_bytes):
                texts = entry.texts
                self.hashes[entry.row] = _digest(list(texts)) if texts is not None else 0

    # --- changes ------------------------------------------------------------------------

    def put(self, record: JsonObject) -> int:  # a row of any indexed table (TableSpec)
        """A record created or updated (a whole record, as the feed or a read gives it);
        its row."""
        key = record_key(record["id"])
        row = self.keys.codes.get(key)
        if row is None:
            row = self.keys.code(key)
            self._make_room(row + 1)
        texts = [str(record.get(name) or "") for name in self.spec.text_fields]
        digest = _digest(texts)
        columns = self.columns
        indexed = self._text_hash(row)
        if indexed != digest:
            self.text.put(row, texts, replace=bool(indexed) or row < self.state.rows)
            self.hashes[row] = digest
        for name, value in self.spec.values(record, self.codes.code, self.ends.code).items():
            columns[name][row] = value
        columns["alive"][row] = self.spec.alive(record)
        self._vector(row, record.get(self.spec.vector_field))
        return row

    def delete(self, key: str) -> None:
        row = self.keys.codes.get(key)
        if row is None or not self.columns["alive"][row] and not self._text_hash(row):
            return
        self.columns["alive"][row] = False
        if self._text_hash(row):
            self.text.delete(row)
            self.hashes[row] = 0

    def _text_hash(self, row: int) -> int:
        """The hash of the text the row has in tantivy, committed or not (0: none)."""
        return self.hashes.get(row, int(self.columns["text_hash"][row]))

    def _forget_uncommitted(self) -> None:
        """Clear what a writer that died left past the committed rows: their values in
        the shared columns, and their text if tantivy committed it before the manifest
        counted them. Those rows are written again from the feed."""
        rows = self.state.rows
        for name in COMMON:
            column = self.columns[name]
            if column[rows:].any():
                column[rows:] = 0
        self.text.delete_from(rows)

    def _vector(self, row: int, vector: Any) -> None:
        columns = self.columns
        if not vector:
            columns["has_vector"][row] = False
            return
        unit = np.asarray(vector, dtype=np.float32)
        if not self.state.width:  # the first vector fixes the width
            self.state.width = len(unit)
            columns.map(columns.capacity, self.state.width)
        if len(unit) != self.state.width:  # a vector of another model: unsearchable
            columns["has_vector"][row] = False
            return
        unit /= float(np.linalg.norm(unit)) or 1.0
        if columns["has_vector"][row] and np.array_equal(columns["vectors"][row], unit):
            return
        columns["vectors"][row] = unit
        columns["has_vector"][row] = True
        columns["in_hnsw"][row] = False  # searched exactly until the graph has it again

    def _make_room(self, rows: int) -> None:
        if rows > self.columns.capacity:
            capacity = max(MIN_CAPACITY, 2 * self.columns.capacity, rows)
            self.columns.map(capacity, self.state.width)

    # --- commit -------------------------------------------------------------------------

    def commit(self, generation: int, *, durable: bool = True, threads: int = 1) -> TableState:
        """Make everything put visible to readers: the new state for the manifest.
        Durable: tantivy commits, the columns go to disk meanwhile (both wait mostly on
        the disk), then the text hashes. Else the text is published in the tail, and the
        columns are seen in the shared pages; the hashes wait for the commit."""
        for lines in (self.keys, self.codes, self.ends):
            lines.flush()
        self._grow_graph(generation, threads)
        if durable:
            self._commit_text()
            self.state.tail, self.state.tail_bytes = "", 0
        else:
            self.state.tail, self.state.tail_bytes = self.text.publish(generation)
        self.state.rows = len(self.keys.values)
        self.state.capacity = self.columns.capacity
        self.state.keys_bytes = self.keys.read_bytes
        self.state.codes_bytes = self.codes.read_bytes
        self.state.ends_bytes = self.ends.read_bytes
        return dataclasses.replace(self.state)

    def _commit_text(self) -> None:
        others = [name for name in self.columns.data if name != "text_hash"]
        if self.text.pending:
            with ThreadPoolExecutor(1) as pool:
                flushed = pool.submit(self.columns.flush, others)
                self.state.text_commit = self.text.commit()
                flushed.result()
        else:
            self.columns.flush(others)
        for row, digest in self.hashes.items():
            self.columns["text_hash"][row] = digest
        self.hashes.clear()
        self.columns.flush(["text_hash"])

    @property
    def tail_entries(self) -> int:
        """Puts and deletes since tantivy last committed."""
        return self.text.log.entries

    def graph_rows(self, rows: list[int], threads: int) -> None:
        """Add these rows' vectors to the graph now (a rebuild does, page by page, while
        it reads the next page)."""
        chosen = np.asarray(rows, dtype=np.int64)
        chosen = chosen[self.columns["has_vector"][chosen] & ~self.columns["in_hnsw"][chosen]]
        if len(chosen):
            self._graph().add(chosen, np.asarray(self.columns["vectors"][chosen]), threads=threads)
            self.columns["in_hnsw"][chosen] = True

    def _grow_graph(self, generation: int, threads: int) -> None:
        """Save a new graph of vectors when enough rows are outside it (vectors.py)."""
        rows = len(self.keys.values)
        has = self.columns["has_vector"][:rows]
        if np.count_nonzero(has) <= nearest_vectors.EXACT_ROWS:
            return
        outside = np.flatnonzero(has & ~self.columns["in_hnsw"][:rows])
        if self.state.hnsw and len(outside) < nearest_vectors.SNAPSHOT_ROWS:
            return
        graph = self._graph()
        stale = [int(row) for row in outside if graph.contains(int(row))]
        if stale:
            graph.remove(stale)
        graph.add(outside, np.asarray(self.columns["vectors"][outside]), threads=threads)
        name = f"hnsw-{generation}.usearch"
        graph.save(str(self.directory / name))
        self.columns["in_hnsw"][outside] = True
        previous, self.state.hnsw = self.state.hnsw, name
        if previous:  # readers that view it keep their mapping
            (self.directory / previous).unlink(missing_ok=True)

    def _graph(self) -> Any:
        if self.graph is None:
            if self.state.hnsw:
                self.graph = nearest_vectors.new_graph(self.state.width)
                self.graph.load(str(self.directory / self.state.hnsw))
            else:
                self.graph = nearest_vectors.new_graph(self.state.width)
        return self.graph

    def close(self) -> None:
        self.text.close()
        for lines in (self.keys, self.codes, self.ends):
            lines.close()


def _digest(texts: list[str]) -> int:
    """A hash of a row's texts that is never 0 (0: no text indexed)."""
    raw = hashlib.blake2b("\x00".join(texts).encode(), digest_size=8).digest()
    return int.from_bytes(raw, "little") | 1
