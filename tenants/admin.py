"""Tenants in the Django admin: creating one provisions its graph namespace."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from tenants import services
from tenants.models import ApiToken, Membership, Tenant


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "namespace", "schema_version", "created_at"]
    search_fields = ["slug", "name"]
    readonly_fields = ["namespace", "schema_version", "created_at"]
    inlines = [MembershipInline]
    actions = ["reprovision"]

    def get_readonly_fields(self, request: HttpRequest, obj: Tenant | None = None) -> Any:
        # The slug names the namespace: it cannot change once the namespace exists.
        extra = ["slug", "embedding_dim"] if obj is not None else []
        return [*self.readonly_fields, *extra]

    def save_model(self, request: HttpRequest, obj: Tenant, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            # Inside the admin's transaction: a failed provisioning undoes the row.
            services.tenant_provision(obj)

    def delete_model(self, request: HttpRequest, obj: Tenant) -> None:
        # The admin's own confirmation page has been answered; the slug confirms.
        services.tenant_delete(tenant=obj, confirm=obj.slug)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        for tenant in queryset:
            services.tenant_delete(tenant=tenant, confirm=tenant.slug)

    @admin.action(description="Apply pending schema migrations")
    def reprovision(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        for tenant in queryset:
            applied = services.tenant_provision(tenant)
            self.message_user(
                request,
                f"{tenant.slug}: " + (", ".join(applied) if applied else "schema up to date"),
                messages.SUCCESS,
            )


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role", "tenant"]
    autocomplete_fields = ["user", "tenant"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    fields = ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A token's secret is shown once, where it is made: the API or the tokens page.
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset:
            services.token_revoke(token=token)
