"""Named search configurations, after Graphiti's recipes: scope x reranker."""

from __future__ import annotations

from typing import Any

_METHODS = ("bm25", "cosine")
_SCOPES = {
    "combined": ("facts", "entities", "episodes"),
    "fact": ("facts",),
    "entity": ("entities",),
}
_RERANKERS = ("rrf", "mmr", "node_distance", "episode_mentions", "cross_encoder")

# e.g. "fact_rrf", "entity_node_distance", "combined_mmr"
RECIPES: dict[str, dict[str, Any]] = {
    f"{scope}_{reranker}": {
        "scopes": scopes,
        "methods": _METHODS + (("bfs",) if reranker == "node_distance" else ()),
        "reranker": reranker,
    }
    for scope, scopes in _SCOPES.items()
    for reranker in _RERANKERS
}
