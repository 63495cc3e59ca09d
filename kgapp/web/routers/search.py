"""Retrieval: search, entities, facts and their history, at any moment."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Status
from ninja.errors import HttpError

from kgapp import tasks
from kgapp.graph import communities, drawing
from kgapp.graph.curation import pins
from kgapp.graph.records import Community, Entity, Episode, Fact, parse_record_id
from kgapp.graph.search import diff, elements, history, reads
from kgapp.graph.search.elements import Elements
from kgapp.graph.search.query import AnswerUnavailable, QueryResult
from kgapp.web import ratelimits
from kgapp.web.routers.shared import DENIED, LIMITED, graph_in, queued
from kgapp.web.schemas import (
    CommunitiesIn,
    CommunityDetailOut,
    CommunityOut,
    DiffIn,
    DiffOut,
    EntityDetailOut,
    EntityEpisodesPage,
    EntityMatchOut,
    EpisodeOut,
    ErrorOut,
    FactView,
    GraphIn,
    GraphOut,
    JobQueuedOut,
    LayoutIn,
    LayoutOut,
    Lookup,
    Neighbourhood,
    PinIn,
    QueryIn,
    QueryOut,
    RebuildIn,
    SearchIn,
    SearchOut,
    TimeIn,
)
from tenants.access import tenant_access
from tenants.models import Role
from tenants.wiring import embedder, query_with_models, search_with_models

router = Router(tags=["retrieval"])


@router.post("/t/{tenant}/search", response={200: SearchOut, 422: ErrorOut, **DENIED})
def search(request: HttpRequest, tenant: str, payload: SearchIn) -> SearchOut:
    """Hybrid search (BM25, cosine, breadth-first from `center_entity`), fused by RRF or
    reranked by MMR, node distance or episode mentions; facts as of `as_of`/`known_at`."""
    return SearchOut.of(graph_in(request, tenant).run(search_with_models, payload.request()))


@router.get(
    "/t/{tenant}/entities", response={200: list[EntityMatchOut], **DENIED}, exclude_unset=True
)
def entity_lookup(request: HttpRequest, tenant: str, params: Query[Lookup]) -> list[Entity]:
    """Entities whose name starts with `q`, or the closest names when none does."""
    return graph_in(request, tenant).run(
        reads.entities_lookup, params.q, embedder(), limit=params.limit
    )


@router.get(
    "/t/{tenant}/entities/{entity_id}",
    response={200: EntityDetailOut, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def entity_detail(request: HttpRequest, tenant: str, entity_id: str) -> Entity:
    return graph_in(request, tenant).run(reads.entity_get, parse_record_id(entity_id, "entity"))


@router.post(
    "/t/{tenant}/entities/{entity_id}/pin",
    response={200: EntityDetailOut, 422: ErrorOut, **DENIED},
    tags=["curation"],
)
def entity_pin(request: HttpRequest, tenant: str, entity_id: str, payload: PinIn) -> Entity:
    """Pin an entity into the explorer's first view, or unpin it (curators)."""
    return graph_in(request, tenant, Role.CURATOR).run(
        pins.pin_entity, parse_record_id(entity_id, "entity"), payload.pinned
    )


@router.get(
    "/t/{tenant}/entities/{entity_id}/facts",
    response={200: list[FactView], 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def entity_facts(
    request: HttpRequest, tenant: str, entity_id: str, time: Query[TimeIn]
) -> list[Fact]:
    """The entity's facts valid at `as_of` as known at `known_at` (default: current)."""
    return graph_in(request, tenant).run(
        reads.entity_facts, parse_record_id(entity_id, "entity"), time.moment()
    )


@router.get(
    "/t/{tenant}/entities/{entity_id}/episodes",
    response={200: list[EpisodeOut], 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def entity_episodes(
    request: HttpRequest, tenant: str, entity_id: str, params: Query[EntityEpisodesPage]
) -> list[Episode]:
    """The episodes that mention the entity, newest first: the source passages."""
    return graph_in(request, tenant).run(
        reads.entity_episodes,
        parse_record_id(entity_id, "entity"),
        limit=params.limit,
        offset=params.offset,
    )


@router.get(
    "/t/{tenant}/entities/{entity_id}/neighborhood",
    response={200: list[FactView], 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def entity_neighbourhood(
    request: HttpRequest, tenant: str, entity_id: str, params: Query[Neighbourhood]
) -> list[Fact]:
    return graph_in(request, tenant).run(
        reads.facts_near,
        [parse_record_id(entity_id, "entity")],
        params.moment(),
        depth=params.depth,
        limit=params.limit,
    )


@router.get(
    "/t/{tenant}/facts/{fact_id}",
    response={200: FactView, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def fact_detail(request: HttpRequest, tenant: str, fact_id: str) -> Fact:
    return graph_in(request, tenant).run(reads.fact_get, parse_record_id(fact_id, "relates_to"))


@router.get(
    "/t/{tenant}/facts/{fact_id}/history",
    response={200: list[FactView], 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def fact_history(request: HttpRequest, tenant: str, fact_id: str) -> list[Fact]:
    """The supersession chain through the fact, oldest first (64 hops each way at most)."""
    return graph_in(request, tenant).run(
        history.fact_history, parse_record_id(fact_id, "relates_to")
    )


@router.get(
    "/t/{tenant}/graph", response={200: GraphOut, 422: ErrorOut, **DENIED}, exclude_unset=True
)
def graph(request: HttpRequest, tenant: str, params: Query[GraphIn]) -> Elements:
    """Cytoscape elements: around `seed`, or the most salient entities. Without
    `as_of`/`known_at`, facts come with their whole history and four timestamps."""
    return graph_in(request, tenant).run(
        elements.graph_elements,
        seed=parse_record_id(params.seed, "entity") if params.seed else None,
        depth=params.depth,
        entity_types=params.entity_types,
        limit=params.limit,
        moment=params.moment(),
    )


@router.get(
    "/t/{tenant}/graph/diff",
    response={200: DiffOut, 422: ErrorOut, **DENIED},
    by_alias=True,
)
def graph_diff(request: HttpRequest, tenant: str, params: Query[DiffIn]) -> DiffOut:
    """What differs between two moments on one axis: facts added, ended and changed.
    `axis=valid`: true in the world at each moment, as known now; `axis=known`: what
    the graph believed at each moment, over all valid times."""
    return DiffOut.of(graph_in(request, tenant).run(diff.graph_diff, params.request()))


_CSV_ANSWER = {
    "description": "the diff as CSV",
    "content": {"text/csv": {"schema": {"type": "string"}}},
}


@router.get(
    "/t/{tenant}/graph/diff.csv",
    response={422: ErrorOut, **DENIED},
    openapi_extra={"responses": {"200": _CSV_ANSWER}},
)
def graph_diff_csv(request: HttpRequest, tenant: str, params: Query[DiffIn]) -> HttpResponse:
    """The same diff as a CSV download, one row per fact (spreadsheet formulas
    neutralised)."""
    result = graph_in(request, tenant).run(diff.graph_diff, params.request())
    response = HttpResponse(diff.diff_csv(result), content_type="text/csv; charset=utf-8")
    name = f"diff-{tenant}-{params.axis}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@router.post("/t/{tenant}/layout", response={200: LayoutOut, 422: ErrorOut, **DENIED})
def graph_layout(request: HttpRequest, tenant: str, payload: LayoutIn) -> LayoutOut:
    """Positions for drawing a large graph (the explorer's first layout of more than
    a thousand entities): Fruchterman-Reingold in igraph."""
    tenant_access(request.user, tenant)
    positions = drawing.positions(payload.count, payload.edges, payload.aspect)
    return LayoutOut(positions=[list(xy) for xy in positions])


@router.post(
    "/t/{tenant}/query",
    response={200: QueryOut, 422: ErrorOut, **DENIED, **LIMITED},
    exclude_unset=True,
)
def query(request: HttpRequest, tenant: str, payload: QueryIn) -> QueryResult:
    """LLM-ready context (entities, facts with their validity, source passages) by
    LightRAG's modes, within token budgets; with `answer`, the model's answer too."""
    ratelimits.check(request, "query")
    graph = graph_in(request, tenant)
    try:
        return graph.run(query_with_models, payload.request())
    except AnswerUnavailable as error:
        raise HttpError(422, str(error)) from error


# --- communities ---------------------------------------------------------------------


@router.get(
    "/t/{tenant}/communities", response={200: list[CommunityOut], **DENIED}, exclude_unset=True
)
def community_list(
    request: HttpRequest, tenant: str, params: Query[CommunitiesIn]
) -> list[Community]:
    """Communities, largest first: the current set, or one detected for `as_of`."""
    return graph_in(request, tenant).run(
        communities.communities_list, as_of=params.as_of, limit=params.limit
    )


@router.post("/t/{tenant}/communities/rebuild", response={202: JobQueuedOut, **DENIED})
def community_rebuild(
    request: HttpRequest, tenant: str, payload: RebuildIn
) -> Status[JobQueuedOut]:
    """Queue community detection (editor); the job reports counts and timings."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    job = tasks.queue_rebuild_communities(
        access.tenant, created_by=request.user.get_username(), as_of=payload.as_of
    )
    return queued(job["id"], job["status"])


@router.get(
    "/t/{tenant}/communities/{community_id}",
    response={200: CommunityDetailOut, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def community_detail(request: HttpRequest, tenant: str, community_id: str) -> Community:
    return graph_in(request, tenant).run(
        communities.community_get, parse_record_id(community_id, "community")
    )
