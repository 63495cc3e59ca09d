"""In-process search indexes over one tenant's facts and entities.

SurrealDB 3.0.2 has no vector index isolated per namespace and its full-text search
reads every matching record before it can rank (tens of milliseconds at 10k facts,
docs/surrealdb-notes.md). Search therefore ranks from a copy held in the process:
BM25 postings (the `kg_text` analysis, see `analyzer`), unit vectors as one float32
matrix, and the four timestamps as int64 columns, so a point-in-time filter is a
vector comparison. The database stays the source of truth:

- every search first applies what the table's changefeed (schema/0001) recorded since
  the last one, in commit order: creates, updates (a retirement, an embedding added)
  and deletes, so a transaction that committed late is never missed;
- the ranked candidates are read back from the database, so a result is never a
  stale row, and a candidate that no longer exists is dropped from the copy;
- a namespace deleted and provisioned again has a new first migration record, which
  is the copy's epoch: a new epoch starts a new copy.

The rooms: `analyzer` (the text analysis), `postings` (BM25), `columns` (growable
arrays, timestamps as integers), `table` (SearchIndex: following the change feed,
ranking), `facts` and `entities` (the two indexes), `cache` (the indexes of this
process, per tenant) and `unit_vectors` (the passage vectors of episodes).
"""

from __future__ import annotations

from kgapp.graph.index.cache import entity_index, fact_index
from kgapp.graph.index.columns import NEVER, micros
from kgapp.graph.index.entities import EntityIndex
from kgapp.graph.index.facts import FactIndex
from kgapp.graph.index.postings import K1, B, Postings
from kgapp.graph.index.table import SearchIndex
from kgapp.graph.index.unit_vectors import unit_vectors

__all__ = [
    "B",
    "K1",
    "NEVER",
    "EntityIndex",
    "FactIndex",
    "Postings",
    "SearchIndex",
    "entity_index",
    "fact_index",
    "micros",
    "unit_vectors",
]
