"""Leiden communities on the real SurrealDB server: a planted partition is recovered,
an unchanged graph costs no model call, new entities join their neighbours'
community, a past moment is kept apart, and tenants never touch each other."""

from __future__ import annotations

import math
import random
from collections import Counter
from datetime import UTC, datetime

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import communities, queries
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.transport import LLMConfig
from kgapp.graph.records import record_key
from kgapp.graph.store import TenantStore

GROUPS, SIZE = 5, 40


def nmi(truth: list[int], found: list[int]) -> float:
    """Normalised mutual information (arithmetic mean of the entropies)."""
    n = len(truth)
    joint = Counter(zip(truth, found, strict=True))
    a, b = Counter(truth), Counter(found)
    mutual = sum(c / n * math.log(c * n / (a[x] * b[y])) for (x, y), c in joint.items())
    entropy = lambda counts: -sum(c / n * math.log(c / n) for c in counts.values())  # noqa: E731
    return 2 * mutual / (entropy(a) + entropy(b))


async def planted(migrated_store, seed: int = 3) -> tuple[TenantStore, dict[str, int]]:
    """5 groups of 40 entities: dense inside (p 0.25), sparse between (p 0.004)."""
    store = await migrated_store()
    rng = random.Random(seed)
    group = {f"entity:g{g}n{i}": g for g in range(GROUPS) for i in range(SIZE)}
    await store.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("entity", key.split(":")[1]),
                    "name": f"Member {key[8:]}",
                    "canonical_name": key[8:],
                    "entity_type": "Person",
                }
                for key in group
            ]
        },
    )
    keys, facts = list(group), []
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            if rng.random() < (0.25 if group[a] == group[b] else 0.004):
                facts.append(
                    {
                        "id": RecordID("relates_to", f"f{len(facts)}"),
                        "in": RecordID("entity", a[7:]),
                        "out": RecordID("entity", b[7:]),
                        "relation": "KNOWS",
                        "fact": f"{a[7:]} knows {b[7:]}",
                        "valid_at": datetime(2024, 1, 1, tzinfo=UTC),
                    }
                )
    for start in range(0, len(facts), 500):
        await store.query(queries.FACTS_BULK_INSERT, {"rows": facts[start : start + 500]})
    return store, group


async def membership(store: TenantStore) -> dict[str, str]:
    rows = await store.query_one("SELECT in, out FROM has_member")
    return {record_key(r["out"]): record_key(r["in"]) for r in rows}


async def test_planted_partition_is_recovered(migrated_store) -> None:
    store, group = await planted(migrated_store)
    report = await communities.rebuild(store, None)
    assert report.communities == GROUPS and report.llm_calls == 0
    assert report.modularity[0] > 0.6
    found = await membership(store)
    keys = sorted(group)
    assert nmi([group[k] for k in keys], [hash(found.get(k, k)) for k in keys]) >= 0.9
    listed = await communities.communities_list(store)
    assert sorted(c["member_count"] for c in listed) == sorted(Counter(found.values()).values())
    # Without a model the name and summary come from the members and facts.
    detail = await communities.community_get(store, listed[0]["id"])
    assert len(detail["members"]) == listed[0]["member_count"]
    assert detail["name"].startswith("Member ") and "entities around" in detail["summary"]


async def test_an_unchanged_graph_costs_no_model_call(migrated_store, scripted_llm) -> None:
    store, _ = await planted(migrated_store)
    scripted_llm.on_chat(
        lambda body: {"name": "A circle of friends", "summary": "People who know each other."}
    )
    llm = LLMClient(
        LLMConfig(
            base_url=scripted_llm.base_url,
            api_key="t",
            model="scripted",
            timeout=5.0,
            max_retries=1,
        )
    )
    first = await communities.rebuild(store, llm)
    requests = scripted_llm.chat_requests("summarize_community")
    calls = len(requests)
    # ~195 facts a community: map over chunks of 60, then one reduce call each.
    assert calls == first.llm_calls > GROUPS
    reduces = [r for r in requests if "summaries_of_parts" in str(r["messages"])]
    assert len(reduces) == GROUPS
    names = {c["name"] for c in await communities.communities_list(store)}
    assert names == {"A circle of friends"}
    before = await membership(store)
    second = await communities.rebuild(store, llm)
    assert len(scripted_llm.chat_requests("summarize_community")) == calls  # none more
    assert second.unchanged == GROUPS and second.llm_calls == 0
    assert await membership(store) == before
    # One changed community (a new member) is described again; the others are not.
    await store.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("entity", "late"),
                    "name": "Late Comer",
                    "canonical_name": "late comer",
                    "entity_type": "Person",
                }
            ]
        },
    )
    await store.query(
        queries.FACTS_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("relates_to", f"late{i}"),
                    "in": RecordID("entity", "late"),
                    "out": RecordID("entity", f"g0n{i}"),
                    "relation": "KNOWS",
                    "fact": f"late knows {i}",
                    "valid_at": datetime(2024, 1, 1, tzinfo=UTC),
                }
                for i in range(8)
            ]
        },
    )
    third = await communities.rebuild(store, llm)
    assert third.unchanged == GROUPS - 1 and third.described == 1
    assert len(scripted_llm.chat_requests("summarize_community")) == calls + third.llm_calls


async def test_new_entities_join_their_neighbours_communities(migrated_store) -> None:
    store, _ = await planted(migrated_store)
    await communities.rebuild(store, None)
    found = await membership(store)
    await store.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("entity", key),
                    "name": key.title(),
                    "canonical_name": key,
                    "entity_type": "Person",
                }
                for key in ("new", "other", "alone")
            ]
        },
    )
    await store.query(
        queries.FACTS_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("relates_to", f"{source}{i}"),
                    "in": RecordID("entity", source),
                    "out": RecordID("entity", target),
                    "relation": "KNOWS",
                    "fact": f"{source} knows {target}",
                    "valid_at": datetime(2024, 1, 1, tzinfo=UTC),
                }
                for source, targets in (
                    ("new", ["g2n1", "g2n2", "g2n3", "g4n1"]),
                    ("other", ["g4n2"]),
                )
                for i, target in enumerate(targets)
            ]
        },
    )
    new = [RecordID("entity", key) for key in ("new", "alone", "other")]
    assert await join(store, new) == 2  # each in the one transaction; "alone" has no neighbour
    after = await membership(store)
    assert after["entity:new"] == found["entity:g2n1"]
    assert after["entity:other"] == found["entity:g4n2"]
    assert "entity:alone" not in after
    assert await join(store, new) == 0  # once


async def join(store, entities) -> int:
    """The entities joined as an episode's transaction joins them, after its writes; how
    many did."""
    batch = queries.Batch()
    batch.add("UPDATE $id SET summary = 'seen' RETURN NONE", id=entities[0])
    statements = communities.join_neighbours(batch, entities)
    return communities.joined(await store.transaction(batch.sql, batch.params), statements)


async def test_a_past_moment_is_kept_apart_and_tenants_do_not_touch(migrated_store) -> None:
    store, _ = await planted(migrated_store)
    other, _ = await planted(migrated_store, seed=5)
    await communities.rebuild(other, None)
    other_before = await membership(other)
    await communities.rebuild(store, None)
    past = await communities.rebuild(store, None, as_of=datetime(2023, 6, 1, tzinfo=UTC))
    assert past.communities == 0  # nothing was valid yet
    await communities.rebuild(store, None, as_of=datetime(2024, 6, 1, tzinfo=UTC))
    current = await communities.communities_list(store)
    then = await communities.communities_list(store, as_of=datetime(2024, 6, 1, tzinfo=UTC))
    assert len(current) == len(then) == GROUPS
    assert {record_key(c["id"]) for c in current}.isdisjoint({record_key(c["id"]) for c in then})
    assert await membership(other) == other_before
