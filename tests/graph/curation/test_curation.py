"""Merging duplicate entities and undoing the merge, on the real SurrealDB server."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import jobs, queries
from kgapp.graph.curation.common import CurationRefused
from kgapp.graph.curation.corrections import correct_fact, invalidate_fact
from kgapp.graph.curation.duplicates import candidates, decide_candidate, generate_candidates
from kgapp.graph.curation.merge import merge_entities
from kgapp.graph.curation.undo import undo
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.export.snapshot import export_graph
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.pipeline import ingest_job
from kgapp.graph.records import record_key
from kgapp.graph.store import TenantStore


def E(key: str) -> RecordID:
    return RecordID("entity", key)


def at(month: int) -> datetime:
    return datetime(2024, month, 1, tzinfo=UTC)


async def duplicate_graph(migrated_store) -> TenantStore:
    """Katherine and Kate are one person; both work at Acme (one fact to fold), Kate lives
    in Lisbon, superseded a Porto fact, is mentioned by an episode and is in a community."""
    store = await migrated_store()
    await store.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {"id": E(k), "name": n, "canonical_name": n.lower(), "entity_type": t}
                for k, n, t in (
                    ("kath", "Katherine Smith", "Person"),
                    ("kate", "Kate Smith", "Person"),
                    ("acme", "Acme Corp", "Organization"),
                    ("lisbon", "Lisbon", "Location"),
                    ("porto", "Porto", "Location"),
                )
            ]
        },
    )
    await store.query("""
        CREATE episode:ep1 CONTENT {name: 'e1', content: 'Kate Smith works at Acme Corp.',
            source: 'text', content_hash: 'h1', valid_at: d'2024-01-01T00:00:00Z'};
        CREATE episode:ep2 CONTENT {name: 'e2', content: 'Katherine Smith works at Acme Corp.',
            source: 'text', content_hash: 'h2', valid_at: d'2024-01-02T00:00:00Z'};
        RELATE episode:ep1->mentions->entity:kate; RELATE episode:ep1->mentions->entity:acme;
        RELATE episode:ep2->mentions->entity:kath;
        CREATE community:c1 CONTENT {name: 'Smiths'}; RELATE community:c1->has_member->entity:kate;
        INSERT INTO alias {name: 'kat smith', entity_type: 'Person', entity: entity:kate};
    """)
    facts = [
        (
            "kath_acme",
            "kath",
            "acme",
            "WORKS_AT",
            "Smith works at Acme Corp.",
            [RecordID("episode", "ep2")],
        ),
        (
            "kate_acme",
            "kate",
            "acme",
            "WORKS_AT",
            "Smith works at Acme Corp.",
            [RecordID("episode", "ep1")],
        ),
        ("kate_porto", "kate", "porto", "LIVES_IN", "Kate Smith lives in Porto.", []),
        ("kate_lisbon", "kate", "lisbon", "LIVES_IN", "Kate Smith lives in Lisbon.", []),
    ]
    await store.query(
        queries.FACTS_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("relates_to", k),
                    "in": E(s),
                    "out": E(o),
                    "relation": r,
                    "fact": f,
                    "episodes": eps,
                    "confidence": 0.8,
                    "valid_at": at(1),
                    "created_at": at(2),
                }
                for k, s, o, r, f, eps in facts
            ]
        },
    )
    await store.query("""
        UPDATE relates_to:kate_porto SET expired_at = d'2024-03-01T00:00:00Z',
            superseded_by = relates_to:kate_lisbon;
        UPDATE relates_to:kate_lisbon SET supersedes = relates_to:kate_porto;
    """)
    await store.query(
        queries.ENTITY_DEGREE_RECOUNT,
        {"ids": [E(k) for k in ("kath", "kate", "acme", "lisbon", "porto")]},
    )
    return store


def facts_by_text(export) -> dict[str, dict]:
    return {f["fact"]: f for f in export["relates_to"]}


async def test_merge_moves_everything_and_undo_restores_the_exact_graph(migrated_store) -> None:
    store = await duplicate_graph(migrated_store)
    original = await export_graph(store)

    entry = await merge_entities(store, E("kath"), E("kate"), actor="carol", reason="same person")
    merged = await export_graph(store)
    assert entry["action"] == "merge" and entry["actor"] == "carol"

    # No fact lost; none touches Kate any more.
    facts = facts_by_text(merged)
    assert set(facts) == {f["fact"] for f in original["relates_to"]}
    assert all(
        "entity:kate" not in (record_key(f["in"]), record_key(f["out"]))
        for f in merged["relates_to"]
    )
    # The two Acme facts are one, with both episodes; Porto -> Lisbon still linked.
    acme = facts["Smith works at Acme Corp."]
    assert len([f for f in merged["relates_to"] if f["fact"] == "Smith works at Acme Corp."]) == 1
    assert {record_key(e) for e in acme["episodes"]} == {"episode:ep1", "episode:ep2"}
    porto, lisbon = facts["Kate Smith lives in Porto."], facts["Kate Smith lives in Lisbon."]
    assert record_key(porto["superseded_by"]) == record_key(lisbon["id"])
    assert record_key(lisbon["supersedes"]) == record_key(porto["id"])
    assert record_key(lisbon["in"]) == "entity:kath"
    # Provenance and membership moved; names kept as aliases; Kate points at Katherine.
    assert {(record_key(m["in"]), record_key(m["out"])) for m in merged["mentions"]} == {
        ("episode:ep1", "entity:kath"),
        ("episode:ep1", "entity:acme"),
        ("episode:ep2", "entity:kath"),
    }
    assert [record_key(m["out"]) for m in merged["has_member"]] == ["entity:kath"]
    aliases = {a["name"]: record_key(a["entity"]) for a in merged["alias"]}
    assert aliases == {"kat smith": "entity:kath", "kate smith": "entity:kath"}
    entities = {record_key(e["id"]): e for e in merged["entity"]}
    assert record_key(entities["entity:kate"]["merged_into"]) == "entity:kath"
    assert entities["entity:kath"]["degree"] == 2  # Acme (folded) and Lisbon: current facts

    await undo(store, entry["id"], actor="carol")
    assert await export_graph(store) == original
    with pytest.raises(CurationRefused, match="undone already"):
        await undo(store, entry["id"], actor="carol")


async def test_merges_that_cannot_be_done_are_refused(migrated_store) -> None:
    store = await duplicate_graph(migrated_store)
    with pytest.raises(CurationRefused, match="itself"):
        await merge_entities(store, E("kate"), E("kate"), actor="c")
    await merge_entities(store, E("kath"), E("kate"), actor="c")
    with pytest.raises(CurationRefused, match="already merged into entity:kath"):
        await merge_entities(store, E("acme"), E("kate"), actor="c")


async def test_merge_while_ingesting_loses_and_orphans_nothing(migrated_store) -> None:
    store = await duplicate_graph(migrated_store)
    friends = [
        "Bob Dylan",
        "Nina Simone",
        "Miles Davis",
        "Ella Fitzgerald",
        "John Coltrane",
        "Billie Holiday",
    ]
    texts = [f"Kate Smith knows {name}." for name in friends]

    async def ingest() -> None:
        for text in texts:
            job = await jobs.job_create(store, kind="t")
            report = await ingest_job(
                store,
                job["id"],
                [EpisodeInput(content=text, source="text", reference_time=at(5))],
                embedder=local_embedder(),
                llm=None,
            )
            assert report.failures == []

    await asyncio.gather(ingest(), merge_entities(store, E("kath"), E("kate"), actor="c"))
    export = await export_graph(store)
    merged_away = {record_key(e["id"]) for e in export["entity"] if e.get("merged_into")}
    assert merged_away == {"entity:kate"}
    orphans = [
        f["fact"]
        for f in export["relates_to"]
        if {record_key(f["in"]), record_key(f["out"])} & merged_away
    ]
    assert orphans == []
    knows = [f for f in export["relates_to"] if f["relation"] == "KNOWS"]
    assert sorted(f["fact"] for f in knows) == sorted(texts)


async def test_candidates_come_once_per_pair_and_a_rejection_sticks(migrated_store) -> None:
    store = await duplicate_graph(migrated_store)
    embedder = local_embedder()
    for key, name in (
        ("kath", "Katherine Smith"),
        ("kate", "Kate Smith"),
        ("acme", "Acme Corp"),
        ("lisbon", "Lisbon"),
        ("porto", "Porto"),
    ):
        await store.query(
            "UPDATE $id SET name_embedding = $v", {"id": E(key), "v": embedder.embed([name])[0]}
        )
    assert await generate_candidates(store) >= 1
    queued = await candidates(store)
    pairs = {frozenset((record_key(c["a"]), record_key(c["b"]))): c for c in queued}
    smiths = pairs[frozenset(("entity:kath", "entity:kate"))]
    assert smiths["method"] == "embedding_band" or smiths["method"].startswith("name_")
    assert smiths["a_entity"]["name"] in ("Katherine Smith", "Kate Smith")
    kate_side = "a" if record_key(smiths["a"]) == "entity:kate" else "b"
    assert smiths[f"{kate_side}_aliases"] == ["kat smith"]
    assert "Kate Smith lives in Lisbon." in smiths[f"{kate_side}_facts"]
    # A person and an organisation are never paired; nothing is proposed twice.
    assert not [p for p in pairs if "entity:acme" in p and p & {"entity:kath", "entity:kate"}]
    assert await generate_candidates(store) == 0
    # Deferred: out of the pending queue, listed as deferred, decided later.
    later = await decide_candidate(store, smiths["id"], status="deferred", actor="carol")
    assert later["action"] == "candidate_deferred"
    assert smiths["id"] not in [c["id"] for c in await candidates(store)]
    assert [c["id"] for c in await candidates(store, status="deferred")] == [smiths["id"]]
    entry = await decide_candidate(store, smiths["id"], status="rejected", actor="carol")
    assert entry["action"] == "candidate_rejected"
    assert await generate_candidates(store) == 0  # never proposed again
    assert smiths["id"] not in [c["id"] for c in await candidates(store)]
    rejected = await candidates(store, status="rejected")
    assert [c["id"] for c in rejected] == [smiths["id"]]


async def test_invalidating_and_correcting_facts_keep_their_history(migrated_store) -> None:
    from kgapp.graph.search.history import fact_history
    from kgapp.graph.search.reads import entity_facts
    from kgapp.graph.time import Moment

    store = await duplicate_graph(migrated_store)
    lisbon = RecordID("relates_to", "kate_lisbon")
    entry = await invalidate_fact(store, lisbon, ended_at=at(6), actor="carol", reason="moved away")
    assert entry["action"] == "invalidate" and entry["reason"] == "moved away"
    now = [f["fact"] for f in await entity_facts(store, E("kate"), Moment.of())]
    assert "Kate Smith lives in Lisbon." not in now
    in_may = [f["fact"] for f in await entity_facts(store, E("kate"), Moment.of(as_of=at(5)))]
    assert "Kate Smith lives in Lisbon." in in_may
    with pytest.raises(CurationRefused, match="already retired"):
        await invalidate_fact(store, lisbon, ended_at=at(7), actor="carol")

    acme = RecordID("relates_to", "kate_acme")
    await correct_fact(
        store,
        acme,
        text="Kate Smith works at Acme Corp as CTO.",
        valid_at=at(2),
        embedder=None,
        actor="carol",
    )
    current = {f["fact"]: f for f in await entity_facts(store, E("kate"), Moment.of())}
    corrected = current["Kate Smith works at Acme Corp as CTO."]
    assert "Smith works at Acme Corp." not in current
    chain = await fact_history(store, corrected["id"])
    assert [record_key(f["id"]) for f in chain] == [
        "relates_to:kate_acme",
        record_key(corrected["id"]),
    ]
    with pytest.raises(CurationRefused, match="needs a text"):
        await correct_fact(
            store, corrected["id"], text="  ", valid_at=None, embedder=None, actor="carol"
        )
    # Nothing was deleted: both originals are still there, retired.
    export = await export_graph(store)
    retired = {record_key(f["id"]) for f in export["relates_to"] if f.get("expired_at")}
    assert {"relates_to:kate_lisbon", "relates_to:kate_acme"} <= retired
