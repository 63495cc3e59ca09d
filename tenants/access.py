"""Who may do what in which tenant: the one place where roles are checked."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User

from tenants.errors import InvalidSlug, RoleRequired, TenantNotFound
from tenants.models import SLUG_MAX_LENGTH, SLUG_PATTERN, Membership, Role, Tenant

_SLUG = re.compile(SLUG_PATTERN)


@dataclass(frozen=True)
class TenantAccess:
    tenant: Tenant
    role: Role

    def allows(self, role: Role) -> bool:
        return self.role.rank >= role.rank


def check_slug(slug: str) -> str:
    if len(slug) > SLUG_MAX_LENGTH or not _SLUG.fullmatch(slug):
        raise InvalidSlug(
            f"{slug[:60]!r} is not a tenant slug: use lowercase letters and digits,"
            " separated by single hyphens"
        )
    return slug


def tenant_access(
    user: User | AnonymousUser, slug: str, minimum: Role = Role.VIEWER
) -> TenantAccess:
    """The user's access to tenant `slug`, with at least role `minimum`.

    Raises InvalidSlug (400), TenantNotFound (404, also for non-members, so that a
    stranger cannot learn which tenants exist) or RoleRequired (403).
    Staff users act as owners of every tenant.
    """
    check_slug(slug)
    if not user.is_authenticated:
        raise TenantNotFound(f"no tenant {slug!r} for you")
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise TenantNotFound(f"no tenant {slug!r} for you")
    if user.is_staff:
        access = TenantAccess(tenant, Role.OWNER)
    else:
        membership = Membership.objects.filter(tenant=tenant, user=user).first()
        if membership is None:
            raise TenantNotFound(f"no tenant {slug!r} for you")
        access = TenantAccess(tenant, Role(membership.role))
    if not access.allows(minimum):
        raise RoleRequired(
            f"this needs the {minimum.value} role in {slug!r}; you are {access.role.value}"
        )
    return access
