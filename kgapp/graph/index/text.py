"""BM25 over a table's text fields, in a tantivy index with the `kg_text` analysis.

A document is one row of the table's index: its text fields, and `row`, the row's
place in the columns (indexed, to delete it by; a fast field, to read it for each hit
without loading the document).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import tantivy

from kgapp.graph.index import analysis

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
    """Adds, replaces and deletes rows' documents; `commit` makes them visible."""

    def __init__(self, directory: Path, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self.index = _open(directory, fields)
        self._writer: tantivy.IndexWriter | None = None
        self.pending = False

    @property
    def writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self._writer = self.index.writer(WRITER_HEAP, 1)
        return self._writer

    def put(self, row: int, texts: Sequence[str], *, replace: bool) -> None:
        if replace:
            self.writer.delete_documents_by_term("row", row)
        document = tantivy.Document(row=row)
        for name, text in zip(self.fields, texts, strict=True):
            document.add_text(name, text)
        self.writer.add_document(document)
        self.pending = True

    def delete(self, row: int) -> None:
        self.writer.delete_documents_by_term("row", row)
        self.pending = True

    def delete_from(self, row: int) -> None:
        """Delete the documents of every row from `row` on, if there are any."""
        query = tantivy.Query.range_query(
            self.index.schema, "row", tantivy.FieldType.Integer, lower_bound=row
        )
        self.index.reload()
        if self.index.searcher().search(query, 1).hits:
            self.writer.delete_documents_by_query(query)
            self.pending = True

    def commit(self) -> int:
        """Make what was put visible; the commit's opstamp."""
        stamp = int(self.writer.commit())
        self.pending = False
        return stamp

    def close(self) -> None:
        """Let go of tantivy's writer lock (waiting for its merges)."""
        if self._writer is not None:
            self._writer.wait_merging_threads()
            self._writer = None


class TextReader:
    """Ranks rows by BM25; `reload` picks up the writer's latest commit."""

    def __init__(self, directory: Path, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self.index = _open(directory, fields)
        self.index.config_reader("Manual", 0)
        self.schema = self.index.schema

    def reload(self) -> None:
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
        found = searcher.search(tantivy.Query.boolean_query(clauses), limit)
        addresses = [address for _, address in found.hits]
        return np.asarray(searcher.fast_field_values("row", addresses), dtype=np.int64)

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
        found = searcher.search(tantivy.Query.boolean_query(clauses), limit, count=True)
        addresses = [address for _, address in found.hits]
        rows = np.asarray(searcher.fast_field_values("row", addresses), dtype=np.int64)
        scores = np.asarray([score for score, _ in found.hits], dtype=np.float32)
        total: int = getattr(found, "count", 0)  # asked for (count=True); not in tantivy's stub
        return rows, scores, total > len(addresses)
