"""persist on its own: one episode and everything it changes, written in one
transaction, on the real SurrealDB server with the real local embeddings."""

from __future__ import annotations

from functools import partial

import pytest

from kgapp.graph.errors import QueryFailed
from kgapp.graph.ingest.indexing import embed_episode
from kgapp.graph.ingest.persist import persist
from kgapp.graph.ingest.prepare import prepare
from kgapp.graph.records import to_json
from kgapp.graph.resolution.entities import resolve_entities
from kgapp.graph.resolution.facts import existing_facts, resolve_facts
from tests.graph.ingest.stages import JAN, MAR, context, entity, episode, fact, said, write


async def resolved(store, work):
    """The context and the summaries, `work` resolved and ready to persist."""
    ctx = await context(store)
    await resolve_entities(ctx, work, partial(embed_episode, ctx, work))
    known, summaries = await existing_facts(ctx, work)
    resolve_facts(ctx, work, known)
    return ctx, summaries


def alice_at_acme(when=JAN, summary="Alice is an engineer."):
    alice, acme = entity("Alice Moreau", summary=summary), entity("Acme Corp", "Organization")
    text = f"Alice works at Acme Corp. ({when:%B})"
    return episode(text, when, [alice, acme], [fact(alice, "WORKS_AT", acme, when)])


async def graph(store) -> dict:
    """Everything persist writes, in a comparable form."""
    return to_json(
        {
            "episodes": await store.query_one(
                "SELECT id, content, valid_at, content_hash FROM episode ORDER BY id"
            ),
            "entities": await store.query_one(
                "SELECT name, entity_type, summary, degree, first_seen_at, last_seen_at, "
                "merged_into FROM entity ORDER BY name"
            ),
            "facts": await store.query_one(
                "SELECT in.name AS source, relation, out.name AS target, fact, episodes, valid_at, "
                "invalid_at, expired_at FROM relates_to ORDER BY fact"
            ),
            "mentions": sorted(
                await store.query_one("SELECT VALUE [<string> in, out.name] FROM mentions")
            ),
        }
    )


async def test_persist_writes_the_episode_its_entities_and_facts(migrated_store) -> None:
    store = await migrated_store()
    work = alice_at_acme()
    ctx, summaries = await resolved(store, work)
    await persist(ctx, work, summaries)
    written = await graph(store)
    episode_id = str(work.record)
    assert written["episodes"] == [
        {
            "id": episode_id,
            "content": "Alice works at Acme Corp. (January)",
            "valid_at": "2024-01-15T00:00:00Z",
            "content_hash": work.content_hash,
        }
    ]
    seen = {"first_seen_at": "2024-01-15T00:00:00Z", "last_seen_at": "2024-01-15T00:00:00Z"}
    assert written["entities"] == [
        {
            "name": "Acme Corp",
            "entity_type": "Organization",
            "summary": "",
            "degree": 1,
            "merged_into": None,
            **seen,
        },
        {
            "name": "Alice Moreau",
            "entity_type": "Person",
            "summary": "Alice is an engineer.",
            "degree": 1,
            "merged_into": None,
            **seen,
        },
    ]
    assert written["facts"] == [
        {
            "source": "Alice Moreau",
            "relation": "WORKS_AT",
            "target": "Acme Corp",
            "fact": "Alice Moreau WORKS_AT Acme Corp.",
            "episodes": [episode_id],
            "valid_at": "2024-01-15T00:00:00Z",
            "invalid_at": None,
            "expired_at": None,
        }
    ]
    assert written["mentions"] == [[episode_id, "Acme Corp"], [episode_id, "Alice Moreau"]]
    assert ctx.counts["episodes"] == 1 and work.facts[0].record is not None


async def test_a_rerun_of_the_same_episode_writes_nothing(migrated_store) -> None:
    store = await migrated_store()
    work = await write(store, alice_at_acme())
    before = await graph(store)
    # The pipeline sees the episode is known and stops before any stage.
    ctx = await context(store)
    assert await prepare(ctx, work.input) is None
    assert ctx.counts["episodes_skipped"] == 1
    # Persisting the same episode again is refused as a whole: nothing is doubled.
    again = alice_at_acme()
    ctx, summaries = await resolved(store, again)
    with pytest.raises(QueryFailed):
        await persist(ctx, again, summaries)
    assert await graph(store) == before


async def test_known_entities_are_updated_not_made_again(migrated_store) -> None:
    store = await migrated_store()
    await write(store, alice_at_acme(JAN))
    await write(store, alice_at_acme(MAR, "Alice is an engineer. Alice plays chess."))
    written = await graph(store)
    alice = next(e for e in written["entities"] if e["name"] == "Alice Moreau")
    assert [e["name"] for e in written["entities"]] == ["Acme Corp", "Alice Moreau"]
    # Each sentence once; seen from the first episode to the last; the repeat adds no edge.
    assert alice["summary"] == "Alice is an engineer. Alice plays chess."
    assert (alice["first_seen_at"], alice["last_seen_at"]) == (
        "2024-01-15T00:00:00Z",
        "2024-03-10T00:00:00Z",
    )
    assert alice["degree"] == 1
    [acme] = written["facts"]
    assert len(acme["episodes"]) == 2
    assert len(written["mentions"]) == 4


async def test_a_contradicted_fact_is_retired_and_revised(migrated_store) -> None:
    store = await migrated_store()
    acme = await said(store, "Alice Moreau", "WORKS_AT", "Acme Corp", JAN)
    beta = await said(store, "Alice Moreau", "WORKS_AT", "Beta Inc", MAR)
    rows = {
        str(r["id"]): r
        for r in to_json(
            await store.query_one(
                "SELECT id, out.name AS target, valid_at, invalid_at, expired_at, supersedes, "
                "superseded_by, revision_of FROM relates_to"
            )
        )
    }
    old, new = rows[str(acme.record)], rows[str(beta.record)]
    [revision] = [r for r in rows.values() if r["revision_of"] == str(acme.record)]
    # The old statement is retired, not rewritten: its revision ends where Beta starts.
    assert old["expired_at"] is not None and old["invalid_at"] is None
    assert old["superseded_by"] == str(beta.record)
    assert (revision["target"], revision["valid_at"], revision["invalid_at"]) == (
        "Acme Corp",
        "2024-01-15T00:00:00Z",
        "2024-03-10T00:00:00Z",
    )
    assert revision["expired_at"] is None and revision["superseded_by"] == str(beta.record)
    assert new["supersedes"] == revision["id"] and new["expired_at"] is None


async def test_an_automatic_merge_is_written_with_its_alias_and_audit(migrated_store) -> None:
    store = await migrated_store()
    await write(store, episode("Globex LLC opened.", JAN, [entity("Globex LLC", "Organization")]))
    alice, globex = entity("Alice Moreau"), entity("Globex", "Organization")
    work = await write(
        store,
        episode(
            "Alice works at Globex.", MAR, [alice, globex], [fact(alice, "WORKS_AT", globex, MAR)]
        ),
    )
    survivor = str(globex.record)
    entities = to_json(
        await store.query_one(
            "SELECT id, name, merged_into FROM entity WHERE name CONTAINS 'Globex' ORDER BY name"
        )
    )
    assert [(e["name"], e["merged_into"]) for e in entities] == [
        ("Globex", survivor),
        ("Globex LLC", None),
    ]
    assert to_json(await store.query_one("SELECT name, entity.name AS entity FROM alias")) == [
        {"name": "globex", "entity": "Globex LLC"}
    ]
    assert await store.query_one("SELECT VALUE out.name FROM relates_to") == ["Globex LLC"]
    [audit] = to_json(
        await store.query_one(
            "SELECT actor, action, after.rule AS rule, after.facts AS facts FROM audit"
        )
    )
    assert audit == {
        "actor": "resolution",
        "action": "auto_merge",
        "rule": "same_name",
        "facts": [str(work.facts[0].record)],
    }
