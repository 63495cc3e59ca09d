"""A tenant's retention policy: read it, set it (owners; audited in the tenant's graph),
preview it, and apply it. The work is the graph core's (kgapp/graph/retention/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from kgapp.graph import retention
from kgapp.graph.retention import RetentionPolicy
from tenants.access import TenantAccess
from tenants.errors import RoleRequired
from tenants.models import Role, Tenant
from tenants.wiring import tenant_graph


def retention_policy(tenant: Tenant) -> RetentionPolicy:
    return RetentionPolicy(
        mode=tenant.retention_mode,
        facts_ended_days=tenant.retention_facts_ended_days,
        episodes_days=tenant.retention_episodes_days,
    )


def retention_policy_set(
    *, access: TenantAccess, actor: str, policy: RetentionPolicy
) -> RetentionPolicy:
    """Save `policy` as the tenant's (owners only) with a `retention_policy` audit entry."""
    if not access.allows(Role.OWNER):
        raise RoleRequired(f"only an owner sets the retention policy; you are {access.role.value}")
    tenant = access.tenant
    before = retention_policy(tenant)
    with transaction.atomic():
        tenant.retention_mode = policy.mode
        tenant.retention_facts_ended_days = policy.facts_ended_days
        tenant.retention_episodes_days = policy.episodes_days
        tenant.save(
            update_fields=[
                "retention_mode", "retention_facts_ended_days", "retention_episodes_days"
            ]
        )
        tenant_graph(tenant).run(
            retention.retention_policy_audit, actor=actor, before=before, after=policy
        )
    return policy


def retention_preview(tenant: Tenant, policy: RetentionPolicy | None = None) -> dict[str, Any]:
    """What `policy` (default: the tenant's own) would remove now."""
    return tenant_graph(tenant).run(
        retention.retention_preview, policy or retention_policy(tenant)
    )


def retention_history(tenant: Tenant) -> list[dict[str, Any]]:
    return tenant_graph(tenant).run(retention.retention_history)


def archive_directory(tenant: Tenant) -> Path:
    return retention.archive_dir(settings.RETENTION_ARCHIVE_DIR, tenant.namespace)


def archive_files(tenant: Tenant) -> list[retention.ArchiveFile]:
    return retention.archive_list(archive_directory(tenant))


def archive_file(tenant: Tenant, name: str) -> Path:
    """One of the tenant's archives by name (NotFound for any other name)."""
    return retention.archive_path(archive_directory(tenant), name)


def tenants_with_retention() -> list[Tenant]:
    return list(Tenant.objects.exclude(retention_mode="keep_all"))
