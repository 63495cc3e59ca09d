"""A tenant's retention policy: read it, set it (owners; audited in the tenant's graph),
preview it, and apply it. The work is the graph core's (kgapp/graph/retention/)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import transaction

from kgapp.graph import retention
from kgapp.graph.retention import RetentionPolicy
from tenants.models import Role, Tenant
from tenants.wiring import tenant_graph

# Who manages a tenant's retention (its policy, previews, runs and archives): every door
# to it (the API's routes, the page) checks this role, and only there.
RETENTION_ROLE = Role.OWNER


def retention_policy(tenant: Tenant) -> RetentionPolicy:
    return RetentionPolicy(
        mode=tenant.retention_mode,
        facts_ended_days=tenant.retention_facts_ended_days,
        episodes_days=tenant.retention_episodes_days,
    )


def retention_policy_set(*, tenant: Tenant, actor: str, policy: RetentionPolicy) -> RetentionPolicy:
    """Save `policy` as the tenant's with a `retention_policy` audit entry (the caller
    has checked RETENTION_ROLE)."""
    before = retention_policy(tenant)
    with transaction.atomic():
        tenant.retention_mode = policy.mode
        tenant.retention_facts_ended_days = policy.facts_ended_days
        tenant.retention_episodes_days = policy.episodes_days
        tenant.save(
            update_fields=[
                "retention_mode",
                "retention_facts_ended_days",
                "retention_episodes_days",
            ]
        )
        tenant_graph(tenant).run(
            retention.retention_policy_audit, actor=actor, before=before, after=policy
        )
    return policy


def retention_preview(
    tenant: Tenant, policy: RetentionPolicy | None = None
) -> retention.RetentionPreview:
    """What `policy` (default: the tenant's own) would remove now."""
    return tenant_graph(tenant).run(retention.retention_preview, policy or retention_policy(tenant))


def retention_history(tenant: Tenant) -> list[retention.HistoryEntry]:
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
