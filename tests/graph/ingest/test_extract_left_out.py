"""One bad item in an extractor's answer costs that item, not the episode: an entity
name over 300 characters is left out with the facts naming it, answers past the
entity and fact caps are cut, and the job notes both. Through the scripted model and
through the offline extractor; real SurrealDB and local embeddings."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from kgapp.graph import jobs
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.pipeline import ingest_job
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts.extract import MAX_ENTITIES, MAX_FACTS, MAX_NAME_CHARS
from kgapp.graph.llm.transport import LLMConfig

WHEN = datetime(2024, 1, 15, tzinfo=UTC)
LONG = "Zorblax " * 50  # 400 characters: a sentence, not a name


@pytest.fixture
async def graph(migrated_store):
    return await migrated_store()


def entity(name: str, entity_type: str = "Person") -> dict:
    return {"name": name, "entity_type": entity_type, "summary": ""}


def fact(source: str, relation: str, target: str) -> dict:
    return {
        "source": source,
        "relation": relation,
        "target": target,
        "fact": f"{source} {relation} {target}",
        "edge_type": "semantic",
        "confidence": 1.0,
        "valid_at": None,
        "invalid_at": None,
    }


def model(scripted_llm, answer: dict) -> LLMClient:
    def reply(body: dict) -> dict | None:
        task = body["response_format"]["json_schema"]["name"]
        if task == "extract_graph":
            return answer
        return {"entities": [], "facts": []} if task == "resolve_graph" else None

    scripted_llm.on_chat(reply)
    config = LLMConfig(
        base_url=scripted_llm.base_url, api_key="test", model="scripted", timeout=5.0, max_retries=0
    )
    return LLMClient(config)


async def run(store, content: str, llm: LLMClient | None):
    job = await jobs.job_create(store, kind="ingest_episode")
    episode = EpisodeInput(content=content, source="text", reference_time=WHEN)
    report = await ingest_job(store, job["id"], [episode], embedder=local_embedder(), llm=llm)
    return report


async def graph_of(store) -> tuple[list[str], list[tuple[str, str, str]]]:
    names = await store.query_one("SELECT VALUE name FROM entity ORDER BY name")
    rows = await store.query_one(
        "SELECT in.name AS s, relation AS r, out.name AS t FROM relates_to ORDER BY s, t"
    )
    return names, [(row["s"], row["r"], row["t"]) for row in rows]


async def test_a_long_name_from_the_model_costs_only_its_entity_and_facts(
    graph, scripted_llm
) -> None:
    answer = {
        "entities": [entity("Alice"), entity(LONG), entity("Acme Corp", "Organization")],
        "facts": [fact("Alice", "WORKS_AT", "Acme Corp"), fact("Alice", "KNOWS", LONG)],
    }
    report = await run(graph, "Alice works at Acme Corp.", model(scripted_llm, answer))
    assert report.status == "completed" and report.failures == []
    assert await graph_of(graph) == (["Acme Corp", "Alice"], [("Alice", "WORKS_AT", "Acme Corp")])
    (note,) = report.notes
    assert f"left out 1 entity name(s) over {MAX_NAME_CHARS} characters" in note
    assert "the 1 fact(s) naming them" in note and "Zorblax Zorblax" in note
    assert report.counts["entities_left_out"] == 1 and report.counts["facts_left_out"] == 1


async def test_a_long_name_from_the_offline_extractor_costs_only_its_entity(graph) -> None:
    text = f"Alice works at {LONG.replace(' ', '')} Corp. Bob lives in Paris."
    report = await run(graph, text, None)
    assert report.status == "completed" and report.failures == []
    names, facts = await graph_of(graph)
    assert {"Bob", "Paris"} <= set(names) and all(len(n) <= MAX_NAME_CHARS for n in names)
    assert ("Bob", "LIVES_IN", "Paris") in facts
    assert any("over 300 characters" in note for note in report.notes)


def distinct_names(count: int) -> list[str]:
    first = ["Ada", "Bea", "Cyd", "Dov", "Eli", "Fay", "Gus", "Hal", "Ivo", "Jax"]
    last = ["Moss", "Vance", "Quill", "Thorn", "Yates", "Bloom", "Crane", "Drake", "Frost", "Grove"]
    towns = ["Oslo", "Lima", "Kyiv", "Baku", "Doha", "Riga", "Suva", "Apia", "Male", "Bern"]
    names = (f"{a} {b} of {c}" for a, b, c in itertools.product(first, last, towns))
    return list(itertools.islice(names, count))


async def test_an_answer_past_the_caps_keeps_the_caps_and_says_so(graph, scripted_llm) -> None:
    names = distinct_names(500)
    answer = {
        "entities": [entity(n) for n in names],
        "facts": [fact(a, "KNOWS", b) for a, b in itertools.pairwise(names)],
    }
    report = await run(graph, "Everyone knows everyone.", model(scripted_llm, answer))
    assert report.status == "completed"
    entities, facts = await graph_of(graph)
    assert len(entities) == MAX_ENTITIES and set(entities) == set(names[:MAX_ENTITIES])
    assert len(facts) == MAX_ENTITIES - 1 <= MAX_FACTS  # the chain within the kept names
    assert report.counts["entities_left_out"] == 500 - MAX_ENTITIES
    assert any(f"more than {MAX_ENTITIES} entities" in note for note in report.notes)


async def test_an_answer_of_10000_entities_fails_its_episode_with_the_reason(
    graph, scripted_llm
) -> None:
    answer = {"entities": [entity(n) for n in distinct_names(1000)] * 10, "facts": []}
    report = await run(graph, "List 10,000 entities.", model(scripted_llm, answer))
    assert report.status == "failed"
    assert "over 200000" in report.error and "characters" in report.error
    assert await graph_of(graph) == ([], [])
