"""A fact's history: the supersession chain through it, revisions and the facts that
ended it included."""

from __future__ import annotations

from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import Fact, record_key
from kgapp.graph.search.reads import fact_get
from kgapp.graph.store import TenantStore

HISTORY_HOPS = 64


async def fact_history(store: TenantStore, fact: RecordID) -> list[Fact]:
    """The supersession chain through `fact`, oldest first, in both directions (at most
    64 hops each way). A retired fact is followed by its revision (the same fact with its
    validity closed), then by the fact that ended it."""
    start = await fact_get(store, fact)
    chain = [start]
    seen = {record_key(start["id"])}
    for backwards in (True, False):
        current = start
        for _ in range(HISTORY_HOPS):
            link = await _next_link(store, current, backwards=backwards)
            if link is None or record_key(link) in seen:
                break
            row = await fact_get(store, link)
            seen.add(record_key(link))
            chain.insert(0, row) if backwards else chain.append(row)
            current = row
    return chain


async def _next_link(store: TenantStore, fact: Fact, *, backwards: bool) -> Any:
    if backwards:
        return fact.get("revision_of") or fact.get("supersedes")
    revisions = await store.query_one(queries.FACT_REVISIONS, {"id": fact["id"]}) or []
    return revisions[0] if revisions else fact.get("superseded_by")
