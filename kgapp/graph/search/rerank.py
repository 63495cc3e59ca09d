"""Rerankers: pure functions from candidate lists to one ranked list with scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

# Graphiti's rank constant: score = sum over lists of 1 / (rank + RRF_K), rank from 0.
RRF_K = 1.0


def rrf(ranked: Sequence[Sequence[str]], k: float = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal rank fusion of several best-first lists of ids."""
    scores: dict[str, float] = {}
    for ids in ranked:
        for rank, key in enumerate(ids):
            scores[key] = scores.get(key, 0.0) + 1.0 / (rank + k)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def mmr(
    query: Sequence[float],
    vectors: Mapping[str, Sequence[float] | np.ndarray],
    *,
    lambda_: float = 0.5,
    limit: int = 10,
) -> list[tuple[str, float]]:
    """Maximal marginal relevance: relevance to the query minus similarity to what is
    already chosen, so near-duplicates do not crowd the top. Vectors are unit-normalised."""
    keys = list(vectors)
    if not keys:
        return []
    matrix = np.asarray([vectors[k] for k in keys], dtype=np.float32)
    relevance = matrix @ np.asarray(query, dtype=np.float32)
    similarity = matrix @ matrix.T
    chosen: list[int] = []
    result: list[tuple[str, float]] = []
    remaining = set(range(len(keys)))
    while remaining and len(result) < limit:
        best, best_score = -1, -np.inf
        for i in sorted(remaining):
            redundancy = max((similarity[i, j] for j in chosen), default=0.0)
            score = lambda_ * relevance[i] - (1 - lambda_) * redundancy
            if score > best_score:
                best, best_score = i, score
        chosen.append(best)
        remaining.discard(best)
        result.append((keys[best], float(best_score)))
    return result


def by_distance(
    candidates: Sequence[str], distance: Mapping[str, int], fallback: Sequence[str]
) -> list[tuple[str, float]]:
    """Closer to the center first (score 1/(1+hops)); unreachable ones last, in the
    order of `fallback` (usually RRF)."""
    order = {key: i for i, key in enumerate(fallback)}
    far = len(order) + 1
    ranked = sorted(candidates, key=lambda k: (distance.get(k, 10**6), order.get(k, far), k))
    return [(k, 1.0 / (1 + distance[k]) if k in distance else 0.0) for k in ranked]


def by_count(
    candidates: Sequence[str], counts: Mapping[str, int], fallback: Sequence[str]
) -> list[tuple[str, float]]:
    """More episodes first; ties in the order of `fallback`."""
    order = {key: i for i, key in enumerate(fallback)}
    far = len(order) + 1
    ranked = sorted(candidates, key=lambda k: (-counts.get(k, 0), order.get(k, far), k))
    return [(k, float(counts.get(k, 0))) for k in ranked]
