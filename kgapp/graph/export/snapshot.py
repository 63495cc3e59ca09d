"""A whole tenant's graph tables read at once, table by table in id order: for comparing
a graph before and after (tests, the demo's score, benchmarks). A tenant's export for
people (streamed, every table, typed JSON) is `jsonl.py`."""

from __future__ import annotations

from typing import Any

from kgapp.graph import queries
from kgapp.graph.store import TenantStore


async def export_graph(store: TenantStore) -> dict[str, list[dict[str, Any]]]:
    """Every record of the graph tables, by table, in id order."""
    results = await store.query(queries.GRAPH_EXPORT)
    return {
        table: list(rows or [])
        for table, rows in zip(queries.GRAPH_EXPORT_TABLES, results, strict=True)
    }
