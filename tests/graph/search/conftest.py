"""What the search tests share: a small graph built by the real offline pipeline."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kgapp.graph import jobs
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.pipeline import ingest_job


def at(year: int, month: int, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


@pytest.fixture
async def alice_moves(migrated_store):
    """Alice at Acme (Jan 2024), then at Beta (from Feb 2024), each said in an episode the
    pipeline ingested; the store and the system time between the two episodes."""
    store = await migrated_store()

    async def run(text: str, when: datetime) -> None:
        job = await jobs.job_create(store, kind="t")
        await ingest_job(
            store,
            job["id"],
            [EpisodeInput(content=text, source="text", reference_time=when)],
            embedder=local_embedder(),
            llm=None,
        )

    await run("Alice works at Acme Corp.", at(2024, 1, 15))
    between = datetime.now(UTC)
    await run("Alice joined Beta Inc last month.", at(2024, 3, 10))
    return store, between
