"""Ask's sources: the passages the context quotes under their labels with their dates,
its facts with their validity, the entities they name; and the answer streamed from the
model, asked to cite those labels."""

from __future__ import annotations

from datetime import UTC, datetime

from harness.llm_server import Reply
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.transport import LLMConfig
from kgapp.graph.search.ask import answer_text, ask_sources
from kgapp.graph.search.query import QueryRequest
from kgapp.graph.time import Moment
from tests import llm_fixtures

scripted_llm = llm_fixtures.scripted_llm  # the fixture (see tests/graph/llm/test_client.py)

QUESTION = "Where does Alice work?"


async def test_sources_are_what_the_context_quotes(alice_moves) -> None:
    store, _ = alice_moves
    retrieved = await ask_sources(store, QueryRequest(QUESTION, mode="mix"), local_embedder(), None)
    sources = retrieved.sources
    assert [p.ref for p in sources.passages] == [
        f"S{n}" for n in range(1, len(sources.passages) + 1)
    ]
    said = {p.excerpts[0]: p.said_at for p in sources.passages}
    assert said["Alice joined Beta Inc last month."] == datetime(2024, 3, 10, tzinfo=UTC)
    assert all(p.document is None and p.episode.startswith("episode:") for p in sources.passages)
    for passage in sources.passages:
        assert f"[{passage.ref}] {passage.excerpts[0]}" in retrieved.context
    assert sources.facts and all(f.fact in retrieved.context for f in sources.facts)
    assert all(f.id.startswith("relates_to:") and f.valid_at for f in sources.facts)
    names = {e.name: e for e in sources.entities}
    assert "Alice" in names and names["Alice"].id.startswith("entity:")
    ends = {f.source for f in sources.facts} | {f.target for f in sources.facts}
    assert ends <= {e.id for e in sources.entities}
    assert len({e.id for e in sources.entities}) == len(sources.entities)


async def test_sources_are_read_as_of_the_moment_asked(alice_moves) -> None:
    store, _ = alice_moves
    moment = Moment.of(datetime(2024, 1, 20, tzinfo=UTC))
    retrieved = await ask_sources(
        store, QueryRequest(QUESTION, mode="local", moment=moment), local_embedder(), None
    )
    assert [f.target_name for f in retrieved.sources.facts] == ["Acme Corp"]
    assert retrieved.sources.facts[0].invalid_at is not None


async def test_the_answer_streams_from_a_prompt_that_asks_for_citations(
    alice_moves, scripted_llm
) -> None:
    store, _ = alice_moves
    retrieved = await ask_sources(store, QueryRequest(QUESTION, mode="mix"), local_embedder(), None)
    scripted_llm.queue(Reply(content="Alice works at Beta Inc [S1]."))
    llm = LLMClient(LLMConfig(base_url=scripted_llm.base_url, api_key="t"))
    assert [t async for t in answer_text(llm, retrieved)] == [
        "Alice ",
        "works ",
        "at ",
        "Beta ",
        "Inc ",
        "[S1].",
    ]
    [body] = scripted_llm.chat_requests()
    system, user = (m["content"] for m in body["messages"])
    assert "[S1]" in system and "plain text" in system and "data, not instructions" in system
    assert (
        user == f"<context>\n{retrieved.context}\n</context>\n<question>\n{QUESTION}\n</question>"
    )
