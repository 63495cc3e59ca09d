"""Retrieval: search, entities, facts and their history, at any moment."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Status
from ninja.errors import HttpError

from kgapp import tasks
from kgapp.graph import communities, drawing
from kgapp.graph.curation import pins
from kgapp.graph.records import parse_record_id, to_json
from kgapp.graph.search import diff, elements, history, reads
from kgapp.graph.search.query import AnswerUnavailable
from kgapp.graph.time import Moment
from kgapp.web import ratelimits
from kgapp.web.routers.tenant import DENIED, LIMITED
from kgapp.web.schemas import (
    CommunitiesIn,
    CommunityDetailOut,
    CommunityOut,
    DiffIn,
    DiffOut,
    EntityDetailOut,
    EntityEpisodesPage,
    EntityOut,
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
from tenants.wiring import embedder, query_with_models, search_with_models, tenant_graph

router = Router(tags=["retrieval"])


@router.post("/t/{tenant}/search", response={200: SearchOut, 422: ErrorOut, **DENIED})
def search(request: HttpRequest, tenant: str, payload: SearchIn) -> dict[str, Any]:
    """Hybrid search (BM25, cosine, breadth-first from `center_entity`), fused by RRF or
    reranked by MMR, node distance or episode mentions; facts as of `as_of`/`known_at`."""
    access = tenant_access(request.user, tenant)
    spec = payload.request()
    return SearchOut.of(tenant_graph(access.tenant).run(search_with_models, spec))


@router.get("/t/{tenant}/entities", response={200: list[EntityOut], **DENIED}, exclude_unset=True)
def entity_lookup(request: HttpRequest, tenant: str, params: Query[Lookup]) -> Any:
    """Entities whose name starts with `q`, or the closest names when none does."""
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            reads.entities_lookup, params.q, embedder(), limit=params.limit
        )
    )


@router.get(
    "/t/{tenant}/entities/{entity_id}",
    response={200: EntityDetailOut, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def entity_detail(request: HttpRequest, tenant: str, entity_id: str) -> Any:
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(reads.entity_get, parse_record_id(entity_id, "entity"))
    )


@router.post(
    "/t/{tenant}/entities/{entity_id}/pin",
    response={200: EntityDetailOut, 422: ErrorOut, **DENIED},
    tags=["curation"],
)
def entity_pin(request: HttpRequest, tenant: str, entity_id: str, payload: PinIn) -> Any:
    """Pin an entity into the explorer's first view, or unpin it (curators)."""
    access = tenant_access(request.user, tenant, Role.CURATOR)
    return to_json(
        tenant_graph(access.tenant).run(
            pins.pin_entity, parse_record_id(entity_id, "entity"), payload.pinned
        )
    )


@router.get(
    "/t/{tenant}/entities/{entity_id}/facts",
    response={200: list[FactView], 422: ErrorOut, **DENIED},
    exclude_unset=True,
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
    response={200: list[EpisodeOut], 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def entity_episodes(
    request: HttpRequest, tenant: str, entity_id: str, params: Query[EntityEpisodesPage]
) -> Any:
    """The episodes that mention the entity, newest first: the source passages."""
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            reads.entity_episodes,
            parse_record_id(entity_id, "entity"),
            limit=params.limit,
            offset=params.offset,
        )
    )


@router.get(
    "/t/{tenant}/entities/{entity_id}/neighborhood",
    response={200: list[FactView], 422: ErrorOut, **DENIED},
    exclude_unset=True,
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


@router.get(
    "/t/{tenant}/facts/{fact_id}",
    response={200: FactView, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def fact_detail(request: HttpRequest, tenant: str, fact_id: str) -> Any:
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(reads.fact_get, parse_record_id(fact_id, "relates_to"))
    )


@router.get(
    "/t/{tenant}/facts/{fact_id}/history",
    response={200: list[FactView], 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def fact_history(request: HttpRequest, tenant: str, fact_id: str) -> Any:
    """The supersession chain through the fact, oldest first (64 hops each way at most)."""
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            history.fact_history, parse_record_id(fact_id, "relates_to")
        )
    )


@router.get(
    "/t/{tenant}/graph", response={200: GraphOut, 422: ErrorOut, **DENIED}, exclude_unset=True
)
def graph(request: HttpRequest, tenant: str, params: Query[GraphIn]) -> Any:
    """Cytoscape elements: around `seed`, or the most salient entities. Without
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


@router.get(
    "/t/{tenant}/graph/diff",
    response={200: DiffOut, 422: ErrorOut, **DENIED},
    by_alias=True,
)
def graph_diff(request: HttpRequest, tenant: str, params: Query[DiffIn]) -> Any:
    """What differs between two moments on one axis: facts added, ended and changed.
    `axis=valid`: true in the world at each moment, as known now; `axis=known`: what
    the graph believed at each moment, over all valid times."""
    access = tenant_access(request.user, tenant)
    result = tenant_graph(access.tenant).run(diff.graph_diff, params.request())
    return DiffOut.of(result)


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
    access = tenant_access(request.user, tenant)
    result = tenant_graph(access.tenant).run(diff.graph_diff, params.request())
    response = HttpResponse(diff.diff_csv(result), content_type="text/csv; charset=utf-8")
    name = f"diff-{access.tenant.slug}-{params.axis}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@router.post("/t/{tenant}/layout", response={200: LayoutOut, 422: ErrorOut, **DENIED})
def graph_layout(request: HttpRequest, tenant: str, payload: LayoutIn) -> Any:
    """Positions for drawing a large graph (the explorer's first layout of more than
    a thousand entities): Fruchterman-Reingold in igraph."""
    tenant_access(request.user, tenant)
    return {"positions": drawing.positions(payload.count, payload.edges, payload.aspect)}


@router.post(
    "/t/{tenant}/query",
    response={200: QueryOut, 422: ErrorOut, **DENIED, **LIMITED},
    exclude_unset=True,
)
def query(request: HttpRequest, tenant: str, payload: QueryIn) -> Any:
    """LLM-ready context (entities, facts with their validity, source passages) by
    LightRAG's modes, within token budgets; with `answer`, the model's answer too."""
    ratelimits.check(request, "query")
    access = tenant_access(request.user, tenant)
    try:
        result = tenant_graph(access.tenant).run(query_with_models, payload.request())
    except AnswerUnavailable as error:
        raise HttpError(422, str(error)) from error
    return to_json(vars(result))


# --- communities ---------------------------------------------------------------------


@router.get(
    "/t/{tenant}/communities", response={200: list[CommunityOut], **DENIED}, exclude_unset=True
)
def community_list(request: HttpRequest, tenant: str, params: Query[CommunitiesIn]) -> Any:
    """Communities, largest first: the current set, or one detected for `as_of`."""
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            communities.communities_list, as_of=params.as_of, limit=params.limit
        )
    )


@router.post("/t/{tenant}/communities/rebuild", response={202: JobQueuedOut, **DENIED})
def community_rebuild(request: HttpRequest, tenant: str, payload: RebuildIn) -> Any:
    """Queue community detection (editor); the job reports counts and timings."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    job = tasks.queue_rebuild_communities(
        access.tenant, created_by=request.user.get_username(), as_of=payload.as_of
    )
    return Status(202, {"job_id": job["id"], "status": job["status"]})


@router.get(
    "/t/{tenant}/communities/{community_id}",
    response={200: CommunityDetailOut, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def community_detail(request: HttpRequest, tenant: str, community_id: str) -> Any:
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            communities.community_get, parse_record_id(community_id, "community")
        )
    )
