"""The admin site: staff see everything; a tenant's curators and owners get in too, and
see only the graph curation pages of their own tenants (kgapp/web/admin_graph.py)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest
from django.urls import URLPattern, URLResolver, path

CURATING_ROLES = ["curator", "owner"]  # Role values (models load after this module)


class KgAdminSite(admin.AdminSite):
    site_header = "kgapp administration"
    site_title = "kgapp admin"
    index_template = "admin/kg_index.html"

    def has_permission(self, request: HttpRequest) -> bool:
        from tenants.models import Membership

        user = request.user
        if not user.is_active:
            return False
        return bool(
            user.is_staff or Membership.objects.filter(user=user, role__in=CURATING_ROLES).exists()
        )

    def get_urls(self) -> list[URLResolver | URLPattern]:
        from kgapp.web import admin_graph

        graph = [
            path(route, self.admin_view(view), name=name)
            for route, view, name in admin_graph.ROUTES
        ]
        return graph + super().get_urls()

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        from kgapp.web.admin_graph import curatable_tenants

        context = super().each_context(request)
        context["curatable_tenants"] = curatable_tenants(request.user)
        return context


class KgAdminConfig(AdminConfig):
    default_site = "tenants.admin_site.KgAdminSite"
