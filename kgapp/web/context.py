"""What every page's template gets: the tenants the user can switch to."""

from __future__ import annotations

from typing import TypedDict

from django.http import HttpRequest
from django.urls import reverse

from tenants import selectors
from tenants.models import Tenant

# The tenant pages that exist in every tenant: switching keeps the user on the same one.
TENANT_PAGES = ("tenant-home", "explore", "uploads", "ask")


class Switcher(TypedDict, total=False):
    """The template context `tenant_switcher` adds (nothing with one tenant or none)."""

    switch_tenants: list[tuple[Tenant, str, bool]]
    current_tenant: Tenant | None


def tenant_switcher(request: HttpRequest) -> Switcher:
    """`switch_tenants`: (tenant, url, current) for each tenant the user belongs to (all of
    them for staff), when there is more than one to choose from."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    match = request.resolver_match
    page = match.url_name if match and match.url_name in TENANT_PAGES else "tenant-home"
    current = match.kwargs.get("slug") if match else None
    tenants = list(selectors.tenants_of_user(user).order_by("name", "slug")[:50])
    if len(tenants) < 2:
        return {}
    return {
        "switch_tenants": [
            (tenant, reverse(page, args=[tenant.slug]), tenant.slug == current)
            for tenant in tenants
        ],
        "current_tenant": next((t for t in tenants if t.slug == current), None),
    }
