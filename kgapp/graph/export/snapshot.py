"""A whole tenant's graph tables read at once, table by table in id order: for comparing
a graph before and after (tests, the demo's score, benchmarks). A tenant's export for
people (streamed, every table, typed JSON) is `jsonl.py`."""

from __future__ import annotations

from kgapp.graph import queries
from kgapp.graph.records import JsonObject
from kgapp.graph.store import TenantStore


# Rows of every graph table, as stored: each table's own fields, compared whole.
async def export_graph(store: TenantStore) -> dict[str, list[JsonObject]]:
    """Every record of the graph tables, by table, in id order."""
    results = await store.query(queries.GRAPH_EXPORT)
    return {
        table: list(rows or [])
        for table, rows in zip(queries.GRAPH_EXPORT_TABLES, results, strict=True)
    }
