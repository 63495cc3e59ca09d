"""Browser pages. Tenant pages get their access from TenantMiddleware."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from kgapp.graph import stats
from kgapp.web import ratelimits
from kgapp.web.auth import AuthenticatedHttpRequest
from tenants import selectors, services, transfer
from tenants.errors import TenantAccessError
from tenants.middleware import error_page
from tenants.models import Role
from tenants.retention import RETENTION_ROLE
from tenants.wiring import tenant_graph


class LoginView(auth_views.LoginView):
    """The site's login, with the login rate limits (the admin's has the same)."""

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        return ratelimits.login_refusal(request) or super().post(request, *args, **kwargs)


@login_required
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    return render(
        request,
        "home.html",
        {
            "tenants": selectors.tenants_of_user(request.user),
            "invitations": selectors.invitations_of_user(request.user),
        },
    )


@login_required
@require_POST
def invitation_answer(
    request: AuthenticatedHttpRequest, invitation_id: int, answer: str
) -> HttpResponse:
    """Accept (then open the tenant) or decline an invitation from the home page."""
    if answer not in ("accept", "decline"):
        return error_page(request, 404, "answer an invitation with accept or decline")
    try:
        if answer == "accept":
            membership = services.invitation_accept(invitation_id=invitation_id, user=request.user)
            return HttpResponseRedirect(reverse("tenant-home", args=[membership.tenant.slug]))
        services.invitation_decline(invitation_id=invitation_id, user=request.user)
    except TenantAccessError as error:
        return error_page(request, error.status, str(error))
    return HttpResponseRedirect(reverse("home"))


def tenant_home(request: HttpRequest, slug: str) -> HttpResponse:
    access = request.tenant_access  # type: ignore[attr-defined]
    counts = tenant_graph(access.tenant).run(stats.graph_counts)
    importable = (  # a tenant with any graph is not empty: skip asking every table
        access.allows(Role.OWNER)
        and not any(counts.values())
        and transfer.import_possible(access.tenant)
    )
    return _tenant_page(request, "tenant_home.html", counts=counts, importable=importable)


def explore(request: HttpRequest, slug: str) -> HttpResponse:
    """The graph explorer; it reads the API and the graph socket with the session (the
    entity count picks the renderer for large graphs)."""
    tenant = request.tenant_access.tenant  # type: ignore[attr-defined]
    entities = tenant_graph(tenant).run(stats.entity_count)
    return _tenant_page(request, "explore.html", entities=entities)


def uploads(request: HttpRequest, slug: str) -> HttpResponse:
    """Documents and pasted conversations, with their jobs' progress."""
    return _tenant_page(request, "uploads.html")


def ask(request: HttpRequest, slug: str) -> HttpResponse:
    """Questions answered from the graph with their sources (every member; the page
    reads POST ask and GET questions)."""
    return _tenant_page(request, "ask.html")


def retention(request: HttpRequest, slug: str) -> HttpResponse:
    """The retention policy, its preview, runs and archives (owners; the page reads the API)."""
    if not request.tenant_access.allows(RETENTION_ROLE):  # type: ignore[attr-defined]
        return error_page(request, 403, "only an owner of this tenant manages retention")
    return _tenant_page(request, "retention.html")


def _tenant_page(request: HttpRequest, template: str, **extra: object) -> HttpResponse:
    access = request.tenant_access  # type: ignore[attr-defined]
    context = {
        "tenant": access.tenant,
        "role": access.role.value,
        "can_edit": access.allows(Role.EDITOR),
        "can_curate": access.allows(Role.CURATOR),
        "is_owner": access.allows(Role.OWNER),
        **extra,
    }
    return render(request, template, context)
