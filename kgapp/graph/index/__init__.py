"""Search indexes: one per tenant per machine, on disk, kept up to date by one writer.

SurrealDB 3.0.2 has no vector index isolated per namespace and its full-text search
reads every matching record before it can rank (tens of milliseconds at 10k facts,
docs/surrealdb-notes.md). Search therefore ranks from an index of its own, derived
from the database and rebuilt from it whenever it is missing:

- BM25 in tantivy, with the `kg_text` analysis (`analysis`, `text`);
- unit vectors as a memory-mapped matrix, with a usearch graph over them once a table
  has many (`vectors`);
- the four timestamps, codes and ends as memory-mapped columns, so a point-in-time
  filter is a vector comparison (`columns`, `facts`, `entities`).

Every process on the machine maps the same files. One writer applies the change feed
(`indexer`: the indexer process, or each searching process in turn when none runs),
publishes what it put (tantivy's text is committed when due; until then readers search
the `tail` of text put since), and writes the manifest last (`layout`); readers take up
a new manifest on their next search (`cache`). Searches read the ranked candidates back from the
database, so a result is never a stale row. `unit_vectors` keeps the passage vectors of
episodes that a query quotes.
"""

from __future__ import annotations

from kgapp.graph.index.cache import TenantIndex, entity_index, fact_index, tenant_index
from kgapp.graph.index.columns import NEVER, micros
from kgapp.graph.index.entities import EntityIndex
from kgapp.graph.index.facts import FactIndex
from kgapp.graph.index.unit_vectors import unit_vectors

__all__ = [
    "NEVER",
    "EntityIndex",
    "FactIndex",
    "TenantIndex",
    "entity_index",
    "fact_index",
    "micros",
    "tenant_index",
    "unit_vectors",
]
