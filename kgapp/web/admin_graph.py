"""Graph curation pages in the admin: facts, entities, the dedup review queue and the
audit log of one tenant, read from and written to its SurrealDB namespace through the
graph core (kgapp.graph.curation). Every page checks the curator role in that tenant:
a stranger gets 404, a member below curator 403."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from surrealdb.data.types.record_id import RecordID

from kgapp.graph.curation import corrections, duplicates, merge, pages, undo
from kgapp.graph.errors import GraphError, InvalidRecordId, NotFound
from kgapp.graph.records import parse_record_id, to_json
from kgapp.graph.search import history, reads
from kgapp.graph.time import parse_when
from kgapp.web.auth import AuthenticatedHttpRequest
from kgapp.web.schemas import MAX_OFFSET
from kgapp.web.timeline import timeline
from tenants.access import TenantAccess, tenant_access
from tenants.errors import RoleRequired, TenantAccessError
from tenants.models import Role
from tenants.selectors import curatable_tenants
from tenants.wiring import embedder, tenant_graph

PAGE = 50
T = TypeVar("T")


def _access(request: HttpRequest, slug: str) -> TenantAccess:
    try:
        return tenant_access(request.user, slug, Role.CURATOR)
    except RoleRequired as error:
        raise PermissionDenied(str(error)) from error
    except TenantAccessError as error:
        raise Http404(str(error)) from error


def _record(text: str, table: str) -> RecordID:
    try:
        return parse_record_id(text, table)
    except InvalidRecordId as error:
        raise Http404(str(error)) from error


def _page(
    request: HttpRequest, access: TenantAccess, template: str, **context: Any
) -> TemplateResponse:
    from django.contrib import admin

    return TemplateResponse(
        request,
        f"admin/graph/{template}",
        {
            **admin.site.each_context(request),
            "tenant": access.tenant,
            "title": context.pop("title", access.tenant.name),
            **context,
        },
    )


def _run(
    access: TenantAccess, operation: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any
) -> T:
    """Run a graph operation in the tenant; what it does not find is a 404."""
    try:
        return tenant_graph(access.tenant).run(operation, *args, **kwargs)
    except NotFound as error:
        raise Http404(str(error)) from error


def _actor(request: HttpRequest) -> str:
    return str(request.user.get_username())


# --- pages ---------------------------------------------------------------------------


def tenants(request: AuthenticatedHttpRequest) -> HttpResponse:
    from django.contrib import admin

    return TemplateResponse(
        request,
        "admin/graph/tenants.html",
        {
            **admin.site.each_context(request),
            "title": "Knowledge graph curation",
            "tenants": list(curatable_tenants(request.user)),
        },
    )


def facts(request: HttpRequest, slug: str) -> HttpResponse:
    access = _access(request, slug)
    graph = tenant_graph(access.tenant)
    get = request.GET
    given = get.get("offset", "0")
    offset = min(int(given), MAX_OFFSET) if given.isdigit() else 0
    entity = _record(get["entity"], "entity") if get.get("entity") else None
    filters = {
        "q": get.get("q") or None,
        "relation": get.get("relation") or None,
        "state": get.get("state") if get.get("state") in pages.FACT_STATES else None,
        "entity": entity,
        "valid_from": parse_when(get.get("valid_from")),
        "valid_to": parse_when(get.get("valid_to")),
        "known_at": parse_when(get.get("known_at")),
    }
    rows = graph.run(pages.facts_page, **filters, limit=PAGE + 1, offset=offset)
    query = get.copy()
    query.pop("offset", None)
    return _page(
        request,
        access,
        "facts.html",
        title=f"Facts of {access.tenant.name}",
        facts=to_json(rows[:PAGE]),
        relations=graph.run(pages.relations),
        states=pages.FACT_STATES,
        filters={
            k: get.get(k, "")
            for k in ("q", "relation", "state", "entity", "valid_from", "valid_to", "known_at")
        },
        query=query.urlencode(),
        offset=offset,
        previous=max(0, offset - PAGE) if offset else None,
        next=offset + PAGE if len(rows) > PAGE else None,
    )


def fact(request: HttpRequest, slug: str, fact_id: str) -> HttpResponse:
    access = _access(request, slug)
    graph = tenant_graph(access.tenant)
    record = _record(fact_id, "relates_to")
    row = _run(access, reads.fact_get, record)
    chain = graph.run(history.fact_history, record)
    episodes = graph.run(pages.episodes_of, list(row.get("episodes") or []))
    return _page(
        request,
        access,
        "fact.html",
        title=row["fact"],
        fact=to_json(row),
        chain=to_json(chain),
        episodes=to_json(episodes),
        timeline=timeline(row),
    )


@dataclass(frozen=True, slots=True)
class FactAction:
    """What the fact page's form asks: `invalidate` the fact at `ended_at`, or `correct`
    it to `text` (from `valid_at`); `reason` goes to the audit log."""

    action: str
    reason: str | None
    ended_at: datetime | None
    text: str
    valid_at: datetime | None

    @classmethod
    def of(cls, post: QueryDict) -> FactAction:
        return cls(
            action=post.get("action", ""),
            reason=post.get("reason", "").strip()[:500] or None,
            ended_at=parse_when(post.get("ended_at")),
            text=post.get("text", "").strip()[:2000],
            valid_at=parse_when(post.get("valid_at")),
        )


@require_POST
def fact_act(request: HttpRequest, slug: str, fact_id: str) -> HttpResponse:
    """Invalidate the fact at a date, or replace it with a corrected version."""
    access = _access(request, slug)
    record = _record(fact_id, "relates_to")
    asked = FactAction.of(request.POST)
    try:
        done = _fact_act(access, record, asked, _actor(request))
    except GraphError as error:
        messages.error(request, str(error))
    else:
        (messages.success if done.ok else messages.error)(request, done.said)
        if done.back_to_form:
            return HttpResponseRedirect(request.path.rsplit("act/", 1)[0])
    return HttpResponseRedirect(reverse("admin:graph-fact", args=[slug, fact_id]))


@dataclass(frozen=True, slots=True)
class _Done:
    """What the fact page says after an action, and whether it goes back to the form."""

    ok: bool
    said: str
    back_to_form: bool = False


def _fact_act(access: TenantAccess, record: RecordID, asked: FactAction, actor: str) -> _Done:
    """Do what the form asked of the fact; GraphError when the graph refuses."""
    if asked.action == "invalidate":
        if asked.ended_at is None:
            return _Done(False, "Give the date the fact stopped holding.", back_to_form=True)
        _run(
            access,
            corrections.invalidate_fact,
            record,
            ended_at=asked.ended_at,
            actor=actor,
            reason=asked.reason,
        )
        return _Done(True, "The fact now ends then; its earlier version is kept.")
    if asked.action == "correct":
        _run(
            access,
            corrections.correct_fact,
            record,
            text=asked.text,
            valid_at=asked.valid_at,
            embedder=embedder(),
            actor=actor,
            reason=asked.reason,
        )
        return _Done(True, "The corrected fact supersedes the old one.")
    return _Done(False, "Choose invalidate or correct.")


def entity(request: HttpRequest, slug: str, entity_id: str) -> HttpResponse:
    access = _access(request, slug)
    page = _run(access, pages.entity_page, _record(entity_id, "entity"))
    return _page(request, access, "entity.html", title=page["entity"]["name"], **to_json(page))


def dedup(request: HttpRequest, slug: str) -> HttpResponse:
    access = _access(request, slug)
    status = request.GET.get("status", "pending")
    if status not in ("pending", "deferred", "rejected", "merged"):
        status = "pending"
    rows = tenant_graph(access.tenant).run(duplicates.candidates, status=status, limit=PAGE)
    return _page(
        request,
        access,
        "dedup.html",
        title=f"Possible duplicates in {access.tenant.name}",
        candidates=to_json(rows),
        status=status,
        statuses=("pending", "deferred", "rejected", "merged"),
    )


@require_POST
def dedup_act(request: HttpRequest, slug: str) -> HttpResponse:
    """Merge (keeping the chosen survivor), reject or defer one or many candidates."""
    access = _access(request, slug)
    graph = tenant_graph(access.tenant)
    action = request.POST.get("action", "")
    chosen = request.POST.getlist("candidate")
    done = 0
    for value in chosen:
        candidate = _record(value, "dedup_candidate")
        try:
            if action in ("merge_a", "merge_b"):
                row = graph.run(duplicates.candidate_get, candidate)
                keep, drop = (row["a"], row["b"]) if action == "merge_a" else (row["b"], row["a"])
                graph.run(merge.merge_entities, keep, drop, actor=_actor(request))
            elif action in ("reject", "defer"):
                status = "rejected" if action == "reject" else "deferred"
                graph.run(
                    duplicates.decide_candidate, candidate, status=status, actor=_actor(request)
                )
            else:
                messages.error(request, "Choose merge, reject or defer.")
                break
            done += 1
        except GraphError as error:
            messages.error(request, f"{value}: {error}")
    if done:
        messages.success(request, f"{done} candidate(s): {action.replace('_', ' ')} done.")
    return HttpResponseRedirect(reverse("admin:graph-dedup", args=[slug]))


@require_POST
def dedup_generate(request: HttpRequest, slug: str) -> HttpResponse:
    access = _access(request, slug)
    found = tenant_graph(access.tenant).run(duplicates.generate_candidates)
    messages.success(request, f"{found} new candidate pair(s) queued for review.")
    return HttpResponseRedirect(reverse("admin:graph-dedup", args=[slug]))


def audit(request: HttpRequest, slug: str) -> HttpResponse:
    access = _access(request, slug)
    action = request.GET.get("action") or None
    actor = request.GET.get("actor") or None
    rows = tenant_graph(access.tenant).run(pages.audit_page, action=action, actor=actor, limit=PAGE)
    return _page(
        request,
        access,
        "audit.html",
        title=f"Audit log of {access.tenant.name}",
        entries=to_json(rows),
        action=action or "",
        actor=actor or "",
    )


def audit_entry(request: HttpRequest, slug: str, entry_id: str) -> HttpResponse:
    access = _access(request, slug)
    row = _run(access, pages.audit_get, _record(entry_id, "audit"))
    return _page(request, access, "audit_entry.html", title=f"Audit {entry_id}", entry=to_json(row))


@require_POST
def audit_undo(request: HttpRequest, slug: str, entry_id: str) -> HttpResponse:
    access = _access(request, slug)
    try:
        _run(access, undo.undo, _record(entry_id, "audit"), actor=_actor(request))
        messages.success(request, "The merge was undone.")
    except GraphError as error:
        messages.error(request, str(error))
    return HttpResponseRedirect(reverse("admin:graph-audit", args=[slug]))


@require_POST
def communities_rebuild(request: HttpRequest, slug: str) -> HttpResponse:
    """Queue community detection for the tenant (the same job as the API's)."""
    from kgapp import tasks

    access = _access(request, slug)
    job = tasks.queue_rebuild_communities(access.tenant, created_by=_actor(request))
    messages.success(request, f"Community detection queued as {job['id']} ({job['status']}).")
    return HttpResponseRedirect(_local(request, request.POST.get("next"), slug))


def _local(request: HttpRequest, target: str | None, slug: str) -> str:
    """`next` when it stays on this site, else the tenant's facts page (no open redirect)."""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("admin:graph-facts", args=[slug])


ROUTES: list[tuple[str, Callable[..., HttpResponse], str]] = [
    ("graph/", tenants, "graph-tenants"),
    ("graph/<str:slug>/facts/", facts, "graph-facts"),
    ("graph/<str:slug>/facts/<str:fact_id>/", fact, "graph-fact"),
    ("graph/<str:slug>/facts/<str:fact_id>/act/", fact_act, "graph-fact-act"),
    ("graph/<str:slug>/entities/<str:entity_id>/", entity, "graph-entity"),
    ("graph/<str:slug>/dedup/", dedup, "graph-dedup"),
    ("graph/<str:slug>/dedup/act/", dedup_act, "graph-dedup-act"),
    ("graph/<str:slug>/dedup/generate/", dedup_generate, "graph-dedup-generate"),
    ("graph/<str:slug>/audit/", audit, "graph-audit"),
    ("graph/<str:slug>/communities/rebuild/", communities_rebuild, "graph-communities-rebuild"),
    ("graph/<str:slug>/audit/<str:entry_id>/", audit_entry, "graph-audit-entry"),
    ("graph/<str:slug>/audit/<str:entry_id>/undo/", audit_undo, "graph-audit-undo"),
]
