"""The rerankers' arithmetic, on hand-made inputs."""

from __future__ import annotations

import math

import pytest

from kgapp.graph.search import rerank


def test_rrf_sums_reciprocal_ranks_with_k_1() -> None:
    fused = dict(rerank.rrf([["a", "b", "c"], ["b", "c"], ["c"]]))
    assert fused["a"] == pytest.approx(1 / 1)
    assert fused["b"] == pytest.approx(1 / 2 + 1 / 1)
    assert fused["c"] == pytest.approx(1 / 3 + 1 / 2 + 1 / 1)
    assert [k for k, _ in rerank.rrf([["a", "b", "c"], ["b", "c"], ["c"]])] == ["c", "b", "a"]


def test_mmr_keeps_near_duplicates_out_of_the_top_two() -> None:
    def unit(*v: float) -> list[float]:
        n = math.sqrt(sum(x * x for x in v))
        return [x / n for x in v]

    query = unit(1, 0, 0)
    vectors = {
        "original": unit(0.9, 0.43, 0),
        "near_copy": unit(0.9, 0.44, 0.01),
        "different": unit(0.7, 0, 0.71),
    }
    top = [k for k, _ in rerank.mmr(query, vectors, lambda_=0.5, limit=2)]
    assert top[0] in {"original", "near_copy"} and top[1] == "different"
    # With all weight on relevance, the two near-copies come first.
    top_relevance = [k for k, _ in rerank.mmr(query, vectors, lambda_=1.0, limit=2)]
    assert set(top_relevance) == {"original", "near_copy"}


def test_node_distance_orders_by_hops_then_fallback() -> None:
    ranked = rerank.by_distance(
        ["x", "y", "z", "w"], {"y": 1, "z": 2, "x": 2}, ["w", "x", "z", "y"]
    )
    assert [k for k, _ in ranked] == ["y", "x", "z", "w"]
    assert dict(ranked)["y"] == pytest.approx(0.5) and dict(ranked)["w"] == 0.0


def test_episode_mentions_orders_by_count_then_fallback() -> None:
    ranked = rerank.by_count(["a", "b", "c"], {"a": 1, "b": 3, "c": 1}, ["c", "a", "b"])
    assert [k for k, _ in ranked] == ["b", "c", "a"]
