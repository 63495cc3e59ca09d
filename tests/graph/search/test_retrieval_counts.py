"""Retrieval counts written by searches that run at once (issue 32: two web servers
answering the same search): each search counts its facts once, and none fails because
another wrote the same counters (was: 409 "concurrent change" for the search that lost
the commit, and its counts lost)."""

from __future__ import annotations

import asyncio

from surrealdb.data.types.record_id import RecordID

from kgapp.graph.search.model import Hit
from kgapp.graph.search.retrieval_counts import count_retrievals

FACTS = 20
ROUNDS = 30
AT_ONCE = 3


async def test_searches_at_once_count_every_retrieval_once(migrated_store) -> None:
    store = await migrated_store()
    hits = [
        Hit(
            id=f"relates_to:f{n}",
            score=1.0,
            found_by=["bm25"],
            record={"id": RecordID("relates_to", f"f{n}")},
        )
        for n in range(FACTS)
    ]
    for _ in range(ROUNDS):
        await asyncio.gather(*(count_retrievals(store, hits) for _ in range(AT_ONCE)))
    counts = await store.query_one("SELECT VALUE count FROM retrieval")
    assert counts == [float(ROUNDS * AT_ONCE)] * FACTS
