"""The indexing phase (kgapp/graph/ingest/indexing.py): a job embeds the facts and
passages of its own episodes, found by index, also when an earlier run of it wrote them
and stopped before indexing; the periodic sweep embeds what no job did."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from kgapp.graph import jobs
from kgapp.graph.chunking import passage_units
from kgapp.graph.embeddings import local_embedder, unpack_vectors
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.pipeline import ingest_job
from kgapp.graph.ingest.service import stragglers_index
from tests.graph.ingest.test_pipeline_offline import run

DAY = datetime(2024, 2, 1, tzinfo=UTC)
CHAT = EpisodeInput(
    content="Ria: I adopted a rescue dog last week.\nTom: You volunteer at the animal shelter.",
    source="message",
    reference_time=DAY,
)
TEXT = EpisodeInput(
    content="Alice works at Acme Corp. She lives in Lyon.", source="text", reference_time=DAY
)


@pytest.fixture
async def graph(migrated_store):
    return await migrated_store()


async def unembedded(store) -> dict[str, list[str]]:
    facts, episodes = await store.query(
        "SELECT VALUE fact FROM relates_to WHERE fact_embedding = NONE ORDER BY fact;"
        "SELECT VALUE content FROM episode WHERE content_embedding = NONE ORDER BY content;"
    )
    return {"facts": facts, "episodes": episodes}


async def forget_vectors(store, content: str) -> None:
    """As if the job had stopped after writing this episode, before its indexing phase."""
    await store.query(
        "LET $episode = (SELECT VALUE id FROM episode WHERE content = $content)[0];"
        "UPDATE relates_to SET fact_embedding = NONE WHERE episodes CONTAINS $episode;"
        "UPDATE $episode SET content_embedding = NONE;"
        "DELETE episode_units WHERE episode = $episode;",
        {"content": content},
    )


async def test_a_job_embeds_its_facts_and_each_unit_of_its_episodes(graph) -> None:
    report = await run(graph, [CHAT, TEXT])
    assert await unembedded(graph) == {"facts": [], "episodes": []}
    facts = await graph.query_one("SELECT VALUE fact_embedding FROM relates_to")
    assert facts and all(len(vector) == 384 for vector in facts)
    rows = await graph.query_one(
        "SELECT episode.source AS source, episode.content AS content, vectors, units, "
        "episode.content_embedding AS mean FROM episode_units"
    )
    assert len(rows) == 2
    for row in rows:
        vectors = unpack_vectors(row["vectors"], row["units"])
        assert vectors.shape == (len(passage_units(row["source"], row["content"])), 384)
        mean = vectors.mean(axis=0)
        assert np.allclose(np.asarray(row["mean"]), mean / np.linalg.norm(mean), atol=1e-5)
    assert report.counts["facts_indexed"] == len(facts)
    assert report.counts["passages_indexed"] == sum(row["units"] for row in rows)


async def test_an_episode_is_written_with_its_vectors_and_leaves_the_phase_nothing(graph) -> None:
    """Names, facts and passage units are embedded at resolution and written with the
    episode: the job's indexing phase has nothing to read or embed."""
    report = await run(graph, [CHAT, TEXT])
    assert "index" not in report.timings
    assert await unembedded(graph) == {"facts": [], "episodes": []}
    assert report.counts["facts_indexed"] > 0 and report.counts["passages_indexed"] >= 3


class Counting:
    """The local model, counting its calls."""

    def __init__(self) -> None:
        self.model, self.calls = local_embedder(), 0
        self.dimension = self.model.dimension

    def embed(self, texts):
        self.calls += 1
        return self.model.embed(texts)


async def test_offline_extraction_embeds_an_episode_once_ahead_of_it(graph) -> None:
    """Names, facts and units go in the one call of the thread that parses the episode
    (overlapping the episodes before it): resolution and persist embed nothing more."""
    embedder = Counting()
    job = await jobs.job_create(graph, kind="ingest_episode")
    report = await ingest_job(graph, job["id"], [CHAT, TEXT], embedder=embedder, llm=None)
    assert report.counts["episodes"] == 2 and report.counts["facts_indexed"] > 0
    assert embedder.calls == 2
    assert "embed" not in report.timings and "index" not in report.timings
    assert await unembedded(graph) == {"facts": [], "episodes": []}


async def test_a_job_run_again_embeds_what_its_first_run_left(graph) -> None:
    await run(graph, [CHAT, TEXT])
    await forget_vectors(graph, CHAT.content)
    left = await unembedded(graph)
    assert left["episodes"] == [CHAT.content] and left["facts"]
    again = await run(graph, [CHAT, TEXT])
    assert again.counts["episodes_skipped"] == 2
    assert await unembedded(graph) == {"facts": [], "episodes": []}


async def test_a_job_leaves_other_episodes_to_the_sweep_which_embeds_them(graph) -> None:
    await run(graph, [CHAT])
    await forget_vectors(graph, CHAT.content)
    await run(graph, [TEXT])  # another job: its own episodes only
    left = await unembedded(graph)
    assert left["episodes"] == [CHAT.content] and left["facts"]
    written = await stragglers_index(graph, embedder=local_embedder())
    assert await unembedded(graph) == {"facts": [], "episodes": []}
    units = len(passage_units(CHAT.source, CHAT.content))
    assert written == len(left["facts"]) + units
    assert await stragglers_index(graph, embedder=local_embedder()) == 0


async def test_the_facts_of_an_episode_are_found_by_index_among_several(graph) -> None:
    from kgapp.graph import queries

    await run(graph, [CHAT, TEXT])
    chat, text = [
        (await graph.query_one("SELECT VALUE id FROM episode WHERE content = $c", {"c": c}))[0]
        for c in (CHAT.content, TEXT.content)
    ]
    # A fact held by both episodes is found from either.
    shared = (
        await graph.query_one(
            "SELECT VALUE id FROM relates_to WHERE episodes CONTAINS $e", {"e": text}
        )
    )[0]
    await graph.query("UPDATE $f SET episodes = [$a, $b]", {"f": shared, "a": chat, "b": text})
    for episode in (chat, text):
        found = await graph.query_one(queries.EPISODE_FACT_IDS, {"episode": episode})
        held = await graph.query_one(
            "SELECT VALUE id FROM relates_to WHERE episodes CONTAINS $e", {"e": episode}
        )
        assert sorted(map(str, found)) == sorted(map(str, held)) and shared in found
    plan = await graph.query_one(
        queries.EPISODE_FACT_IDS.strip().rstrip(";") + " EXPLAIN;", {"episode": chat}
    )
    assert plan["children"][0]["operator"] == "IndexScan", plan
