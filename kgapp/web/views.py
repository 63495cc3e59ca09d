"""Browser pages. Tenant pages get their access from TenantMiddleware."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from kgapp.graph import stats
from tenants import selectors
from tenants.graph import tenant_graph


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html", {"tenants": selectors.tenants_of_user(request.user)})


def tenant_home(request: HttpRequest, slug: str) -> HttpResponse:
    access = request.tenant_access  # type: ignore[attr-defined]
    counts = tenant_graph(access.tenant).run(stats.graph_counts)
    return render(
        request,
        "tenant_home.html",
        {"tenant": access.tenant, "role": access.role.value, "counts": counts},
    )
