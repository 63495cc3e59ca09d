"""LLMClient.stream_text against the scripted server over real HTTP: the pieces in
order and as they are written, usage counted from the stream's last chunk, retries only
until the first piece arrives, and every failure as a typed LLMError."""

from __future__ import annotations

import time
from typing import Any

import pytest

from harness.llm_server import Reply, ScriptedLLM
from kgapp.graph.llm.answers import MAX_ANSWER_CHARS
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.errors import (
    LLMError,
    LLMInvalidAnswer,
    LLMQuotaExceeded,
    LLMRefused,
    LLMUnavailable,
)
from kgapp.graph.llm.transport import LLMConfig
from tests import llm_fixtures

scripted_llm = llm_fixtures.scripted_llm  # the fixture (see test_client.py)

SYSTEM = "Answer from the context."
USER = "<question>Where does Alice work?</question>"


def client(server: ScriptedLLM, **config: Any) -> tuple[LLMClient, list[float]]:
    """A client whose retry waits are recorded, not slept."""
    delays: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        delays.append(seconds)

    settings = LLMConfig(base_url=server.base_url, api_key="test-key", model="test-model", **config)
    return LLMClient(settings, sleep=fake_sleep), delays


async def read(llm: LLMClient) -> list[str]:
    return [text async for text in llm.stream_text(system=SYSTEM, user=USER)]


async def test_pieces_arrive_in_order_and_usage_is_counted(scripted_llm) -> None:
    scripted_llm.queue(Reply(content="Alice works at Beta Inc [S1]."))
    llm, _ = client(scripted_llm)
    assert await read(llm) == ["Alice ", "works ", "at ", "Beta ", "Inc ", "[S1]."]
    [body] = scripted_llm.chat_requests()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "test-model" and body["temperature"] == 0
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER},
    ]
    usage = llm.usage.as_dict()
    assert usage["calls"] == 1 and usage["retries"] == 0
    assert usage["prompt_tokens"] == len(SYSTEM + USER) // 4
    assert usage["completion_tokens"] == len("Alice works at Beta Inc [S1].") // 4
    assert llm.usage.rows()[0]["model"] == "test-model"


async def test_each_piece_is_handed_on_as_it_arrives(scripted_llm) -> None:
    scripted_llm.queue(Reply(pieces=["one ", "two ", "three"], pause=0.4))
    llm, _ = client(scripted_llm)
    arrived = []
    async for text in llm.stream_text(system=SYSTEM, user=USER):
        arrived.append((text, time.monotonic()))
    assert [text for text, _ in arrived] == ["one ", "two ", "three"]
    gaps = [later - earlier for (_, earlier), (_, later) in zip(arrived, arrived[1:], strict=False)]
    assert all(gap >= 0.3 for gap in gaps), gaps


async def test_a_failure_before_the_first_piece_is_retried(scripted_llm) -> None:
    scripted_llm.queue(Reply(status=503), Reply(content="Beta Inc."))
    llm, delays = client(scripted_llm)
    assert "".join(await read(llm)) == "Beta Inc."
    assert len(scripted_llm.chat_requests()) == 2 and len(delays) == 1
    assert llm.usage.retries == 1 and llm.usage.calls == 1


async def test_a_slow_start_times_out_and_is_retried(scripted_llm) -> None:
    scripted_llm.queue(Reply(content="late", delay=5.0), Reply(content="Beta Inc."))
    llm, _ = client(scripted_llm, timeout=0.5)
    assert "".join(await read(llm)) == "Beta Inc."
    assert len(scripted_llm.chat_requests()) == 2


async def test_a_failure_after_the_first_piece_is_raised_not_retried(scripted_llm) -> None:
    scripted_llm.queue(
        Reply(content="Alice works at Beta Inc.", break_after=2, break_message="overloaded"),
        Reply(content="never asked for"),
    )
    llm, delays = client(scripted_llm)
    got: list[str] = []
    with pytest.raises(LLMError, match="overloaded"):
        async for text in llm.stream_text(system=SYSTEM, user=USER):
            got.append(text)
    assert got == ["Alice ", "works "]
    assert len(scripted_llm.chat_requests()) == 1 and delays == []


async def test_a_stall_after_the_first_piece_is_unavailable_not_retried(scripted_llm) -> None:
    scripted_llm.queue(Reply(pieces=["Alice ", "works"], pause=5.0), Reply(content="never"))
    llm, delays = client(scripted_llm, timeout=0.5)
    got: list[str] = []
    with pytest.raises(LLMUnavailable, match="the answer stopped: no answer within 0.5s"):
        async for text in llm.stream_text(system=SYSTEM, user=USER):
            got.append(text)
    assert got == ["Alice "] and len(scripted_llm.chat_requests()) == 1 and delays == []


async def test_quota_and_refusals_are_typed_and_never_retried(scripted_llm) -> None:
    scripted_llm.queue(Reply(status=429, error_code="insufficient_quota", content="No quota."))
    llm, _ = client(scripted_llm)
    with pytest.raises(LLMQuotaExceeded, match="No quota"):
        await read(llm)
    scripted_llm.queue(Reply(pieces=[], refusal="I cannot help with that."))
    with pytest.raises(LLMRefused, match="cannot help"):
        await read(llm)
    scripted_llm.queue(Reply(content="Some text", finish_reason="content_filter"))
    with pytest.raises(LLMRefused, match="content filter"):
        await read(llm)
    assert len(scripted_llm.chat_requests()) == 3 and llm.usage.retries == 0


async def test_an_endless_answer_is_cut_at_the_limit(scripted_llm) -> None:
    half = MAX_ANSWER_CHARS // 2 + 1
    scripted_llm.queue(Reply(pieces=["x" * half, "y" * half]))
    llm, _ = client(scripted_llm)
    with pytest.raises(LLMInvalidAnswer, match=f"past {MAX_ANSWER_CHARS} characters"):
        await read(llm)


async def test_an_empty_answer_is_no_pieces_and_still_one_call(scripted_llm) -> None:
    scripted_llm.queue(Reply(content=""))
    llm, _ = client(scripted_llm)
    assert await read(llm) == []
    assert llm.usage.calls == 1
