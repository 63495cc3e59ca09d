"""The admin site: staff see everything; a tenant's curators and owners get in too, and
see only the graph curation pages of their own tenants (admin_graph.py, beside this module)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, URLResolver, path


class KgAdminSite(admin.AdminSite):
    site_header = "kgapp administration"
    site_title = "kgapp admin"
    index_template = "admin/kg_index.html"

    def has_permission(self, request: HttpRequest) -> bool:
        from tenants.selectors import curatable_tenants  # models load after this module

        user = request.user
        return bool(user.is_active and (user.is_staff or curatable_tenants(user).exists()))

    def get_urls(self) -> list[URLResolver | URLPattern]:
        from kgapp.web import admin_graph

        graph = [
            path(route, self.admin_view(view), name=name)
            for route, view, name in admin_graph.ROUTES
        ]
        return graph + super().get_urls()

    # extra_context: a template context (Django's signature), free-form.
    def login(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        from kgapp.web import ratelimits

        return ratelimits.login_refusal(request) or super().login(request, extra_context)

    def index(
        self,
        request: HttpRequest,
        extra_context: dict[str, Any] | None = None,  # as login's
    ) -> TemplateResponse:
        from tenants.selectors import curatable_tenants

        user = request.user
        assert user.is_authenticated  # admin_view lets in has_permission's users only
        tenants = list(curatable_tenants(user))
        return super().index(request, {**(extra_context or {}), "curatable_tenants": tenants})


class KgAdminConfig(AdminConfig):
    default_site = "kgapp.web.admin_site.KgAdminSite"
