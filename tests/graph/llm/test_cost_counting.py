"""Counting what model calls use (the real `openai` client against the scripted server),
pricing it (defaults, KG_LLM_PRICES, unknown models), adding it up, and estimating it
before ingesting, with the chunker the worker uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel

from harness.llm_server import Reply
from kgapp.graph.chunking import chunk_text, count_tokens, group_messages
from kgapp.graph.costs import month_starts, usage_total
from kgapp.graph.documents.parse import parse_document
from kgapp.graph.documents.pdf import PdfLimits
from kgapp.graph.ingest.chunk import CHUNK_OVERLAP, CHUNK_TOKENS
from kgapp.graph.ingest.estimate import (
    Upload,
    episodes_estimate,
    estimates_total,
    upload_episodes,
)
from kgapp.graph.llm.cache import MemoryCache
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prices import DEFAULT_PRICES, Price, cost_usd, parse_prices, price_of
from kgapp.graph.llm.transport import LLMConfig
from kgapp.graph.llm.usage import LLMUsage
from kgapp.graph.ontology import DEFAULT_ONTOLOGY
from tests import llm_fixtures

scripted_llm = llm_fixtures.scripted_llm
ROOT = Path(__file__).resolve().parents[3]


class City(BaseModel):
    name: str


def served(text: str) -> int:
    """The scripted server's token count (its `usage`)."""
    return max(1, len(text) // 4) if text else 0


def client(server, model: str, usage: LLMUsage, cache: MemoryCache | None = None) -> LLMClient:
    config = LLMConfig(base_url=server.base_url, api_key="k", model=model, max_retries=0)
    return LLMClient(config, usage=usage, cache=cache)


async def test_calls_and_tokens_are_counted_per_model_and_priced(scripted_llm) -> None:
    scripted_llm.on_chat(lambda body: {"name": "Lisbon"})
    usage = LLMUsage()
    cache = MemoryCache()
    mini, local = (
        client(scripted_llm, "gpt-4o-mini", usage, cache),
        client(scripted_llm, "my-llama", usage),
    )
    for user in ("Where is the tower?", "Which capital?"):
        assert (
            await mini.structured(task="city", schema=City, system="Name it.", user=user)
        ).name == "Lisbon"
    await local.structured(task="city", schema=City, system="Name it.", user="One more")
    await mini.embed(["a sentence", "another one"], model="text-embedding-3-small")
    # The same question again comes from the cache: no call, nothing billed.
    await mini.structured(task="city", schema=City, system="Name it.", user="Which capital?")
    rows = {row["model"]: row for row in usage.rows()}
    answer = served(json.dumps({"name": "Lisbon"}))
    asked = [served("Name it." + u) for u in ("Where is the tower?", "Which capital?")]
    assert rows["gpt-4o-mini"] == {
        "model": "gpt-4o-mini",
        "calls": 2,
        "input_tokens": sum(asked),
        "output_tokens": 2 * answer,
        "cost_usd": pytest.approx((sum(asked) * 0.15 + 2 * answer * 0.60) / 1e6),
    }
    assert rows["my-llama"]["calls"] == 1 and rows["my-llama"]["cost_usd"] is None
    embedded = served("a sentence") + served("another one")
    assert rows["text-embedding-3-small"] == {
        "model": "text-embedding-3-small",
        "calls": 1,
        "input_tokens": embedded,
        "output_tokens": 0,
        "cost_usd": pytest.approx(embedded * 0.02 / 1e6),
    }
    assert usage.calls == 4 and usage.cache_hits == 1 and len(scripted_llm.chat_requests()) == 3
    assert usage.as_dict()["prompt_tokens"] == sum(r["input_tokens"] for r in rows.values())


async def test_a_repair_is_a_second_call_and_a_retried_error_none(scripted_llm) -> None:
    scripted_llm.queue(
        Reply(status=500, content="busy"),
        Reply(content="{not json"),
        Reply(content={"name": "Porto"}),
    )
    usage = LLMUsage()
    config = LLMConfig(
        base_url=scripted_llm.base_url,
        api_key="k",
        model="gpt-4.1-nano",
        max_retries=2,
        backoff_base=0.001,
        backoff_max=0.002,
    )
    answer = await LLMClient(config, usage=usage).structured(
        task="city", schema=City, system="s", user="u"
    )
    assert answer.name == "Porto"
    assert usage.retries == 1 and [r["calls"] for r in usage.rows()] == [2]


def test_price_table_defaults_overrides_and_unknown_models() -> None:
    assert parse_prices("") == DEFAULT_PRICES
    assert {
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "o3-mini",
        "o4-mini",
        "text-embedding-3-small",
        "text-embedding-3-large",
    } <= set(DEFAULT_PRICES)
    table = parse_prices('{"gpt-4o-mini": {"input": 1, "output": 2}, "llama3": {"input": 0.05}}')
    assert table["gpt-4o-mini"] == Price(1.0, 2.0) and table["llama3"] == Price(0.05, 0.0)
    assert table["gpt-4o"] == DEFAULT_PRICES["gpt-4o"]
    assert cost_usd(table, "gpt-4o-mini", 1_000_000, 500_000) == pytest.approx(2.0)
    # A dated snapshot is priced as its model; the longest name wins.
    assert price_of(DEFAULT_PRICES, "gpt-4o-mini-2024-07-18") == DEFAULT_PRICES["gpt-4o-mini"]
    assert price_of(DEFAULT_PRICES, "gpt-4o-2024-08-06") == DEFAULT_PRICES["gpt-4o"]
    assert price_of(DEFAULT_PRICES, "gpt-4o2") is None
    assert cost_usd(DEFAULT_PRICES, "mistral-large", 10, 10) is None
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_prices('{"gpt-4o": ')
    with pytest.raises(ValueError, match=r'KG_LLM_PRICES\["x"\] must be'):
        parse_prices('{"x": {"input": "cheap"}}')
    with pytest.raises(ValueError, match="JSON object"):
        parse_prices("[1, 2]")


def test_bad_prices_stop_the_settings_with_the_reason() -> None:
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "kgapp.settings.test",
        "KG_LLM_PRICES": '{"a": {"input": -1}}',
    }
    code = "import django; django.setup()"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode != 0
    assert "ImproperlyConfigured" in run.stderr and 'KG_LLM_PRICES["a"] must be' in run.stderr


def test_usage_totals_keep_unpriced_models_apart() -> None:
    rows = [
        {"model": "gpt-4o", "calls": 2, "input_tokens": 100, "output_tokens": 10, "cost_usd": 0.5},
        {"model": "llama", "calls": 1, "input_tokens": 50, "output_tokens": 5, "cost_usd": None},
    ]
    assert usage_total(rows) == {
        "calls": 3,
        "input_tokens": 150,
        "output_tokens": 15,
        "cost_usd": 0.5,
        "unpriced_models": ["llama"],
    }
    starts = month_starts(datetime(2025, 2, 10, 3, tzinfo=UTC), 3)
    assert [f"{s:%Y-%m-%d}" for s in starts] == ["2025-02-01", "2025-01-01", "2024-12-01"]


def upload(name: str, data: bytes) -> Upload:
    return Upload(name, data, parse_document(name, data, max_bytes=10_000_000))


async def test_estimate_follows_the_chunker_and_the_pipeline_calls() -> None:
    text = "\n\n".join(
        f"Section {i}. Person{i} joined Company{i} in City{i} and stayed for years."
        for i in range(300)
    )
    episodes = await upload_episodes(upload("long.txt", text.encode()), PdfLimits())
    chunks = chunk_text(text, max_tokens=CHUNK_TOKENS, overlap_tokens=CHUNK_OVERLAP)
    assert [e.content for e in episodes] == [c.text for c in chunks] and len(chunks) > 3
    estimate = episodes_estimate(episodes, DEFAULT_ONTOLOGY, model="gpt-4o", prices=DEFAULT_PRICES)
    assert estimate.chunks == len(chunks) and estimate.calls == 2 * len(chunks) - 1
    # Every chunk is read once as itself and up to three times as context.
    content = sum(c.token_count for c in chunks)
    assert 2 * content < estimate.input_tokens < 4 * content + len(chunks) * 3000
    assert estimate.cost_usd == pytest.approx(
        (estimate.input_tokens * 2.5 + estimate.output_tokens * 10) / 1e6
    )
    offline = episodes_estimate(episodes, DEFAULT_ONTOLOGY, model=None, prices=DEFAULT_PRICES)
    assert (offline.chunks, offline.calls, offline.input_tokens, offline.cost_usd) == (
        len(chunks),
        0,
        0,
        0.0,
    )
    unknown = episodes_estimate(episodes, DEFAULT_ONTOLOGY, model="llama", prices=DEFAULT_PRICES)
    assert unknown.cost_usd is None and unknown.input_tokens == estimate.input_tokens
    assert estimates_total([estimate, unknown]).cost_usd is None
    assert estimates_total([estimate, offline]).calls == estimate.calls


async def test_a_conversation_is_estimated_by_its_message_windows() -> None:
    messages = [
        {
            "speaker": "Ann" if i % 2 else "Ben",
            "text": f"message number {i} about the garden",
            "timestamp": f"2024-01-{1 + i // 40:02d}T10:{i % 40:02d}:00Z",
        }
        for i in range(120)
    ]
    document = upload("chat.json", json.dumps(messages).encode())
    assert document.parsed.kind == "conversation"
    episodes = await upload_episodes(document, PdfLimits())
    assert len(episodes) == len(group_messages(list(document.parsed.messages))) > 1
    assert [e.source for e in episodes] == ["message"] * len(episodes)
    estimate = episodes_estimate(
        episodes, DEFAULT_ONTOLOGY, model="gpt-4o-mini", prices=DEFAULT_PRICES
    )
    assert estimate.chunks == len(episodes) and estimate.calls == 2 * len(episodes) - 1
    assert estimate.input_tokens > sum(count_tokens(e.content) for e in episodes)
