"""LLMClient with the real `openai` client against the scripted server on loopback."""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel, Field

from harness.llm_server import Reply, ScriptedLLM, embedding_of
from kgapp.graph.llm.cache import MemoryCache
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.errors import (
    LLMError,
    LLMInvalidAnswer,
    LLMQuotaExceeded,
    LLMRefused,
    LLMUnavailable,
)
from kgapp.graph.llm.schema import strict_json_schema
from kgapp.graph.llm.transport import LLMConfig
from tests import llm_fixtures

# The fixture, until tests/conftest.py imports it. Bound by assignment because ruff
# reports every test argument named like an imported fixture as F811.
scripted_llm = llm_fixtures.scripted_llm

SYSTEM = "You extract people."
USER = "Ada Lovelace was 36."
ADA = {"name": "Ada", "age": 36, "nickname": None}


class Person(BaseModel):
    name: str
    age: int
    nickname: str | None = None


class Note(BaseModel):
    text: str
    data: list[Any]


@dataclass
class Harness:
    """A client on the scripted server whose sleeps are recorded, not slept."""

    client: LLMClient
    delays: list[float] = field(default_factory=list)


def harness(server: ScriptedLLM, *, cache: MemoryCache | None = None, **config: Any) -> Harness:
    delays: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        delays.append(seconds)

    settings = LLMConfig(base_url=server.base_url, api_key="test-key", **config)
    return Harness(LLMClient(settings, cache=cache, sleep=fake_sleep), delays)


async def ask(h: Harness, schema: type[BaseModel] = Person, user: str = USER) -> Any:
    return await h.client.structured(task="people", schema=schema, system=SYSTEM, user=user)


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth - 1):
        value = [value]
    return value


class RecordingCache(MemoryCache):
    def __init__(self) -> None:
        super().__init__()
        self.puts: list[dict[str, Any]] = []

    async def put(self, key: str, value: str, **cost: Any) -> None:
        self.puts.append({"key": key, "value": value, **cost})
        await super().put(key, value, **cost)


# --- structured answers -------------------------------------------------------------


async def test_structured_sends_strict_schema_and_returns_the_model(scripted_llm) -> None:
    scripted_llm.queue(Reply(content=ADA))
    h = harness(scripted_llm, model="test-model")
    assert await ask(h) == Person(name="Ada", age=36)
    [body] = scripted_llm.chat_requests("people")
    assert body["model"] == "test-model"
    assert body["temperature"] == 0
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER},
    ]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "people", "schema": strict_json_schema(Person), "strict": True},
    }


async def test_usage_counts_calls_and_tokens_of_every_request(scripted_llm) -> None:
    scripted_llm.queue(Reply(content=ADA), Reply(content="not json"), Reply(content=ADA))
    h = harness(scripted_llm)
    await ask(h)
    await ask(h, user="another text")
    answer_tokens = len(json.dumps(ADA)) // 4
    usage = h.client.usage.as_dict()
    assert usage["calls"] == 3
    assert usage["completion_tokens"] == 2 * answer_tokens + len("not json") // 4
    assert usage["prompt_tokens"] == sum(
        len("".join(m["content"] for m in body["messages"])) // 4 for body in scripted_llm.requests
    )
    assert usage["cache_hits"] == 0 and usage["retries"] == 0


async def test_cache_hit_answers_without_a_request(scripted_llm) -> None:
    cache = RecordingCache()
    scripted_llm.on_chat(lambda body: ADA)
    h = harness(scripted_llm, cache=cache)
    first, second = await ask(h), await ask(h)
    assert first == second == Person(name="Ada", age=36)
    assert len(scripted_llm.requests) == 1
    assert h.client.usage.cache_hits == 1 and h.client.usage.calls == 1
    [put] = cache.puts
    assert json.loads(put["value"]) == ADA
    assert put["task"] == "people" and put["model"] == "gpt-4o-mini"
    assert put["prompt_tokens"] > 0 and put["completion_tokens"] > 0
    await ask(h, user="a different text")
    assert len(scripted_llm.requests) == 2


async def test_cache_key_depends_on_the_schema(scripted_llm) -> None:
    class Other(BaseModel):
        name: str

    scripted_llm.on_chat(lambda body: ADA)
    h = harness(scripted_llm, cache=MemoryCache())
    await ask(h)
    await ask(h, schema=Other)
    assert len(scripted_llm.requests) == 2


async def test_malformed_answer_is_repaired_with_exactly_two_calls(scripted_llm) -> None:
    cache = RecordingCache()
    scripted_llm.queue(Reply(content='{"name": "Ada", "age": '), Reply(content=ADA))
    h = harness(scripted_llm, cache=cache)
    assert await ask(h) == Person(name="Ada", age=36)
    first, repair = scripted_llm.chat_requests("people")
    assert repair["messages"][:2] == first["messages"]
    assert repair["messages"][2] == {"role": "assistant", "content": '{"name": "Ada", "age": '}
    assert repair["messages"][3]["role"] == "user"
    assert "not valid JSON" in repair["messages"][3]["content"]
    assert [json.loads(p["value"]) for p in cache.puts] == [ADA]


async def test_wrong_shape_quotes_the_validation_error(scripted_llm) -> None:
    scripted_llm.queue(Reply(content={"name": "Ada", "age": "old"}), Reply(content=ADA))
    h = harness(scripted_llm)
    assert await ask(h) == Person(name="Ada", age=36)
    prompt = scripted_llm.requests[1]["messages"][3]["content"]
    assert "age" in prompt and "does not match the schema" in prompt


async def test_malformed_twice_raises_invalid_answer_and_caches_nothing(scripted_llm) -> None:
    cache = MemoryCache()
    scripted_llm.queue(Reply(content="nope"), Reply(content="still nope"))
    h = harness(scripted_llm, cache=cache)
    with pytest.raises(LLMInvalidAnswer, match="not valid JSON"):
        await ask(h)
    assert len(scripted_llm.requests) == 2
    assert cache.entries == {}


async def test_long_validation_errors_are_truncated_in_the_repair_prompt(scripted_llm) -> None:
    bad = {"text": "x", "data": "not a list " * 2000}
    scripted_llm.queue(Reply(content=bad), Reply(content={"text": "ok", "data": []}))
    h = harness(scripted_llm)
    await ask(h, schema=Note)
    prompt = scripted_llm.requests[1]["messages"][3]["content"]
    assert len(prompt) < 2_000 + 200


@pytest.mark.parametrize(
    ("hostile", "reason"),
    [
        (json.dumps({"text": "x" * 200_001, "data": []}), "characters"),
        (json.dumps({"text": "x", "data": nested(40)}), "nested deeper"),
        ('{"text": "x", "data": ' + "[" * 50_000 + "]" * 50_000 + "}", "not valid JSON"),
    ],
    ids=["huge", "deep", "stack-breaking"],
)
async def test_hostile_answers_are_rejected(scripted_llm, hostile: str, reason: str) -> None:
    scripted_llm.queue(Reply(content=hostile), Reply(content=hostile))
    h = harness(scripted_llm)
    with pytest.raises(LLMInvalidAnswer, match=reason):
        await ask(h, schema=Note)
    assert len(scripted_llm.requests) == 2
    assert len(scripted_llm.requests[1]["messages"][2]["content"]) <= 200_000


async def test_answers_within_the_limits_are_accepted(scripted_llm) -> None:
    scripted_llm.queue(Reply(content={"text": "x" * 150_000, "data": nested(30)}))
    h = harness(scripted_llm)
    note = await ask(h, schema=Note)
    assert len(note.text) == 150_000 and len(scripted_llm.requests) == 1


async def test_refusal_raises_refused_without_repair(scripted_llm) -> None:
    scripted_llm.queue(Reply(refusal="I can't help with that."))
    h = harness(scripted_llm)
    with pytest.raises(LLMRefused, match="can't help"):
        await ask(h)
    assert len(scripted_llm.requests) == 1
    assert h.client.usage.calls == 1


async def test_content_filter_raises_refused(scripted_llm) -> None:
    scripted_llm.queue(Reply(content="", finish_reason="content_filter"))
    with pytest.raises(LLMRefused, match="content filter"):
        await ask(harness(scripted_llm))


async def test_task_name_is_checked_before_any_request(scripted_llm) -> None:
    h = harness(scripted_llm)
    with pytest.raises(ValueError, match="task"):
        await h.client.structured(task="bad name!", schema=Person, system="s", user="u")
    assert scripted_llm.requests == []


# --- retry policy -------------------------------------------------------------------


def http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [
        (lambda: {"retry-after": "1"}, 1.0, 1.0),
        (lambda: {"retry-after-ms": "250", "retry-after": "9"}, 0.25, 0.25),
        (lambda: {"retry-after": "120"}, 30.0, 30.0),
        (lambda: {"retry-after": http_date(10)}, 7.0, 10.0),  # made late: dates age
    ],
    ids=["seconds", "milliseconds-first", "capped", "http-date"],
)
async def test_rate_limit_waits_what_the_server_asks(
    scripted_llm, headers: Callable[[], dict[str, str]], low: float, high: float
) -> None:
    limited = Reply(status=429, error_code="rate_limit_exceeded", headers=headers())
    scripted_llm.queue(limited, Reply(content=ADA))
    h = harness(scripted_llm)
    assert await ask(h) == Person(name="Ada", age=36)
    [delay] = h.delays
    assert low <= delay <= high
    assert len(scripted_llm.requests) == 2
    assert h.client.usage.retries == 1 and h.client.usage.calls == 1


async def test_rate_limit_retry_after_one_second_waits_exactly_that(scripted_llm) -> None:
    scripted_llm.queue(Reply(status=429, headers={"retry-after": "1"}), Reply(content=ADA))
    h = harness(scripted_llm)
    await ask(h)
    assert h.delays == [1.0]


async def test_insufficient_quota_is_never_retried(scripted_llm) -> None:
    scripted_llm.queue(
        Reply(status=429, error_code="insufficient_quota", content="You exceeded your quota."),
        Reply(content=ADA),
    )
    h = harness(scripted_llm)
    with pytest.raises(LLMQuotaExceeded, match="exceeded your quota"):
        await ask(h)
    assert len(scripted_llm.requests) == 1
    assert h.delays == [] and h.client.usage.retries == 0


async def test_server_errors_exhaust_retries_with_jittered_backoff(scripted_llm) -> None:
    h = harness(scripted_llm, max_retries=3, backoff_base=0.5, backoff_max=1.5)
    scripted_llm.queue(*[Reply(status=500, content="boom")] * 4, Reply(content=ADA))
    with pytest.raises(LLMUnavailable, match="4 tries.*boom"):
        await ask(h)
    assert len(scripted_llm.requests) == 4
    assert h.client.usage.retries == 3
    ceilings = [0.5, 1.0, 1.5]
    assert len(h.delays) == 3
    assert all(0 <= d <= c for d, c in zip(h.delays, ceilings, strict=True))


async def test_server_error_then_success_is_retried(scripted_llm) -> None:
    scripted_llm.queue(Reply(status=503), Reply(status=502), Reply(content=ADA))
    h = harness(scripted_llm)
    assert await ask(h) == Person(name="Ada", age=36)
    assert h.client.usage.retries == 2 and len(h.delays) == 2


async def test_slow_reply_times_out_and_is_retried(scripted_llm) -> None:
    scripted_llm.queue(Reply(content=ADA, delay=5.0), Reply(content=ADA))
    h = harness(scripted_llm, timeout=0.5)
    started = time.monotonic()
    assert await ask(h) == Person(name="Ada", age=36)
    assert time.monotonic() - started < 4.0
    assert len(scripted_llm.requests) == 2
    assert h.client.usage.retries == 1


async def test_timeouts_exhaust_retries(scripted_llm) -> None:
    scripted_llm.queue(*[Reply(content=ADA, delay=5.0)] * 2)
    h = harness(scripted_llm, timeout=0.3, max_retries=1)
    with pytest.raises(LLMUnavailable, match="no answer within 0.3s"):
        await ask(h)


@pytest.mark.parametrize("status", [401, 403, 404])
async def test_credentials_or_model_errors_are_not_retried(scripted_llm, status: int) -> None:
    scripted_llm.queue(Reply(status=status, content="Incorrect API key provided"))
    h = harness(scripted_llm)
    with pytest.raises(LLMUnavailable, match="OPENAI_API_KEY"):
        await ask(h)
    assert len(scripted_llm.requests) == 1


@pytest.mark.parametrize("status", [400, 422])
async def test_bad_request_raises_plain_error_with_the_server_message(
    scripted_llm, status: int
) -> None:
    scripted_llm.queue(Reply(status=status, content="Invalid schema for response_format"))
    h = harness(scripted_llm)
    with pytest.raises(LLMError, match="Invalid schema") as raised:
        await ask(h)
    assert type(raised.value) is LLMError
    assert len(scripted_llm.requests) == 1


async def test_unreachable_server_is_unavailable_after_retries() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    delays: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        delays.append(seconds)

    config = LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", api_key=None, max_retries=2)
    client = LLMClient(config, sleep=fake_sleep)
    with pytest.raises(LLMUnavailable, match="connection failed"):
        await client.structured(task="people", schema=Person, system="s", user="u")
    assert len(delays) == 2


async def test_unscripted_call_is_a_server_error(scripted_llm) -> None:
    h = harness(scripted_llm, max_retries=0)
    with pytest.raises(LLMUnavailable, match="no scripted answer"):
        await ask(h)


def test_client_works_across_event_loops(scripted_llm) -> None:
    scripted_llm.on_chat(lambda body: ADA)
    h = harness(scripted_llm)
    assert asyncio.run(ask(h)) == asyncio.run(ask(h)) == Person(name="Ada", age=36)


# --- the scripted server itself ------------------------------------------------------


async def test_on_chat_handler_sees_the_body_and_requests_filter_by_task(scripted_llm) -> None:
    seen: list[str] = []

    def handler(body: dict[str, Any]) -> Reply:
        seen.append(body["messages"][1]["content"])
        return Reply(content={"name": body["messages"][1]["content"], "age": 1})

    scripted_llm.on_chat(handler)
    h = harness(scripted_llm)
    assert (await ask(h, user="Bob")).name == "Bob"
    await h.client.structured(task="other", schema=Person, system="s", user="Eve")
    assert seen == ["Bob", "Eve"]
    assert [b["messages"][1]["content"] for b in scripted_llm.chat_requests("other")] == ["Eve"]
    assert len(scripted_llm.chat_requests()) == 2


# --- strict schema ---------------------------------------------------------------------


class Place(BaseModel):
    title: str = Field(description="A field named like the keyword.")
    country: str | None = None


class Event(BaseModel):
    name: str = "unnamed"
    where: Place = Field(description="Where it happened.")
    also: list[Place]
    maybe: Place | None = None
    kind: str = Field(default="meeting", max_length=20)


def schema_nodes(node: Any) -> list[dict[str, Any]]:
    """Every schema node, walking by keyword so property names are not mistaken for keywords."""
    if not isinstance(node, dict):
        return []
    found = [node]
    for keyword in ("properties", "$defs"):
        for sub in node.get(keyword, {}).values():
            found += schema_nodes(sub)
    for keyword in ("anyOf", "allOf"):
        for sub in node.get(keyword, []):
            found += schema_nodes(sub)
    found += schema_nodes(node.get("items"))
    return found


def test_strict_json_schema_closes_every_object_and_requires_every_property() -> None:
    schema = strict_json_schema(Event)
    objects = [n for n in schema_nodes(schema) if n.get("type") == "object"]
    assert len(objects) >= 3  # Event, Place in $defs, the inlined described Place
    for node in objects:
        assert node["additionalProperties"] is False
        assert node["required"] == list(node["properties"])
    for node in schema_nodes(schema):
        assert "default" not in node and "title" not in node
        assert not ("$ref" in node and len(node) > 1)
    assert set(schema["$defs"]) == {"Place"}
    assert "title" in schema["$defs"]["Place"]["properties"]
    assert {"type": "null"} in schema["properties"]["maybe"]["anyOf"]
    assert {"$ref": "#/$defs/Place"} in schema["properties"]["maybe"]["anyOf"]
    assert schema["properties"]["where"]["description"] == "Where it happened."
    assert schema["properties"]["kind"] == {"type": "string", "maxLength": 20}
    assert schema["properties"]["also"]["items"] == {"$ref": "#/$defs/Place"}


def test_strict_json_schema_gives_each_caller_a_copy_of_its_own() -> None:
    first = strict_json_schema(Event)
    first["properties"].clear()
    first["$defs"]["Place"]["required"].append("nowhere")
    again = strict_json_schema(Event)
    assert again["properties"] and "nowhere" not in again["$defs"]["Place"]["required"]


def test_strict_json_schema_rejects_free_form_mappings() -> None:
    class Loose(BaseModel):
        attributes: dict[str, str]

    with pytest.raises(ValueError, match="free-form mapping"):
        strict_json_schema(Loose)


def test_strict_json_schema_leaves_the_pydantic_schema_alone() -> None:
    before = Event.model_json_schema()
    strict_json_schema(Event)
    assert Event.model_json_schema() == before


# --- embeddings ---------------------------------------------------------------------


async def test_embed_returns_vectors_of_the_requested_dimension(scripted_llm) -> None:
    h = harness(scripted_llm)
    vectors = await h.client.embed(["alpha", "beta", "alpha"], model="emb", dimensions=64)
    assert [len(v) for v in vectors] == [64, 64, 64]
    assert vectors[0] == vectors[2] and vectors[0] != vectors[1]
    assert math.isclose(sum(x * x for x in vectors[0]), 1.0, rel_tol=1e-6)
    [body] = scripted_llm.embedding_requests()
    assert body["dimensions"] == 64 and body["encoding_format"] == "float"
    assert h.client.usage.calls == 1 and h.client.usage.prompt_tokens > 0


async def test_embed_batches_and_keeps_order(scripted_llm) -> None:
    h = harness(scripted_llm)
    texts = [f"text {i}" for i in range(600)]
    vectors = await h.client.embed(texts, model="emb")
    assert [len(b["input"]) for b in scripted_llm.embedding_requests()] == [256, 256, 88]
    assert "dimensions" not in scripted_llm.embedding_requests()[0]
    assert vectors[0] == embedding_of("text 0") and vectors[599] == embedding_of("text 599")
    assert len(vectors[0]) == 384
    assert await h.client.embed([], model="emb") == []


async def test_embeddings_also_decode_from_base64(scripted_llm) -> None:
    # The openai client asks for base64 when no encoding_format is given; the server
    # must serve that too for tests that call the client directly.
    import openai

    api = openai.AsyncOpenAI(base_url=scripted_llm.base_url, api_key="k", max_retries=0)
    response = await api.embeddings.create(input=["alpha"], model="emb", dimensions=8)
    await api.close()
    assert response.data[0].embedding == pytest.approx(embedding_of("alpha", 8), rel=1e-6)
