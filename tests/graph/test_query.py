"""The context `POST query` assembles: dated passages and facts, no empty section, and
the whole within its token budget."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kgapp.graph import jobs, schema
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.ingest.chunking import count_tokens
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.pipeline import ingest_job
from kgapp.graph.search.query import QueryRequest, query
from kgapp.graph.search.service import Moment

SCHEMA = Path(__file__).resolve().parents[2] / "schema"
QUESTION = "When did Caroline go to the support group?"


@pytest.fixture
async def sessions(raw_namespace):
    """Two sessions of a conversation, each on its own day."""
    store = await raw_namespace()
    await schema.migrate(store, schema.load_migrations(SCHEMA), embedding_dim=384)
    job = await jobs.job_create(store, kind="t")
    await ingest_job(store, job["id"], [
        EpisodeInput(content="Caroline: I went to the LGBTQ support group yesterday.\n"
                             "Melanie: That sounds powerful, Caroline.",
                     source="message", reference_time=datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        EpisodeInput(content="Melanie: I painted a lake sunrise last year.",
                     source="message", reference_time=datetime(2023, 5, 25, 9, tzinfo=UTC)),
    ], embedder=local_embedder(), llm=None)
    return store


def sections(text: str) -> dict[str, list[str]]:
    """The context's lines under each header; asserts no header stands empty."""
    found: dict[str, list[str]] = {}
    for block in filter(None, text.split("\n\n")):
        header, *lines = block.split("\n")
        assert header.startswith("## ") and lines, f"empty or headless section: {block!r}"
        found[header] = lines
    return found


async def ask(store, mode: str, **options: Any) -> str:
    request = QueryRequest(question=QUESTION, mode=mode, **options)
    return (await query(store, request, local_embedder(), None)).context_text


async def test_passages_start_with_their_date(sessions) -> None:
    found = sections(await ask(sessions, "naive"))
    assert list(found) == ["## Sources"]
    assert found["## Sources"][0].startswith("- [8 May 2023] [episode:")
    assert "support group yesterday" in found["## Sources"][0]


async def test_mix_dates_facts_and_leaves_out_empty_sections(sessions) -> None:
    found = sections(await ask(sessions, "mix"))
    assert list(found) == ["## Entities", "## Facts", "## Sources"]
    assert "- Caroline went to the LGBTQ support group. [since 7 May 2023]" in found["## Facts"]
    assert any(line.startswith("- [8 May 2023] [") for line in found["## Sources"])
    # Before any fact held, the facts section goes, header and all.
    before = await ask(sessions, "mix", moment=Moment.of(as_of=datetime(2021, 1, 1, tzinfo=UTC)))
    assert "## Facts" not in before and list(sections(before)) == ["## Entities", "## Sources"]


async def test_budget_counts_the_dates_and_cuts_whole_sections(sessions) -> None:
    full = await ask(sessions, "mix")
    exact = count_tokens(full)
    assert await ask(sessions, "mix", max_total_tokens=exact) == full
    # One token short, the only passage (its date included) no longer fits: its header
    # goes with it.
    short = await ask(sessions, "mix", max_total_tokens=exact - 1)
    assert short == full.split("\n\n## Sources")[0]
    first = full.split("\n")[:2]
    assert await ask(sessions, "mix", max_total_tokens=count_tokens("\n".join(first))) == "\n".join(first)
    assert await ask(sessions, "mix", max_total_tokens=count_tokens("\n".join(first)) - 1) == ""
