"""Tenants in the Django admin: creating one provisions its graph namespace."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from tenants import services
from tenants.models import ApiToken, Invitation, Membership, Role, Tenant

LAST_OWNER = "{tenant} would have no owner left: make another member owner first."


class MembershipFormSet(forms.BaseInlineFormSet):
    """The tenant page's member rows: the tenant must keep an owner."""

    def clean(self) -> None:
        super().clean()
        tenant = self.instance
        if tenant.pk is None or any(self.errors):
            return
        kept = [
            form.cleaned_data
            for form in self.forms
            if form.cleaned_data and not form.cleaned_data.get("DELETE")
        ]
        gone = [
            row.instance.user_id
            for row in self.forms
            if row.instance.pk and row.initial.get("role") == Role.OWNER
        ]
        if any(row.get("role") == Role.OWNER and row.get("user") for row in kept):
            return
        if not services.owners_left(tenant, without=gone):
            raise ValidationError(LAST_OWNER.format(tenant=tenant.slug))


class MembershipInline(admin.TabularInline):
    model = Membership
    formset = MembershipFormSet
    extra = 1
    autocomplete_fields = ["user"]


class MembershipForm(forms.ModelForm):
    """One membership: demoting or moving a tenant's only owner is refused."""

    class Meta:
        model = Membership
        fields = ["user", "tenant", "role"]

    def clean(self) -> dict[str, Any]:  # Django's form data (ModelForm.clean), by field
        data = super().clean()
        assert data is not None  # a ModelForm's clean() returns its cleaned_data
        before = self.instance
        if before.pk is None or self.initial.get("role") != Role.OWNER:
            return data
        unchanged = (
            data.get("role") == Role.OWNER
            and data.get("user") == before.user
            and data.get("tenant") == before.tenant
        )
        if not unchanged and not services.owners_left(before.tenant, without=[before.user_id]):
            raise ValidationError(LAST_OWNER.format(tenant=before.tenant.slug))
        return data


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "namespace", "schema_version", "created_at"]
    search_fields = ["slug", "name"]
    # Retention is set by an owner on the tenant's retention page (audited there).
    readonly_fields = [
        "namespace",
        "schema_version",
        "created_at",
        "retention_mode",
        "retention_facts_ended_days",
        "retention_episodes_days",
    ]
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
    form = MembershipForm
    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role", "tenant"]
    autocomplete_fields = ["user", "tenant"]

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """Deleting every owner of a tenant is refused on the confirmation page (the
        admin lists them as protected), for one membership and for the bulk action."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        owners: dict[Tenant, list[Membership]] = {}
        for membership in objs:
            if membership.role == Role.OWNER:
                owners.setdefault(membership.tenant, []).append(membership)
        for tenant, going in owners.items():
            if not services.owners_left(tenant, without=[m.user_id for m in going]):
                protected = [
                    *protected,
                    *(f"{m} ({LAST_OWNER.format(tenant=tenant.slug)})" for m in going),
                ]
        return deleted, counts, perms_needed, protected


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["username", "tenant", "role", "invited_by", "created_at"]
    list_filter = ["role", "tenant"]
    search_fields = ["username"]
    autocomplete_fields = ["tenant"]
    readonly_fields = ["invited_by", "created_at"]

    def save_model(self, request: HttpRequest, obj: Invitation, form: Any, change: bool) -> None:
        if not change:
            assert request.user.is_authenticated  # the admin lets in signed-in staff only
            obj.invited_by = request.user
        super().save_model(request, obj, form, change)


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
