"""The explorer's facts around a set of entities (`_all_facts`): every fact out of or into
them, as one scan of the table returned them while they fit the limit, and a fair share
of each entity's facts when they do not."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import record_key
from kgapp.graph.search.elements import _all_facts

# What the explorer read before: one statement per direction, `IN` the entities (a scan
# of the whole table on 3.0.2), the facts out of them first.
SCANNED = f"""
SELECT {queries._GRAPH_FACT_FIELDS} FROM relates_to WHERE in IN $entities LIMIT $limit;
SELECT {queries._GRAPH_FACT_FIELDS} FROM relates_to WHERE out IN $entities LIMIT $limit;
"""
WHEN = datetime(2024, 1, 1, tzinfo=UTC)


def E(key: str) -> RecordID:
    return RecordID("entity", key)


async def graph(store, facts: list[tuple[str, str, str]]) -> None:
    names = sorted({end for _, a, b in facts for end in (a, b)} | {"lonely"})
    await store.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {"id": E(n), "name": n, "canonical_name": n, "entity_type": "Person"} for n in names
            ]
        },
    )
    await store.query(
        queries.FACTS_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("relates_to", key),
                    "in": E(a),
                    "out": E(b),
                    "relation": "KNOWS",
                    "fact": f"{a} knows {b}.",
                    "valid_at": WHEN,
                    "created_at": WHEN,
                }
                for key, a, b in facts
            ]
        },
    )


async def scanned(store, entities: list[RecordID], limit: int) -> list[str]:
    out, into = await store.query(SCANNED, {"entities": entities, "limit": limit})
    return list({record_key(f["id"]): f for f in (out or []) + (into or [])})[:limit]


async def test_the_facts_of_entities_that_fit_the_limit_come_as_a_scan_gave_them(
    migrated_store,
) -> None:
    store = await migrated_store()
    await graph(
        store,
        [
            ("f09", "ann", "bob"),
            ("f10", "bob", "ann"),
            ("f02", "bob", "cat"),
            ("f11", "cat", "dan"),
            ("f01", "dan", "ann"),
            ("f20", "ann", "ann"),
            ("f05", "eve", "dan"),
            ("f07", "cat", "bob"),
        ],
    )
    for entities in ([E("ann"), E("bob")], [E("cat"), E("dan"), E("ann")], [E("lonely")], []):
        for limit in (1, 3, 8, 50):
            facts = await _all_facts(store, entities, limit)
            shown = [record_key(f["id"]) for f in facts]
            if len(shown) < limit:  # all of them: the same facts in the same order
                assert shown == await scanned(store, entities, limit)
            else:
                assert len(shown) == limit == len(set(shown))


async def test_past_the_limit_every_entity_has_its_share(migrated_store) -> None:
    store = await migrated_store()
    facts = [(f"a{i:03}", "hub", f"p{i % 40}") for i in range(300)]
    facts += [(f"b{i:03}", f"q{i}", "mid") for i in range(12)]
    facts += [("c000", "small", "p1"), ("c001", "p2", "small")]
    await graph(store, facts)
    entities = [E("hub"), E("mid"), E("small"), E("lonely")]
    found = await _all_facts(store, entities, 20)
    assert len(found) == 20
    touching = Counter(
        next(e for e in ("hub", "mid", "small") if E(e) in (f["source"], f["target"]))
        for f in found
    )
    assert touching["small"] == 2 and touching["mid"] >= 5 and touching["hub"] >= 5
    # One entity with more facts than the limit, the others with none: it fills it.
    alone = await _all_facts(store, [E("lonely"), E("small"), E("hub")], 40)
    assert len(alone) == 40
    assert sum(1 for f in alone if f["source"] == E("hub")) == 38
