"""Named search configurations, after Graphiti's recipes: scope x reranker."""

from __future__ import annotations

from dataclasses import dataclass

from kgapp.graph.search.model import Method, Reranker, Scope


@dataclass(frozen=True)
class Recipe:
    """What a named configuration sets of a search: its scopes, methods and reranker."""

    scopes: tuple[Scope, ...]
    methods: tuple[Method, ...]
    reranker: Reranker


_METHODS = (Method.BM25, Method.COSINE)
_SCOPES = {
    "combined": (Scope.FACTS, Scope.ENTITIES, Scope.EPISODES),
    "fact": (Scope.FACTS,),
    "entity": (Scope.ENTITIES,),
}

# e.g. "fact_rrf", "entity_node_distance", "combined_mmr"
RECIPES: dict[str, Recipe] = {
    f"{scope}_{reranker}": Recipe(
        scopes=scopes,
        methods=_METHODS + ((Method.BFS,) if reranker is Reranker.NODE_DISTANCE else ()),
        reranker=reranker,
    )
    for scope, scopes in _SCOPES.items()
    for reranker in Reranker
}
