"""The text a table's writer put since tantivy's last commit: its tail.

tantivy makes a document visible only by committing, and a commit writes and syncs a
dozen files (9-17 ms on a disk, every pass). So the indexer commits tantivy when the
tail is old or long enough, or when a pass finds nothing new (`indexer.CHECKPOINT_EVERY`),
and between commits logs each put and delete here, in a file beside the table that the
manifest names and measures. A reader (`TailTerms`) searches the logged texts itself,
with tantivy's BM25, and leaves out the committed documents they replace; a writer that
opens an index whose manifest names a tail puts its texts into tantivy again
(`read_entries`), then commits. A manifest with a tail is trusted only on the boot that
wrote it (`directories.trusted`): its files were not yet synced to the disk.

One line per entry, JSON: `[row, [texts...]]` for a put, `[row]` for a delete.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from kgapp.graph.index import analysis

PATTERN = "tail-*.jsonl"


@dataclass(frozen=True)
class Entry:
    row: int
    texts: tuple[str, ...] | None  # None: deleted


def _line(entry: Entry) -> bytes:
    raw = [entry.row] if entry.texts is None else [entry.row, list(entry.texts)]
    return (json.dumps(raw, ensure_ascii=False) + "\n").encode()


def read_entries(path: Path, start: int, size: int) -> list[Entry]:
    """The entries between byte `start` and `size` of a tail file. Raises
    FileNotFoundError when it is gone, ValueError when it holds less than `size`."""
    with open(path, "rb") as handle:
        handle.seek(start)
        chunk = handle.read(size - start)
    if len(chunk) != size - start or (chunk and not chunk.endswith(b"\n")):
        raise ValueError(f"{path.name} holds less than its manifest says")
    entries = []
    for line in chunk.decode().splitlines():
        raw = json.loads(line)
        texts = tuple(str(t) for t in raw[1]) if len(raw) > 1 else None
        entries.append(Entry(int(raw[0]), texts))
    return entries


class TailLog:
    """The writer's side: entries go to the current tail's file when published."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.name = ""  # the current tail's file ("": none since the last commit)
        self.size = 0  # bytes published
        self.entries = 0  # entries logged since the last commit, published or not
        self._pending: list[bytes] = []
        self._handle: IO[bytes] | None = None

    def add(self, entry: Entry) -> None:
        self._pending.append(_line(entry))
        self.entries += 1

    def publish(self, generation: int) -> tuple[str, int]:
        """Write what was logged (no sync: readers on this machine see it); the tail's
        file and size for the manifest."""
        if self._pending:
            if self._handle is None:
                self.name = f"tail-{generation}.jsonl"
                self._handle = open(self.directory / self.name, "wb")  # noqa: SIM115
                self.size = 0
            data = b"".join(self._pending)
            self._handle.write(data)
            self._handle.flush()
            self.size += len(data)
            self._pending.clear()
        return self.name, self.size

    def clear(self) -> None:
        """tantivy committed every entry: the tail and any older one's file go (a
        reader that finds its tail gone takes up the commit instead)."""
        self.close()
        self._pending.clear()
        self.name, self.size, self.entries = "", 0, 0
        for stale in self.directory.glob(PATTERN):
            stale.unlink(missing_ok=True)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


DocFreq = Callable[[str, str], int]  # (field, term) -> documents of the committed index


class TailTerms:
    """The reader's side: the tail's documents, term counts per field, searched with
    BM25 (K1, B as tantivy's) from the committed index's document frequencies plus the
    tail's own, and the tail's average field lengths."""

    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self.path: Path | None = None
        self.read_bytes = 0
        self.docs: dict[int, list[Counter[str]] | None] = {}
        self.postings: list[dict[str, set[int]]] = [{} for _ in self.fields]
        self.lengths = [0] * len(self.fields)  # tokens in the tail's live documents

    @property
    def live(self) -> int:
        return sum(doc is not None for doc in self.docs.values())

    def reset(self) -> None:
        self.__init__(self.fields)  # type: ignore[misc]

    def read_to(self, path: Path | None, size: int) -> bool:
        """Take up the tail's file as far as `size` (None: no tail). False when the
        file is gone: tantivy committed it since, so the reader must reload."""
        if path != self.path:
            self.reset()
            self.path = path
        if path is None or size <= self.read_bytes:
            return True
        try:
            entries = read_entries(path, self.read_bytes, size)
        except FileNotFoundError:
            self.reset()
            return False
        for entry in entries:
            self._apply(entry)
        self.read_bytes = size
        return True

    def _apply(self, entry: Entry) -> None:
        old = self.docs.get(entry.row)
        if old is not None:
            for number, counts in enumerate(old):
                for term in counts:
                    self.postings[number][term].discard(entry.row)
                self.lengths[number] -= counts.total()
        if entry.texts is None:
            self.docs[entry.row] = None
            return
        doc = [Counter(analysis.terms(text)) for text in entry.texts]
        for number, counts in enumerate(doc):
            for term in counts:
                self.postings[number].setdefault(term, set()).add(entry.row)
            self.lengths[number] += counts.total()
        self.docs[entry.row] = doc

    def matching(self, wanted: Sequence[str]) -> set[int]:
        """Rows holding every wanted term, in any field."""
        found: set[int] | None = None
        for term in wanted:
            having: set[int] = set()
            for postings in self.postings:
                having |= postings.get(term, set())
            found = having if found is None else found & having
        return found or set()

    def scores(
        self, wanted: Sequence[str], doc_freq: DocFreq, committed: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows with any wanted term and their BM25: each (field, term) once."""
        live = self.live
        total_docs = committed + live
        totals: dict[int, float] = {}
        for number, field in enumerate(self.fields):
            average = self.lengths[number] / live if live else 1.0
            for term in wanted:
                having = self.postings[number].get(term)
                if not having:
                    continue
                n = doc_freq(field, term) + len(having)
                idf = math.log(1 + (total_docs - n + 0.5) / (n + 0.5))
                for row in having:
                    counts = self.docs[row]
                    assert counts is not None
                    tf, length = counts[number][term], counts[number].total()
                    norm = 1 - analysis.B + analysis.B * length / (average or 1.0)
                    weight = idf * tf * (analysis.K1 + 1) / (tf + analysis.K1 * norm)
                    totals[row] = totals.get(row, 0.0) + weight
        rows = np.fromiter(totals.keys(), dtype=np.int64, count=len(totals))
        return rows, np.fromiter(totals.values(), dtype=np.float32, count=len(totals))
