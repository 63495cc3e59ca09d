"""Spreading activation's invariants on hand-made graphs (SA-INV-01..07)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from kgapp.graph.search.activation import ActivationConfig, Link, effective_confidence, spread

NOW = datetime(2024, 6, 1, tzinfo=UTC)


def graph(edges: list[tuple[str, str]], confidence: float = 1.0):
    links = [Link(a, b, confidence, 0, NOW) for a, b in edges]

    async def neighbours(keys: Sequence[str]) -> list[Link]:
        wanted = set(keys)
        return [link for link in links if link.source in wanted or link.target in wanted]

    return neighbours


async def test_decays_per_hop_and_respects_the_threshold() -> None:
    levels = await spread(
        {"a": 1.0}, graph([("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")]), ActivationConfig(), NOW
    )
    assert levels["a"] == pytest.approx(1.0)
    assert levels["b"] == pytest.approx(0.85)  # one hop: score x decay x confidence
    # Every active node spreads on every hop, so c is reached twice (clamped sum) ...
    assert levels["c"] == pytest.approx(min(1.0, 2 * 0.85**2))
    # ... d once, on the third hop, from c's first arrival.
    assert levels["d"] == pytest.approx(0.85**3)
    assert "e" not in levels  # beyond max_hops = 3
    weak = await spread({"a": 0.05}, graph([("a", "b")]), ActivationConfig(), NOW)
    assert weak == {}  # SA-INV-01: a seed below the threshold does not start


async def test_clamped_sum_and_inhibition() -> None:
    # Many paths into "hub": the sum is clamped at 1.0 and an inhibited node gets no more.
    edges = [(f"s{i}", "hub") for i in range(10)]
    levels = await spread({f"s{i}": 1.0 for i in range(10)}, graph(edges), ActivationConfig(), NOW)
    assert levels["hub"] <= 1.0
    assert all(v <= 1.0 for v in levels.values())
    inhibited = await spread({"a": 1.0, "b": 0.9}, graph([("a", "b")]), ActivationConfig(), NOW)
    assert inhibited["b"] == pytest.approx(0.9)


async def test_per_hop_cap() -> None:
    edges = [("root", f"leaf{i}") for i in range(200)]
    levels = await spread({"root": 1.0}, graph(edges), ActivationConfig(max_active=50), NOW)
    assert len(levels) <= 50


async def test_deadline_returns_what_there_is() -> None:
    async def slow(keys: Sequence[str]) -> list[Link]:
        await asyncio.sleep(1)
        return [Link("a", "b", 1.0, 0, NOW)]

    started = asyncio.get_running_loop().time()
    levels = await spread({"a": 1.0}, slow, ActivationConfig(deadline=0.1), NOW)
    assert asyncio.get_running_loop().time() - started < 0.5
    assert levels == {"a": 1.0}


def test_weight_evolution_is_capped_and_leaves_unretrieved_facts_alone() -> None:
    assert effective_confidence(0.7, 0) == 0.7
    assert effective_confidence(0.7, 10) == pytest.approx(0.7)  # min(1.0, ...) caps the boost
    with pytest.raises(ValueError):
        ActivationConfig(threshold=0.9, inhibition=0.8)
