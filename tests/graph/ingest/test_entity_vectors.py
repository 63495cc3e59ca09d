"""The worker's copy of a tenant's name vectors (resolution/vectors.py), topped up from the
real SurrealDB server: what it holds, what it reads again, and what it never offers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.resolution.vectors import OVERLAP, EntityVectors


def unit(seed: int) -> list[float]:
    vector = np.random.default_rng(seed).normal(size=384)
    return (vector / np.linalg.norm(vector)).tolist()


async def add(store, key: str, created: datetime, **row) -> None:
    await store.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("entity", key),
                    "name": key.title(),
                    "canonical_name": key,
                    "entity_type": "Person",
                    "name_embedding": unit(len(key) * 31 + ord(key[0])),
                    "created_at": created,
                    **row,
                }
            ]
        },
    )


class Reads:
    """The real store, counting the rows its name-vector queries answered."""

    def __init__(self, store) -> None:
        self.store, self.rows = store, 0

    async def query_one(self, sql, params=None):
        answer = await self.store.query_one(sql, params)
        self.rows += len([row for row in answer or [] if row])
        return answer


async def test_entities_created_since_are_added_once(migrated_store) -> None:
    store = await migrated_store()
    now = datetime.now(UTC)
    await add(store, "ann", now - timedelta(minutes=5))
    vectors, reads = EntityVectors(), Reads(store)
    await vectors.refresh(reads)
    await add(store, "bob", now)
    await vectors.refresh(reads)
    assert [row["name"] for row in vectors.nearest(unit(3 * 31 + ord("b")), 1)] == ["Bob"]
    before = reads.rows
    await vectors.refresh(reads)  # Bob is within the overlap: held, so not read again
    assert reads.rows == before
    assert sorted(row["name"] for row in vectors.nearest(unit(0), 5)) == ["Ann", "Bob"]


async def test_an_entity_committed_late_within_the_overlap_is_still_found(migrated_store) -> None:
    """Writers commit out of created_at order: an entity created a moment before the
    newest one held, but committed after it was read, is read by the next top-up."""
    store = await migrated_store()
    now = datetime.now(UTC)
    await add(store, "newest", now)
    vectors = EntityVectors()
    await vectors.refresh(store)
    await add(store, "late", now - OVERLAP / 2)
    await add(store, "too late", now - OVERLAP * 2)  # older than the overlap: a rebuild's
    await vectors.refresh(store)
    held = {row["name"] for row in vectors.nearest(unit(0), 5)}
    assert held == {"Newest", "Late"}


async def test_merged_entities_and_those_without_a_vector_are_never_offered(
    migrated_store,
) -> None:
    store = await migrated_store()
    now = datetime.now(UTC)
    await add(store, "kept", now - timedelta(minutes=1))
    vectors = EntityVectors()
    await vectors.refresh(store)
    await add(store, "gone", now, merged_into=RecordID("entity", "kept"))
    await add(store, "blank", now, name_embedding=None)
    await vectors.refresh(store)
    await vectors.refresh(store)
    assert [row["name"] for row in vectors.nearest(unit(0), 5)] == ["Kept"]
