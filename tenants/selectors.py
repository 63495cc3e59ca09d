"""Reads on tenants and memberships."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from tenants.models import ApiToken, Membership, Tenant


def tenants_of_user(user: AbstractBaseUser) -> QuerySet[Tenant]:
    if user.is_staff:
        return Tenant.objects.all()
    return Tenant.objects.filter(memberships__user=user)


def memberships_of_tenant(tenant: Tenant) -> QuerySet[Membership]:
    return Membership.objects.filter(tenant=tenant).select_related("user")


def tokens_of_user(user: AbstractBaseUser) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)
