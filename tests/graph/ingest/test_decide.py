"""decide on its own: what rules could not settle goes to one batched model call, or
without a model to the review queue. The model is the real `openai` client against the
scripted loopback server (harness/llm_server.py); SurrealDB and embeddings are real."""

from __future__ import annotations

import json
from functools import partial

import pytest

from harness.llm_server import Reply
from kgapp.graph.ingest.indexing import embed_episode
from kgapp.graph.ingest.persist import persist
from kgapp.graph.records import to_json
from kgapp.graph.resolution.decide import decide
from kgapp.graph.resolution.entities import new_record, resolve_entities
from kgapp.graph.resolution.facts import existing_facts, llm_candidates
from tests.graph.ingest.stages import JAN, MAR, context, entity, episode, fact, model, said, write


async def ambiguous(store, llm=None):
    """Acme Corp known; a later episode names "Acme Group", which names cannot settle.
    The context and the episode after resolve_entities."""
    await write(store, episode("Acme Corp opened.", JAN, [entity("Acme Corp", "Organization")]))
    ctx = await context(store, llm)
    work = episode("Acme Group hired.", MAR, [entity("Acme Group", "Organization")])
    await resolve_entities(ctx, work, partial(embed_episode, ctx, work))
    return ctx, work


def graph_update(request: dict) -> dict:
    """The payload the model was shown."""
    text = request["messages"][-1]["content"]
    return json.loads(text.split("<graph_update>")[1].split("</graph_update>")[0])


async def test_without_a_model_ambiguous_entities_go_to_the_review_queue(migrated_store) -> None:
    store = await migrated_store()
    ctx, work = await ambiguous(store)
    [group] = work.entities
    assert await decide(ctx, work, []) == (False, {})
    assert ctx.counts["entities_new"] == 1 and ctx.counts["dedup_candidates"] == 1
    assert group.is_new and group.record == new_record(group)
    await persist(ctx, work, {})
    pairs = to_json(
        await store.query_one("SELECT a.name AS a, b.name AS b, status FROM dedup_candidate")
    )
    assert pairs == [{"a": "Acme Group", "b": "Acme Corp", "status": "pending"}]


async def test_the_models_pick_merges_the_ambiguous_entity(migrated_store, scripted_llm) -> None:
    store = await migrated_store()
    scripted_llm.queue(Reply(content={"entities": [{"index": 0, "duplicate_of": 0}], "facts": []}))
    ctx, work = await ambiguous(store, model(scripted_llm.base_url))
    [group] = work.entities
    corp = group.candidates[0]["id"]
    assert await decide(ctx, work, []) == (True, {})
    assert (group.record, group.is_new, group.alias, group.candidates) == (
        corp,
        False,
        "acme group",
        [],
    )
    assert (group.merge.rule, group.merge.survivor_name) == ("llm", "Acme Corp")
    assert ctx.counts["entities_merged"] == 1 and ctx.counts["dedup_candidates"] == 0
    [request] = scripted_llm.chat_requests("resolve_graph")
    [shown] = graph_update(request)["entities"]
    assert shown["name"] == "Acme Group"
    assert [c["name"] for c in shown["candidates"]] == ["Acme Corp"]


@pytest.mark.parametrize("pick", [None, 7], ids=["none", "out_of_range"])
async def test_no_valid_pick_keeps_the_entity_new(migrated_store, scripted_llm, pick) -> None:
    store = await migrated_store()
    scripted_llm.queue(
        Reply(content={"entities": [{"index": 0, "duplicate_of": pick}], "facts": []})
    )
    ctx, work = await ambiguous(store, model(scripted_llm.base_url))
    [group] = work.entities
    assert await decide(ctx, work, []) == (False, {})
    assert group.is_new and group.record == new_record(group) and group.merge is None
    assert ctx.counts["entities_new"] == 1 and ctx.counts["entities_merged"] == 0


async def test_nothing_to_decide_asks_no_model(migrated_store, scripted_llm) -> None:
    store = await migrated_store()
    ctx = await context(store, model(scripted_llm.base_url))
    work = episode("Nadia Brook was mentioned.", JAN, [entity("Nadia Brook")])
    await resolve_entities(ctx, work, partial(embed_episode, ctx, work))
    assert await decide(ctx, work, []) == (False, {})
    assert scripted_llm.chat_requests() == []


async def test_fact_decisions_are_keyed_by_the_facts_place_in_the_episode(
    migrated_store,
    scripted_llm,
) -> None:
    store = await migrated_store()
    chess = await said(store, "Alice Moreau", "MEMBER_OF", "Chess Club", JAN)
    scripted_llm.queue(
        Reply(
            content={
                "entities": [],
                "facts": [
                    {"index": 0, "duplicate_of": None, "contradicts": [0]},
                    {"index": 5, "duplicate_of": 0, "contradicts": []},  # no such fact: left aside
                ],
            }
        )
    )
    ctx = await context(store, model(scripted_llm.base_url))
    alice, club, go = (
        entity("Alice Moreau"),
        entity("Chess Club", "Organization"),
        entity("Go Club", "Organization"),
    )
    again, other = fact(alice, "MEMBER_OF", club, MAR), fact(alice, "MEMBER_OF", go, MAR)
    work = episode("Alice plays chess and go.", MAR, [alice, club, go], [again, other])
    await resolve_entities(ctx, work, partial(embed_episode, ctx, work))
    checks = llm_candidates(ctx, work, (await existing_facts(ctx, work))[0])
    changed, decisions = await decide(ctx, work, checks)
    assert changed is False
    assert list(decisions) == [1]  # the Go Club fact, second in the episode
    decision, candidates = decisions[1]
    assert (decision.duplicate_of, decision.contradicts) == (None, [0])
    assert [c["id"] for c in candidates] == [chess.record]
    [request] = scripted_llm.chat_requests("resolve_graph")
    [shown] = graph_update(request)["facts"]
    assert shown["fact"] == "Alice Moreau MEMBER_OF Go Club."
    assert [e["fact"] for e in shown["existing"]] == ["Alice Moreau MEMBER_OF Chess Club."]
