"""BM25 over a table's text fields, in a tantivy index with the `kg_text` analysis.

A document is one row of the table's index: its text fields, and `row`, the row's
place in the columns (indexed, to delete it by; a fast field, to read it for each hit
without loading the document). What the writer put since tantivy's last commit is
logged in the table's tail (tail.py), which readers search beside the commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import tantivy

from kgapp.graph.index import analysis
from kgapp.graph.index.tail import Entry, TailLog, TailTerms, read_entries

WRITER_HEAP = 32 * 2**20  # bytes for the writer's one thread; more only flushes later


def _schema(fields: Sequence[str]) -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name in fields:
        builder.add_text_field(name, tokenizer_name=analysis.NAME, index_option="freq")
    builder.add_integer_field("row", indexed=True, fast=True)
    return builder.build()


def _open(directory: Path, fields: Sequence[str]) -> tantivy.Index:
    directory.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(_schema(fields), path=str(directory), reuse=True)
    index.register_tokenizer(analysis.NAME, analysis.ANALYZER)
    return index


class TextWriter:
    """Adds, replaces and deletes rows' documents, each logged in the tail (kept in
    `tail_dir`); `publish` makes them visible through the tail, `commit` through
    tantivy, durably."""

    def __init__(self, directory: Path, fields: Sequence[str], tail_dir: Path) -> None:
        self.fields = tuple(fields)
        self.index = _open(directory, fields)
        self._writer: tantivy.IndexWriter | None = None
        self.pending = False
        self.log = TailLog(tail_dir)

    @property
    def writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self._writer = self.index.writer(WRITER_HEAP, 1)
        return self._writer

    def put(self, row: int, texts: Sequence[str], *, replace: bool, log: bool = True) -> None:
        if replace:
            self.writer.delete_documents_by_term("row", row)
        document = tantivy.Document(row=row)
        for name, text in zip(self.fields, texts, strict=True):
            document.add_text(name, text)
        self.writer.add_document(document)
        self.pending = True
        if log:
            self.log.add(Entry(row, tuple(texts)))

    def delete(self, row: int, *, log: bool = True) -> None:
        self.writer.delete_documents_by_term("row", row)
        self.pending = True
        if log:
            self.log.add(Entry(row, None))

    def delete_from(self, row: int) -> None:
        """Delete the documents of every row from `row` on, if there are any."""
        query = tantivy.Query.range_query(
            self.index.schema, "row", tantivy.FieldType.Integer, lower_bound=row
        )
        self.index.reload()
        if self.index.searcher().search(query, 1).hits:
            self.writer.delete_documents_by_query(query)
            self.pending = True

    def replay(self, name: str, size: int) -> list[Entry]:
        """Put a tail a writer left (named by the manifest) into tantivy again, to be
        committed; its entries. Raises OSError or ValueError when it cannot be read."""
        entries = read_entries(self.log.directory / name, 0, size)
        for entry in entries:
            if entry.texts is None:
                self.delete(entry.row, log=False)
            else:
                self.put(entry.row, entry.texts, replace=True, log=False)
        return entries

    def publish(self, generation: int) -> tuple[str, int]:
        """Make what was put visible to readers without committing: the tail's file
        and size."""
        return self.log.publish(generation)

    def commit(self) -> int:
        """Make what was put visible and durable: the commit's opstamp."""
        stamp = int(self.writer.commit())
        self.pending = False
        self.log.clear()
        return stamp

    def close(self) -> None:
        """Let go of tantivy's writer lock (waiting for its merges); what was not
        committed stays in the tail's file for the next writer."""
        self.log.close()
        if self._writer is not None:
            self._writer.wait_merging_threads()
            self._writer = None


class TextReader:
    """Ranks rows by BM25: tantivy's latest commit that `update` took up, and the tail
    the manifest names, whose rows' committed documents are left out."""

    def __init__(self, directory: Path, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self.index = _open(directory, fields)
        self.index.config_reader("Manual", 0)
        self.schema = self.index.schema
        self.tail = TailTerms(self.fields)

    def reload(self) -> None:
        self.index.reload()

    def update(self, committed: bool, tail: Path | None, size: int) -> None:
        """Take up the manifest's tail (the file and its size; None: none), and
        tantivy's latest commit if `committed` changed or the tail was committed since."""
        if not self.tail.read_to(tail, size) or committed:
            self.index.reload()

    def matching(self, query: str, limit: int) -> np.ndarray:
        """Rows whose text holds every term of the query (in any text field), at most
        `limit`, the best by BM25 first; none for a query with no terms."""
        wanted = sorted(set(analysis.terms(query)))
        if not wanted:
            return np.zeros(0, dtype=np.int64)
        clauses = [
            (
                tantivy.Occur.Must,
                tantivy.Query.boolean_query(
                    [
                        (tantivy.Occur.Should, tantivy.Query.term_query(self.schema, field, term))
                        for field in self.fields
                    ]
                ),
            )
            for term in wanted
        ]
        searcher = self.index.searcher()
        rows, scores, _ = self._committed(searcher, tantivy.Query.boolean_query(clauses), limit)
        if self.tail.docs:
            matching = self.tail.matching(wanted)
            rows, scores = self._with_tail(searcher, rows, scores, wanted, matching)
        return rows[:limit]

    def search(self, query: str, limit: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """The best `limit` rows for the query's terms (each once, in every text field),
        their scores, and whether more rows match."""
        wanted = sorted(set(analysis.terms(query)))
        if not wanted:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), False
        clauses = [
            (tantivy.Occur.Should, tantivy.Query.term_query(self.schema, field, term))
            for field in self.fields
            for term in wanted
        ]
        searcher = self.index.searcher()
        rows, scores, more = self._committed(searcher, tantivy.Query.boolean_query(clauses), limit)
        if self.tail.docs:
            rows, scores = self._with_tail(searcher, rows, scores, wanted, None)
        return rows[:limit], scores[:limit], more or len(rows) > limit

    def _committed(
        self, searcher: tantivy.Searcher, query: tantivy.Query, limit: int
    ) -> tuple[np.ndarray, np.ndarray, bool]:
        """The best `limit` committed documents of rows the tail does not hold, by score,
        and whether more may match (asked for again, more, while the tail hid too many; a
        row of the tail is in a commit taken up after the manifest named the tail)."""
        held = np.fromiter(self.tail.docs, dtype=np.int64, count=len(self.tail.docs))
        ask = max(limit, 1)
        while True:
            found = searcher.search(query, ask, count=True)
            addresses = [address for _, address in found.hits]
            rows = np.asarray(searcher.fast_field_values("row", addresses), dtype=np.int64)
            scores = np.asarray([score for score, _ in found.hits], dtype=np.float32)
            total: int = getattr(found, "count", 0)  # asked for; not in tantivy's stub
            if len(held):
                kept = ~np.isin(rows, held)
                rows, scores = rows[kept], scores[kept]
            unread = total > len(addresses)
            if len(rows) >= limit or not unread:
                return rows, scores, unread or len(rows) > limit
            ask *= 4

    def _with_tail(
        self,
        searcher: tantivy.Searcher,
        rows: np.ndarray,
        scores: np.ndarray,
        wanted: list[str],
        among: set[int] | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The committed rows and the tail's (those `among`, if given) by score, best
        first (ties by row)."""
        tail_rows, tail_scores = self.tail.scores(
            wanted, lambda field, term: int(searcher.doc_freq(field, term)), searcher.num_docs
        )
        if among is not None:
            chosen = np.isin(tail_rows, np.fromiter(among, dtype=np.int64, count=len(among)))
            tail_rows, tail_scores = tail_rows[chosen], tail_scores[chosen]
        rows = np.concatenate([rows, tail_rows])
        scores = np.concatenate([scores, tail_scores])
        order = np.lexsort((rows, -scores))
        return rows[order], scores[order]
