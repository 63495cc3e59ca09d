"""Applying a retention policy: plan, archive, then delete in one transaction.

The archive is on disk (fsynced) before the transaction starts, and the transaction
removes exactly the rows archived or nothing: it counts them again and refuses when a
writer changed them meanwhile. Its last statement is the `retention_run` audit entry, so
the entry exists exactly when the rows are gone. A failure anywhere leaves the graph as
it was and the archive unnamed (`.partial`, removed when the failure is seen).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kgapp.graph import jobs, queries
from kgapp.graph.audit import RetentionRunAfter, audit_written
from kgapp.graph.records import JsonObject, record_key
from kgapp.graph.retention.archive import (
    KINDS,
    Manifest,
    archive_commit,
    archive_dir,
    archive_write,
)
from kgapp.graph.retention.plan import RetentionPlan, retention_plan
from kgapp.graph.retention.policy import PolicyInvalid, RetentionPolicy
from kgapp.graph.store import TenantStore


@dataclass
class RetentionReport(jobs.JobReport):
    """A run's counts (removed rows by kind), its archive's name (None when nothing was
    removed) and the audit entry it wrote."""

    archive: str | None = None
    audit: str | None = None
    removed: dict[str, int] = field(default_factory=dict)

    def result(self) -> JsonObject:  # jobs.JobReport.result: free-form JSON
        return {"archive": self.archive, "audit": self.audit, "removed": self.removed}


async def retention_apply(
    store: TenantStore,
    policy: RetentionPolicy,
    *,
    archive_root: Path,
    actor: str,
    now: datetime | None = None,
) -> RetentionReport:
    """Remove what `policy` drops now, archiving it first; audited as `retention_run`."""
    if not policy.drops:
        raise PolicyInvalid("the policy keeps everything: set mode 'drop' to remove anything")
    plan = await retention_plan(store, policy, now=now)
    rows = await _rows(store, plan) if not plan.empty else {}
    counts = {kind: len(rows.get(kind, [])) for kind in KINDS}
    partial = None
    if not plan.empty:
        directory = archive_dir(archive_root, store.namespace or "")
        partial = archive_write(directory, _manifest(store, plan, actor), rows, now=plan.now)
    after = RetentionRunAfter(
        policy=policy.as_dict(),
        facts_ended_before=plan.facts_cutoff,
        episodes_before=plan.episodes_cutoff,
        counts=plan.counts(),
        archive=partial.name.removesuffix(".partial") if partial else None,
    )
    try:
        results = await store.transaction(
            queries.RETENTION_APPLY,
            {
                **plan.params(),
                "expected_rows": _checked_by_count(counts),
                "actor": actor,
                "after": after,
            },
        )
    except BaseException:
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise
    audit = audit_written(results)
    final = archive_commit(partial) if partial is not None else None
    return RetentionReport(
        counts=plan.counts(),
        archive=final.name if final else None,
        audit=record_key(audit["id"]),
        removed={k: v for k, v in counts.items() if v},
    )


async def retention_job(
    store: TenantStore, job: Any, policy: RetentionPolicy, *, archive_root: Path, actor: str
) -> jobs.Job:
    """Apply the policy as job `job` (kind `retention`): a failure fails the job, the graph
    unchanged."""

    async def work(store: TenantStore) -> RetentionReport:
        return await retention_apply(store, policy, archive_root=archive_root, actor=actor)

    return await jobs.job_run(store, job, work)


def _checked_by_count(counts: dict[str, int]) -> dict[str, int]:
    """The kinds the transaction's guard counts (documents and entities it checks one by
    one, against the plan's ids)."""
    return {k: v for k, v in counts.items() if k not in ("document", "entity")}


async def _rows(store: TenantStore, plan: RetentionPlan) -> dict[str, list[Any]]:
    results = await store.query(queries.RETENTION_ROWS, plan.params())
    return {kind: list(rows or []) for kind, rows in zip(KINDS, results, strict=True)}


def _manifest(store: TenantStore, plan: RetentionPlan, actor: str) -> Manifest:
    return Manifest(
        namespace=store.namespace,
        created_at=plan.now,
        actor=actor,
        policy=plan.policy.as_dict(),
        facts_ended_before=plan.facts_cutoff,
        episodes_before=plan.episodes_cutoff,
    )
