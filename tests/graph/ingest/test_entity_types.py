"""One type per name per tenant (issue 27): a name that extraction types one way in one
episode and another way in the next is one entity, whose type is the one most of its
mentions give (kgapp/graph/ontology.py, `mention_type`); withdrawing mentions, merging
and undoing keep it so. The real SurrealDB server, the real local embeddings."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.curation.duplicates import generate_candidates
from kgapp.graph.curation.merge import merge_entities
from kgapp.graph.curation.undo import undo
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.ingest.service import episodes_remove, fact_add
from kgapp.graph.ontology import mention_type
from tests.graph.ingest.stages import FEB, JAN, JUN, MAR, entity, episode, write

APR = datetime(2024, 4, 2, tzinfo=UTC)


async def typed(store, name: str, entity_type: str, when: datetime, text: str = ""):
    """An episode that mentions `name` as `entity_type`; its record."""
    work = await write(
        store,
        episode(text or f"{name} as {entity_type} on {when}.", when, [entity(name, entity_type)]),
    )
    return work.record


async def entities(store, name: str) -> list[tuple[str, str]]:
    rows = await store.query_one(
        "SELECT name, entity_type FROM entity WHERE canonical_name = $name AND merged_into = NONE",
        {"name": name.casefold()},
    )
    return sorted((r["name"], r["entity_type"]) for r in rows or [])


def test_a_mention_gives_its_most_specific_type() -> None:
    assert mention_type(["Person"]) == "Person"
    assert mention_type(["Entity", "Concept", "Location", "Person"]) == "Location"
    assert mention_type(["Entity", "Concept"]) == "Concept"
    assert mention_type(["Entity"]) == "Entity"


async def test_a_name_typed_two_ways_is_one_entity_of_the_type_most_mentions_give(
    migrated_store,
) -> None:
    store = await migrated_store()
    await typed(store, "Manchester", "Person", JAN)
    assert await entities(store, "Manchester") == [("Manchester", "Person")]
    await typed(store, "Manchester", "Location", FEB)
    assert await entities(store, "Manchester") == [("Manchester", "Person")]  # a tie: first
    await typed(store, "Manchester", "Location", MAR)
    assert await entities(store, "Manchester") == [("Manchester", "Location")]
    mentions = await store.query_one(
        "SELECT VALUE out.name FROM mentions WHERE out.canonical_name = 'manchester'"
    )
    assert mentions == ["Manchester"] * 3


async def test_a_tie_goes_to_the_type_said_first_whatever_the_order_of_upload(
    migrated_store,
) -> None:
    store = await migrated_store()
    await typed(store, "Jordan", "Location", MAR)
    await typed(store, "Jordan", "Person", JAN)  # uploaded later, but said of January
    assert await entities(store, "Jordan") == [("Jordan", "Person")]


async def test_a_broad_type_gives_way_to_a_specific_one(migrated_store) -> None:
    store = await migrated_store()
    for n, when in enumerate([JAN, FEB, MAR]):
        await typed(store, "Python", "Concept", when, f"Python, said {n}.")
    await typed(store, "Python", "Entity", APR)
    assert await entities(store, "Python") == [("Python", "Concept")]
    await typed(store, "Python", "Product", JUN)
    assert await entities(store, "Python") == [("Python", "Product")]


async def test_withdrawing_mentions_gives_the_type_the_rest_give(migrated_store) -> None:
    store = await migrated_store()
    await typed(store, "Manchester", "Person", JAN)
    second = await typed(store, "Manchester", "Location", FEB)
    third = await typed(store, "Manchester", "Location", MAR)
    assert await entities(store, "Manchester") == [("Manchester", "Location")]
    await episodes_remove(store, [third])
    assert await entities(store, "Manchester") == [("Manchester", "Person")]
    await episodes_remove(store, [second])
    assert await entities(store, "Manchester") == [("Manchester", "Person")]


async def test_a_merge_and_its_undo_keep_the_type_the_mentions_give(migrated_store) -> None:
    store = await migrated_store()
    await typed(store, "Ortega Labs", "Organization", JAN)
    for when in (FEB, MAR):
        await typed(store, "Ortega", "Person", when)
    [kept] = await store.query_one("SELECT VALUE id FROM entity WHERE name = 'Ortega Labs'")
    [gone] = await store.query_one("SELECT VALUE id FROM entity WHERE name = 'Ortega'")
    entry = await merge_entities(store, kept, gone, actor="curator")
    assert await entities(store, "Ortega Labs") == [("Ortega Labs", "Person")]  # 2 of 3 say so
    await undo(store, entry["id"], actor="curator")
    assert await entities(store, "Ortega Labs") == [("Ortega Labs", "Organization")]
    assert await entities(store, "Ortega") == [("Ortega", "Person")]


async def test_writers_typing_one_name_two_ways_at_once_make_one_entity(migrated_store) -> None:
    """Two API calls at once, one saying Manchester is a place and one a person: the
    second finds the first's record (one key per name), or conflicts and re-reads."""
    store = await migrated_store()

    async def post(kind: str, target: str) -> None:
        await fact_add(
            store,
            source=("Manchester", kind),
            relation="RELATED_TO",
            target=(target, "Organization"),
            fact=None,
            valid_at=JAN,
            invalid_at=None,
            confidence=0.9,
            embedder=local_embedder(),
            created_by="t",
        )

    for round_ in range(3):
        await asyncio.gather(post("Location", f"Acme {round_}"), post("Person", f"Beta {round_}"))
    found = await entities(store, "Manchester")
    assert len(found) == 1, found
    mentions = await store.query_one(
        "SELECT VALUE out.name FROM mentions WHERE out.canonical_name = 'manchester'"
    )
    assert mentions == ["Manchester"] * 6


async def test_two_entities_of_one_name_written_before_are_proposed_as_one(migrated_store) -> None:
    """A tenant may hold a name twice from before one type per name: the duplicate job
    proposes the pair, where it would not propose a person and a place otherwise."""
    store = await migrated_store()
    vector = local_embedder().embed(["Manchester"])[0]
    await store.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("entity", key),
                    "name": "Manchester",
                    "canonical_name": "manchester",
                    "entity_type": kind,
                    "name_embedding": vector,
                }
                for key, kind in (("person", "Person"), ("place", "Location"))
            ]
        },
    )
    await generate_candidates(store)
    pairs = await store.query_one(
        "SELECT a.entity_type AS a, b.entity_type AS b FROM dedup_candidate"
    )
    assert [sorted((p["a"], p["b"])) for p in pairs] == [["Location", "Person"]]


async def test_the_match_key_follows_the_type(migrated_store) -> None:
    """ "Mt. Hood" reads as Mount Hood only as a place: the key resolution looks up by
    changes with the type, as the mentions give it and when they are withdrawn."""
    store = await migrated_store()

    async def key() -> list[tuple[str, str]]:
        rows = await store.query_one("SELECT entity_type, match_key FROM entity")
        return [(r["entity_type"], r["match_key"]) for r in rows]

    await typed(store, "Mt. Hood", "Person", JAN)
    second = await typed(store, "Mt. Hood", "Location", FEB)
    await typed(store, "Mt. Hood", "Location", MAR)
    assert await key() == [("Location", "mounthood")]
    await episodes_remove(store, [second])
    assert await key() == [("Person", "mthood")]
