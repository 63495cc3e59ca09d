"""BM25 postings over one text field, with the analysis of the database's `kg_text`
analyzer (see `analyzer`)."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable

import numpy as np

from kgapp.graph.index.analyzer import terms
from kgapp.graph.index.columns import Column

K1, B = 1.2, 0.75  # BM25, as SurrealDB's default


class Postings:
    """BM25 over one text field: term -> rows and term frequencies."""

    def __init__(self) -> None:
        self._rows: dict[str, array[int]] = {}
        self._counts: dict[str, array[int]] = {}
        self._frozen: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.lengths = Column(np.float32)
        self._total_length = 0.0
        self._documents = 0
        self._entries = 0  # postings held (kept as they grow: read on every search)

    def add(self, row: int, text: str) -> None:
        counted = Counter(terms(text))
        self.lengths.ensure(row + 1)
        length = sum(counted.values())
        self.lengths.data[row] = length
        self._total_length += length
        self._documents += 1
        self._entries += len(counted)
        for term, count in counted.items():
            self._rows.setdefault(term, array("I")).append(row)
            self._counts.setdefault(term, array("H")).append(min(count, 65535))
            self._frozen.pop(term, None)

    def scores(self, query: Iterable[str], size: int) -> np.ndarray:
        """BM25 of every row for the query's terms (each counted once), 0 where none."""
        scores = np.zeros(size, dtype=np.float32)
        if not self._documents:
            return scores
        average = self._total_length / self._documents
        for term in set(query):
            if term not in self._rows:
                continue
            rows, counts = self._arrays(term)
            idf = np.log1p((self._documents - len(rows) + 0.5) / (len(rows) + 0.5))
            norm = K1 * (1 - B + B * self.lengths.data[rows] / average)
            scores[rows] += idf * counts * (K1 + 1) / (counts + norm)
        return scores

    def _arrays(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        frozen = self._frozen.get(term)
        if frozen is None:
            frozen = (
                np.frombuffer(self._rows[term], dtype=np.uint32).astype(np.intp),
                np.frombuffer(self._counts[term], dtype=np.uint16).astype(np.float32),
            )
            self._frozen[term] = frozen
        return frozen

    @property
    def nbytes(self) -> int:
        return 6 * self._entries + self.lengths.data.nbytes
