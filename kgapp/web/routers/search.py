"""Retrieval: search, entities, facts and their history, at any moment."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field, model_validator

from kgapp import tasks
from kgapp.graph import communities, layout
from kgapp.graph.records import parse_record_id, to_json
from kgapp.graph.search import elements, history, hybrid, reads
from kgapp.graph.search.model import Hit, SearchRequest, SearchResults
from kgapp.graph.search.query import AnswerUnavailable, QueryRequest, QueryResult
from kgapp.graph.search.query import query as run_query
from kgapp.graph.search.recipes import RECIPES
from kgapp.graph.store import TenantStore
from kgapp.graph.text import relation_name
from kgapp.graph.time import Moment
from kgapp.web import ratelimits
from kgapp.web.routers.tenant import DENIED, LIMITED
from kgapp.web.schemas import ErrorOut, Instant
from tenants.access import tenant_access
from tenants.graph import embedder, llm_client, tenant_graph
from tenants.models import Role

router = Router(tags=["retrieval"])


class TimeIn(Schema):
    as_of: Instant | None = Field(default=None, description="valid time; default now")
    known_at: Instant | None = Field(default=None, description="system time; default now")
    current_only: bool = Field(
        default=False, description="valid now and not expired (the default without a moment)"
    )

    @model_validator(mode="after")
    def _one_moment(self) -> TimeIn:
        if self.current_only and (self.as_of or self.known_at):
            raise ValueError("current_only means now: leave out as_of and known_at, or unset it")
        return self

    def moment(self) -> Moment:
        return Moment.of(self.as_of, self.known_at)


RecipeName = Literal[tuple(RECIPES)]  # type: ignore[valid-type]


class SearchIn(TimeIn):
    query: str = Field(min_length=1, max_length=2000)
    recipe: RecipeName | None = Field(  # type: ignore[valid-type]
        default=None, description="a named configuration; sets scopes, methods and reranker"
    )
    scopes: list[Literal["facts", "entities", "episodes", "communities"]] = Field(
        default=["facts", "entities"], min_length=1
    )
    methods: list[Literal["bm25", "cosine", "bfs", "activation"]] = Field(
        default=["bm25", "cosine"], min_length=1
    )
    reranker: Literal["rrf", "mmr", "node_distance", "episode_mentions", "cross_encoder"] = "rrf"
    center_entity: str | None = None
    limit: int = Field(default=10, ge=1, le=100)
    min_score: float = Field(default=0.0, ge=0)
    mmr_lambda: float = Field(default=0.5, ge=0, le=1)
    entity_types: list[str] = Field(default_factory=list, max_length=50)
    relations: list[str] = Field(default_factory=list, max_length=50)
    edge_types: list[Literal["semantic", "temporal", "causal", "entity"]] = Field(
        default_factory=list
    )


class Lookup(Schema):
    q: str = Field(min_length=1, max_length=300)
    limit: int = Field(default=10, ge=1, le=100)


class Page(Schema):
    limit: int = Field(default=20, ge=1, le=100)


class Neighbourhood(TimeIn):
    depth: int = Field(default=1, ge=1, le=3)
    limit: int = Field(default=200, ge=1, le=2000)


def _hits(hits: list[Hit]) -> list[dict[str, Any]]:
    # The hit's own score wins over a method's score left on the record.
    return [
        {**to_json(h.record), "id": h.id, "score": h.score, "found_by": h.found_by} for h in hits
    ]


@router.post("/t/{tenant}/search", response={200: dict[str, Any], 422: ErrorOut, **DENIED})
def search(request: HttpRequest, tenant: str, payload: SearchIn) -> dict[str, Any]:
    """Hybrid search (BM25, cosine, breadth-first from `center_entity`), fused by RRF or
    reranked by MMR, node distance or episode mentions; facts as of `as_of`/`known_at`."""
    access = tenant_access(request.user, tenant)
    center = parse_record_id(payload.center_entity, "entity") if payload.center_entity else None
    chosen = RECIPES.get(payload.recipe or "", {})
    spec = SearchRequest(
        query=payload.query,
        scopes=tuple(chosen.get("scopes", payload.scopes)),
        methods=tuple(chosen.get("methods", payload.methods)),
        reranker=chosen.get("reranker", payload.reranker),
        moment=payload.moment(),
        center_entity=center,
        limit=payload.limit,
        min_score=payload.min_score,
        mmr_lambda=payload.mmr_lambda,
        entity_types=tuple(payload.entity_types),
        relations=tuple(relation_name(r) for r in payload.relations),
        edge_types=tuple(payload.edge_types),
    )
    results = tenant_graph(access.tenant).run(_search, spec)
    return {
        "facts": _hits(results.facts),
        "entities": _hits(results.entities),
        "episodes": _hits(results.episodes),
        "communities": _hits(results.communities),
    }


async def _search(store: TenantStore, spec: SearchRequest) -> SearchResults:
    return await hybrid.search(store, spec, embedder(), llm=llm_client(store))


@router.get("/t/{tenant}/entities", response={200: list[dict[str, Any]], **DENIED})
def entity_lookup(request: HttpRequest, tenant: str, params: Query[Lookup]) -> Any:
    """Entities whose name starts with `q`, or the closest names when none does."""
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            reads.entities_lookup, params.q, embedder(), limit=params.limit
        )
    )


@router.get(
    "/t/{tenant}/entities/{entity_id}", response={200: dict[str, Any], 422: ErrorOut, **DENIED}
)
def entity_detail(request: HttpRequest, tenant: str, entity_id: str) -> Any:
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(reads.entity_get, parse_record_id(entity_id, "entity"))
    )


@router.get(
    "/t/{tenant}/entities/{entity_id}/facts",
    response={200: list[dict[str, Any]], 422: ErrorOut, **DENIED},
)
def entity_facts(request: HttpRequest, tenant: str, entity_id: str, time: Query[TimeIn]) -> Any:
    """The entity's facts valid at `as_of` as known at `known_at` (default: current)."""
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            reads.entity_facts, parse_record_id(entity_id, "entity"), time.moment()
        )
    )


@router.get(
    "/t/{tenant}/entities/{entity_id}/episodes",
    response={200: list[dict[str, Any]], 422: ErrorOut, **DENIED},
)
def entity_episodes(request: HttpRequest, tenant: str, entity_id: str, params: Query[Page]) -> Any:
    """The episodes that mention the entity, newest first: the source passages."""
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            reads.entity_episodes, parse_record_id(entity_id, "entity"), limit=params.limit
        )
    )


@router.get(
    "/t/{tenant}/entities/{entity_id}/neighborhood",
    response={200: list[dict[str, Any]], 422: ErrorOut, **DENIED},
)
def entity_neighbourhood(
    request: HttpRequest, tenant: str, entity_id: str, params: Query[Neighbourhood]
) -> Any:
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            reads.facts_near,
            [parse_record_id(entity_id, "entity")],
            params.moment(),
            depth=params.depth,
            limit=params.limit,
        )
    )


@router.get("/t/{tenant}/facts/{fact_id}", response={200: dict[str, Any], 422: ErrorOut, **DENIED})
def fact_detail(request: HttpRequest, tenant: str, fact_id: str) -> Any:
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(reads.fact_get, parse_record_id(fact_id, "relates_to"))
    )


@router.get(
    "/t/{tenant}/facts/{fact_id}/history",
    response={200: list[dict[str, Any]], 422: ErrorOut, **DENIED},
)
def fact_history(request: HttpRequest, tenant: str, fact_id: str) -> Any:
    """The supersession chain through the fact, oldest first (64 hops each way at most)."""
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            history.fact_history, parse_record_id(fact_id, "relates_to")
        )
    )


class GraphIn(Schema):
    as_of: Instant | None = None
    known_at: Instant | None = None
    seed: str | None = Field(default=None, description="an entity id to centre on")
    depth: int = Field(default=2, ge=1, le=3, description="hops around the seed")
    entity_types: list[str] = Field(default_factory=list, max_length=50)
    limit: int = Field(default=200, ge=1, le=5000)


@router.get("/t/{tenant}/graph", response={200: dict[str, Any], 422: ErrorOut, **DENIED})
def graph(request: HttpRequest, tenant: str, params: Query[GraphIn]) -> Any:
    """Cytoscape elements: around `seed`, or the most connected entities. Without
    `as_of`/`known_at`, facts come with their whole history and four timestamps."""
    access = tenant_access(request.user, tenant)
    seed = parse_record_id(params.seed, "entity") if params.seed else None
    moment = None
    if params.as_of or params.known_at:
        moment = Moment.of(params.as_of, params.known_at)
    return to_json(
        tenant_graph(access.tenant).run(
            elements.graph_elements,
            seed=seed,
            depth=params.depth,
            entity_types=params.entity_types,
            limit=params.limit,
            moment=moment,
        )
    )


class LayoutIn(Schema):
    count: int = Field(ge=0, le=20000, description="how many nodes")
    edges: list[tuple[int, int]] = Field(default_factory=list, max_length=100000)
    aspect: float = Field(1.0, ge=0.1, le=10, description="width / height of the drawing area")

    @model_validator(mode="after")
    def _in_range(self) -> LayoutIn:
        if any(not (0 <= a < self.count and 0 <= b < self.count) for a, b in self.edges):
            raise ValueError("every edge joins two node numbers between 0 and count - 1")
        return self


@router.post("/t/{tenant}/layout", response={200: dict[str, Any], 422: ErrorOut, **DENIED})
def graph_layout(request: HttpRequest, tenant: str, payload: LayoutIn) -> Any:
    """Positions for drawing a large graph (the explorer's first layout of more than
    a thousand entities): Fruchterman-Reingold in igraph."""
    tenant_access(request.user, tenant)
    return {"positions": layout.positions(payload.count, payload.edges, payload.aspect)}


class QueryIn(TimeIn):
    query: str = Field(min_length=1, max_length=2000)
    mode: Literal["local", "global", "hybrid", "naive", "mix"] = "hybrid"
    top_k: int = Field(default=10, ge=1, le=100)
    max_entity_tokens: int = Field(default=1500, ge=50, le=50_000)
    max_relation_tokens: int = Field(default=2500, ge=50, le=50_000)
    max_total_tokens: int = Field(default=6000, ge=100, le=200_000)
    answer: bool = False


async def _query(store: TenantStore, spec: QueryRequest) -> QueryResult:
    return await run_query(store, spec, embedder(), llm_client(store))


@router.post(
    "/t/{tenant}/query", response={200: dict[str, Any], 422: ErrorOut, **DENIED, **LIMITED}
)
def query(request: HttpRequest, tenant: str, payload: QueryIn) -> Any:
    """LLM-ready context (entities, facts with their validity, source passages) by
    LightRAG's modes, within token budgets; with `answer`, the model's answer too."""
    ratelimits.check(request, "query")
    access = tenant_access(request.user, tenant)
    spec = QueryRequest(
        question=payload.query,
        mode=payload.mode,
        moment=payload.moment(),
        top_k=payload.top_k,
        max_entity_tokens=payload.max_entity_tokens,
        max_relation_tokens=payload.max_relation_tokens,
        max_total_tokens=payload.max_total_tokens,
        answer=payload.answer,
    )
    try:
        result = tenant_graph(access.tenant).run(_query, spec)
    except AnswerUnavailable as error:
        raise HttpError(422, str(error)) from error
    return to_json(vars(result))


# --- communities ---------------------------------------------------------------------


class CommunitiesIn(Schema):
    as_of: Instant | None = Field(default=None, description="a past detection; default current")
    limit: int = Field(default=100, ge=1, le=1000)


class RebuildIn(Schema):
    as_of: Instant | None = Field(
        default=None, description="detect for the graph as it was then (kept apart)"
    )


@router.get("/t/{tenant}/communities", response={200: list[dict[str, Any]], **DENIED})
def community_list(request: HttpRequest, tenant: str, params: Query[CommunitiesIn]) -> Any:
    """Communities, largest first: the current set, or one detected for `as_of`."""
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            communities.communities_list, as_of=params.as_of, limit=params.limit
        )
    )


@router.post("/t/{tenant}/communities/rebuild", response={202: dict[str, Any], **DENIED})
def community_rebuild(request: HttpRequest, tenant: str, payload: RebuildIn) -> Any:
    """Queue community detection (editor); the job reports counts and timings."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    job = tasks.queue_rebuild_communities(
        access.tenant, created_by=request.user.get_username(), as_of=payload.as_of
    )
    return Status(202, {"job_id": job["id"], "status": job["status"]})


@router.get(
    "/t/{tenant}/communities/{community_id}",
    response={200: dict[str, Any], 422: ErrorOut, **DENIED},
)
def community_detail(request: HttpRequest, tenant: str, community_id: str) -> Any:
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            communities.community_get, parse_record_id(community_id, "community")
        )
    )
