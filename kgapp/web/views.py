"""Browser pages. Tenant pages get their access from TenantMiddleware."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from kgapp.graph import stats
from tenants import selectors
from tenants.graph import tenant_graph
from tenants.models import Role


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html", {"tenants": selectors.tenants_of_user(request.user)})


def tenant_home(request: HttpRequest, slug: str) -> HttpResponse:
    tenant = request.tenant_access.tenant  # type: ignore[attr-defined]
    counts = tenant_graph(tenant).run(stats.graph_counts)
    return _tenant_page(request, "tenant_home.html", counts=counts)


def explore(request: HttpRequest, slug: str) -> HttpResponse:
    """The graph explorer; it reads the API and the graph socket with the session (the
    entity count picks the renderer for large graphs)."""
    tenant = request.tenant_access.tenant  # type: ignore[attr-defined]
    entities = tenant_graph(tenant).run(stats.entity_count)
    return _tenant_page(request, "explore.html", entities=entities)


def uploads(request: HttpRequest, slug: str) -> HttpResponse:
    """Documents and pasted conversations, with their jobs' progress."""
    return _tenant_page(request, "uploads.html")


def _tenant_page(request: HttpRequest, template: str, **extra: object) -> HttpResponse:
    access = request.tenant_access  # type: ignore[attr-defined]
    context = {
        "tenant": access.tenant,
        "role": access.role.value,
        "can_edit": access.allows(Role.EDITOR),
        **extra,
    }
    return render(request, template, context)
