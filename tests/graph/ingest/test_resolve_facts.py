"""resolve_facts on its own: each extracted fact repeats, ends, or is ended by a fact
the graph holds; on the real SurrealDB server with the real local embeddings."""

from __future__ import annotations

from functools import partial

from kgapp.graph.ingest.indexing import embed_episode
from kgapp.graph.ingest.persist import persist
from kgapp.graph.llm.prompts.resolve import FactDecision
from kgapp.graph.records import to_json
from kgapp.graph.resolution.entities import resolve_entities
from kgapp.graph.resolution.facts import existing_facts, llm_candidates, resolve_facts
from tests.graph.ingest.stages import FEB, JAN, JUN, MAR, context, entity, episode, fact, said


async def resolved(store, *drafts, decide=None):
    """A later episode with `drafts` (the facts) through resolve_facts: the context,
    the episode and the summaries for persist. `decide(candidates)` stands for the
    model's decisions on the checked facts."""
    ctx = await context(store)
    ends = {id(d): d for f in drafts for d in (f.source, f.target)}
    work = episode("A later episode.", drafts[0].valid_at, ends.values(), drafts)
    await resolve_entities(ctx, work, partial(embed_episode, ctx, work))
    known, summaries = await existing_facts(ctx, work)
    decisions = None
    if decide is not None:
        checks = llm_candidates(ctx, work, known)
        positions = {id(d): n for n, d in enumerate(work.facts)}
        decisions = {positions[id(d)]: (decide(c), c) for d, c in checks}
    resolve_facts(ctx, work, known, decisions)
    return ctx, work, summaries


def works_at(company: str, valid_at, invalid_at=None, person: str = "Alice Moreau"):
    return fact(entity(person), "WORKS_AT", entity(company, "Organization"), valid_at, invalid_at)


async def current(store) -> list[dict]:
    return to_json(
        await store.query_one(
            "SELECT out.name AS target, valid_at, invalid_at, array::len(episodes) AS episodes "
            "FROM relates_to WHERE expired_at = NONE ORDER BY valid_at, target"
        )
    )


async def test_a_repeated_fact_is_recognised_as_a_repeat(migrated_store) -> None:
    store = await migrated_store()
    acme = await said(store, "Alice Moreau", "WORKS_AT", "Acme Corp", JAN)
    draft = works_at("Acme Corp", MAR)
    ctx, work, summaries = await resolved(store, draft)
    assert draft.duplicate_of["id"] == acme.record and draft.contradicts == []
    assert (ctx.counts["facts_duplicate"], ctx.counts["facts_created"]) == (1, 0)
    await persist(ctx, work, summaries)
    assert await current(store) == [
        {
            "target": "Acme Corp",
            "valid_at": "2024-01-15T00:00:00Z",
            "invalid_at": None,
            "episodes": 2,
        }
    ]


async def test_a_repeat_that_states_the_end_closes_the_open_fact(migrated_store) -> None:
    store = await migrated_store()
    acme = await said(store, "Alice Moreau", "WORKS_AT", "Acme Corp", JAN)
    draft = works_at("Acme Corp", MAR, invalid_at=JUN)
    ctx, _, _ = await resolved(store, draft)
    assert draft.duplicate_of is None
    assert [f["id"] for f in draft.contradicts] == [acme.record]
    assert (ctx.counts["facts_created"], ctx.counts["facts_invalidated"]) == (1, 1)


async def test_a_new_value_of_a_single_valued_relation_ends_the_old_fact(migrated_store) -> None:
    store = await migrated_store()
    acme = await said(store, "Alice Moreau", "WORKS_AT", "Acme Corp", JAN)
    beta = works_at("Beta Inc", MAR)
    ctx, work, summaries = await resolved(store, beta)
    assert [f["id"] for f in beta.contradicts] == [acme.record]
    assert beta.invalid_at is None and beta.closed_by is None
    assert (ctx.counts["facts_created"], ctx.counts["facts_invalidated"]) == (1, 1)
    await persist(ctx, work, summaries)
    assert await current(store) == [
        {
            "target": "Acme Corp",
            "valid_at": "2024-01-15T00:00:00Z",
            "invalid_at": "2024-03-10T00:00:00Z",
            "episodes": 1,
        },
        {
            "target": "Beta Inc",
            "valid_at": "2024-03-10T00:00:00Z",
            "invalid_at": None,
            "episodes": 1,
        },
    ]


async def test_two_new_values_in_one_episode_end_the_old_fact_once(migrated_store) -> None:
    store = await migrated_store()
    acme = await said(store, "Alice Moreau", "WORKS_AT", "Acme Corp", JAN)
    beta, gamma = works_at("Beta Inc", JUN), works_at("Gamma Ltd", MAR)
    ctx, work, summaries = await resolved(store, beta, gamma)
    # The earlier of the two ends it; the later one has nothing left to end.
    assert [f["id"] for f in gamma.contradicts] == [acme.record] and beta.contradicts == []
    assert (ctx.counts["facts_created"], ctx.counts["facts_invalidated"]) == (2, 1)
    await persist(ctx, work, summaries)
    assert [row for row in await current(store) if row["target"] == "Acme Corp"] == [
        {
            "target": "Acme Corp",
            "valid_at": "2024-01-15T00:00:00Z",
            "invalid_at": "2024-03-10T00:00:00Z",
            "episodes": 1,
        }
    ]


async def test_an_older_value_arriving_late_is_closed_by_the_newer_one(migrated_store) -> None:
    store = await migrated_store()
    beta = await said(store, "Alice Moreau", "WORKS_AT", "Beta Inc", MAR)
    acme = works_at("Acme Corp", JAN)
    await resolved(store, acme)
    assert acme.contradicts == []  # an old episode never ends newer knowledge
    assert acme.invalid_at == MAR and acme.closed_by["id"] == beta.record


async def test_a_relation_with_many_values_keeps_them_all(migrated_store) -> None:
    store = await migrated_store()
    await said(store, "Alice Moreau", "KNOWS", "Bruno Diaz", JAN, target_type="Person")
    carla = fact(entity("Alice Moreau"), "KNOWS", entity("Carla Nunes"), MAR)
    ctx, _, _ = await resolved(store, carla)
    assert (carla.duplicate_of, carla.contradicts, carla.invalid_at) == (None, [], None)
    assert (ctx.counts["facts_created"], ctx.counts["facts_invalidated"]) == (1, 0)


async def test_a_fact_said_twice_in_one_episode_is_kept_once(migrated_store) -> None:
    store = await migrated_store()
    alice, acme = entity("Alice Moreau"), entity("Acme Corp", "Organization")
    first = fact(alice, "WORKS_AT", acme, JAN, confidence=0.5)
    second = fact(alice, "WORKS_AT", acme, JAN, confidence=0.8)
    ctx, work, _ = await resolved(store, first, second)
    assert work.facts == [first] and first.confidence == 0.8
    assert ctx.counts["facts_created"] == 1


async def test_the_models_contradictions_end_only_facts_holding_then(migrated_store) -> None:
    store = await migrated_store()
    chess = await said(store, "Alice Moreau", "MEMBER_OF", "Chess Club", JAN)
    await said(store, "Alice Moreau", "MEMBER_OF", "Book Club", JAN, invalid_at=FEB)
    go = fact(entity("Alice Moreau"), "MEMBER_OF", entity("Go Club", "Organization"), MAR)
    ctx, _, _ = await resolved(
        store, go, decide=lambda c: FactDecision(index=0, duplicate_of=None, contradicts=[0, 1, 9])
    )
    assert [f["id"] for f in go.contradicts] == [chess.record]  # Book Club had ended by March
    assert (ctx.counts["facts_created"], ctx.counts["facts_invalidated"]) == (1, 1)


async def test_the_models_duplicate_makes_a_repeat(migrated_store) -> None:
    store = await migrated_store()
    chess = await said(store, "Alice Moreau", "MEMBER_OF", "Chess Club", JAN)
    chess_team = fact(
        entity("Alice Moreau"), "MEMBER_OF", entity("Chess Team", "Organization"), MAR
    )
    ctx, _, _ = await resolved(
        store, chess_team, decide=lambda c: FactDecision(index=0, duplicate_of=0, contradicts=[])
    )
    assert chess_team.duplicate_of["id"] == chess.record
    assert (ctx.counts["facts_duplicate"], ctx.counts["facts_created"]) == (1, 0)
