"""Writes on tenants, memberships and tokens. Graph side effects go through the core."""

from __future__ import annotations

import hashlib
import logging
import secrets

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from kgapp.graph import namespaces, schema
from tenants import events
from tenants.access import check_slug
from tenants.graph import graph_runtime, migrations, tenant_graph
from tenants.models import ApiToken, Membership, Role, Tenant

logger = logging.getLogger(__name__)

TOKEN_PREFIX = "kg"


def tenant_create(*, slug: str, name: str, owner: AbstractBaseUser | None = None) -> Tenant:
    """Create the tenant row and provision its namespace; neither exists if either fails."""
    check_slug(slug)
    if Tenant.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": f"a tenant {slug!r} already exists"})
    with transaction.atomic():
        tenant = Tenant.objects.create(
            slug=slug, name=name or slug, embedding_dim=settings.EMBEDDING_DIM
        )
        if owner is not None:
            Membership.objects.create(user=owner, tenant=tenant, role=Role.OWNER)
        tenant_provision(tenant)
    return tenant


def tenant_provision(tenant: Tenant) -> list[str]:
    """Define the namespace and apply pending schema migrations; idempotent."""
    runtime = graph_runtime()
    runtime.run(
        namespaces.namespace_define(
            runtime.store(None), tenant.namespace, settings.SURREAL_DATABASE
        )
    )
    graph = tenant_graph(tenant)
    applied = graph.run(schema.migrate, migrations(), embedding_dim=tenant.embedding_dim)
    version = graph.run(schema.schema_version)
    if version != tenant.schema_version:
        tenant.schema_version = version
        tenant.save(update_fields=["schema_version"])
    if applied:
        logger.info("tenant %s: applied %s", tenant.slug, ", ".join(applied))
    return applied


def tenant_delete(*, tenant: Tenant, confirm: str) -> None:
    """Remove the namespace (all of the tenant's graph) and the tenant row.

    `confirm` must repeat the slug: deleting is not reversible.
    """
    if confirm != tenant.slug:
        raise ValidationError({"confirm": f"type the slug {tenant.slug!r} to confirm"})
    runtime = graph_runtime()
    runtime.run(runtime.drop_pool(tenant.namespace))
    runtime.run(namespaces.namespace_remove(runtime.store(None), tenant.namespace))
    tenant.delete()


def membership_set(*, tenant: Tenant, user: AbstractBaseUser, role: Role) -> Membership:
    membership, _ = Membership.objects.update_or_create(
        tenant=tenant, user=user, defaults={"role": role}
    )
    return membership


def membership_remove(*, tenant: Tenant, user: AbstractBaseUser) -> bool:
    """Remove the user from the tenant; their open sockets of it are closed."""
    deleted, _ = Membership.objects.filter(tenant=tenant, user=user).delete()
    if deleted:
        events.send_access_revoked(namespace=tenant.namespace, user_id=user.pk)
    return bool(deleted)


def token_create(*, user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """A new token and its secret, `kg_<prefix>_<secret>`: the only time it is visible."""
    prefix = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=prefix, digest=_digest(secret))
    return token, f"{TOKEN_PREFIX}_{prefix}_{secret}"


def token_revoke(*, token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def token_authenticate(raw: str) -> AbstractBaseUser | None:
    """The active user a token belongs to, or None (unknown, malformed, revoked)."""
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
        return None
    token = ApiToken.objects.select_related("user").filter(prefix=parts[1]).first()
    if token is None or not token.is_active or not token.user.is_active:
        return None
    if not secrets.compare_digest(token.digest, _digest(parts[2])):
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.user


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
