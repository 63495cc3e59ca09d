"""The ingestion pipeline with the offline extractor (no model), against the real
SurrealDB server and the real local embedding model."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kgapp.graph import jobs
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.offline import OfflineExtractor
from kgapp.graph.ingest.persist import merge_summary
from kgapp.graph.ingest.pipeline import ingest_job
from kgapp.graph.ingest.service import episodes_remove
from kgapp.graph.records import to_json

JAN = datetime(2024, 1, 15, tzinfo=UTC)
MAR = datetime(2024, 3, 10, tzinfo=UTC)
ACME = EpisodeInput(content="Alice works at Acme Corp.", source="text", reference_time=JAN)
BETA = EpisodeInput(content="Alice joined Beta Inc last month.", source="text", reference_time=MAR)


@pytest.fixture
async def graph(migrated_store):
    return await migrated_store()


async def run(store, episodes):
    job = await jobs.job_create(store, kind="ingest_episode")
    return await ingest_job(store, job["id"], episodes, embedder=local_embedder(), llm=None)


async def facts(store, current_only=True):
    where = "WHERE expired_at = NONE" if current_only else ""
    rows = await store.query_one(
        f"SELECT in.name AS source, relation, out.name AS target, valid_at, invalid_at, "
        f"supersedes, superseded_by, id FROM relates_to {where} ORDER BY valid_at"
    )
    return to_json(rows)


async def test_graphiti_scenario(graph) -> None:
    await run(graph, [ACME])
    await run(graph, [BETA])
    entities = await graph.query_one("SELECT VALUE name FROM entity ORDER BY name")
    assert entities == ["Acme Corp", "Alice", "Beta Inc"]
    current = await facts(graph)
    assert [(f["target"], f["valid_at"], f["invalid_at"]) for f in current] == [
        ("Acme Corp", "2024-01-15T00:00:00Z", "2024-02-01T00:00:00Z"),
        ("Beta Inc", "2024-02-01T00:00:00Z", None),
    ]
    acme, beta = current
    assert acme["superseded_by"] == beta["id"] and beta["supersedes"] == acme["id"]
    degrees = await graph.query_one("SELECT name, degree FROM entity ORDER BY name")
    assert [(d["name"], d["degree"]) for d in degrees] == [
        ("Acme Corp", 1),
        ("Alice", 2),
        ("Beta Inc", 1),
    ]
    # The belief held before the second episode is kept, retired in system time.
    everything = await facts(graph, current_only=False)
    assert len(everything) == 3
    # Every current fact got its vector in the indexing phase, with the model's dimension.
    dims = await graph.query_one(
        "SELECT VALUE array::len(fact_embedding ?? []) FROM relates_to WHERE expired_at = NONE"
    )
    assert dims == [384, 384]


async def test_out_of_order_gives_the_same_final_facts(graph) -> None:
    await run(graph, [BETA])
    await run(graph, [ACME])
    current = await facts(graph)
    assert [(f["target"], f["valid_at"], f["invalid_at"]) for f in current] == [
        ("Acme Corp", "2024-01-15T00:00:00Z", "2024-02-01T00:00:00Z"),
        ("Beta Inc", "2024-02-01T00:00:00Z", None),
    ]
    assert current[0]["superseded_by"] == current[1]["id"]


async def test_ingesting_twice_changes_nothing(graph) -> None:
    first = await run(graph, [ACME, BETA])
    before = await graph.query_one("SELECT * OMIT fact_embedding FROM relates_to ORDER BY id")
    second = await run(graph, [ACME, BETA])
    after = await graph.query_one("SELECT * OMIT fact_embedding FROM relates_to ORDER BY id")
    assert before == after
    assert first.counts["episodes"] == 2
    assert second.counts.get("episodes", 0) == 0 and second.counts["episodes_skipped"] == 2


async def test_a_conversation_becomes_facts_about_its_speakers(graph) -> None:
    chat = EpisodeInput(
        content="Ria: I adopted a rescue dog last week.\nTom: You volunteer at the animal shelter.",
        source="message",
        reference_time=MAR,
    )
    await run(graph, [chat])
    current = await facts(graph)
    assert sorted((f["source"], f["relation"], f["target"], f["valid_at"]) for f in current) == [
        ("Ria", "ADOPT", "rescue dog", "2024-03-03T00:00:00Z"),
        ("Ria", "VOLUNTEER_AT", "animal shelter", "2024-03-10T00:00:00Z"),
    ]
    people = await graph.query_one(
        "SELECT VALUE name FROM entity WHERE entity_type = 'Person' ORDER BY name"
    )
    assert people == ["Ria", "Tom"]


async def test_a_speakers_summary_says_each_sentence_once_across_sessions(graph) -> None:
    sessions = [
        EpisodeInput(
            content=f"Ria: I adopted a rescue {pet}.\nTom: Nice!",
            source="message",
            reference_time=MAR,
            saga="chat",
        )
        for pet in ("dog", "cat", "parrot")
    ]
    await run(graph, sessions)
    summary = await graph.query_one(
        "SELECT VALUE summary FROM ONLY entity WHERE name = 'Ria' LIMIT 1"
    )
    assert summary.count("Ria is a participant of the conversation.") == 1
    assert all(f"rescue {pet}" in summary for pet in ("dog", "cat", "parrot"))


def test_a_summary_over_its_limit_loses_whole_sentences_oldest_first() -> None:
    merged = merge_summary(
        "Ria adopted a dog. Ria moved to Oslo. Ria paints.", "Ria sings.", limit=30
    )
    assert merged == "Ria paints. Ria sings."


async def test_without_its_pipeline_episodes_are_stored_unextracted_with_one_note(graph) -> None:
    job = await jobs.job_create(graph, kind="ingest_episode")
    report = await ingest_job(
        graph,
        job["id"],
        [ACME, BETA],
        embedder=local_embedder(),
        llm=None,
        extractor=OfflineExtractor("no_such_model"),
    )
    assert report.status == "completed" and report.counts["episodes_not_extracted"] == 2
    assert len(report.episodes) == 2
    (note,) = report.notes
    assert "no_such_model" in note and "KG_SPACY_MODEL" in note
    assert await graph.query_one("SELECT VALUE name FROM entity") == []


async def test_the_job_says_which_extractor_ran(graph) -> None:
    report = await run(graph, [ACME])
    assert report.extractor.startswith("offline NLP (spaCy en_core_web_sm")


async def test_leaving_ends_the_fact_that_held(graph) -> None:
    quit = EpisodeInput(
        content="Alice resigned from Acme Corp last week.", source="text", reference_time=MAR
    )
    await run(graph, [ACME])
    await run(graph, [quit])
    current = await facts(graph)
    assert [(f["relation"], f["target"], f["valid_at"], f["invalid_at"]) for f in current] == [
        ("WORKS_AT", "Acme Corp", "2024-01-15T00:00:00Z", "2024-03-03T00:00:00Z"),
        # The statement of the end, which superseded the open fact.
        ("WORKS_AT", "Acme Corp", "2024-03-03T00:00:00Z", "2024-03-03T00:00:00Z"),
    ]
    ended, statement = current
    assert ended["superseded_by"] == statement["id"]
    # Taking the resignation back leaves the job open again.
    resigned = await graph.query_one(
        "SELECT VALUE id FROM episode WHERE content CONTAINS 'resigned'"
    )
    await episodes_remove(graph, resigned)
    assert [(f["target"], f["invalid_at"]) for f in await facts(graph)] == [("Acme Corp", None)]
