"""Reads on tenants, memberships, tokens and asked questions."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from tenants.models import (
    QUESTIONS_KEPT,
    ApiToken,
    Invitation,
    Membership,
    Question,
    Role,
    Tenant,
)

CURATING = [role.value for role in Role if role.rank >= Role.CURATOR.rank]


def tenants_of_user(user: User) -> QuerySet[Tenant]:
    if user.is_staff:
        return Tenant.objects.all()
    return Tenant.objects.filter(memberships__user=user)


def curatable_tenants(user: User) -> QuerySet[Tenant]:
    """The tenants whose graph `user` may curate: all for staff, else where curator+."""
    if user.is_staff:
        return Tenant.objects.order_by("slug")
    return Tenant.objects.filter(memberships__user=user, memberships__role__in=CURATING).order_by(
        "slug"
    )


def memberships_of_tenant(tenant: Tenant) -> QuerySet[Membership]:
    return Membership.objects.filter(tenant=tenant).select_related("user")


def invitations_of_tenant(tenant: Tenant) -> QuerySet[Invitation]:
    return Invitation.objects.filter(tenant=tenant)


def invitations_of_user(user: User) -> QuerySet[Invitation]:
    """The invitations addressed to `user`'s username, oldest first."""
    return (
        Invitation.objects.filter(username=user.get_username())
        .select_related("tenant", "invited_by")
        .order_by("created_at")
    )


def tokens_of_user(user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)


def questions_of(*, user: User, tenant: Tenant) -> QuerySet[Question]:
    """The questions `user` asked in `tenant`, newest first (QUESTIONS_KEPT at most)."""
    return Question.objects.filter(user=user, tenant=tenant).order_by("-asked_at", "-pk")[
        :QUESTIONS_KEPT
    ]
