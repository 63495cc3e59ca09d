"""A plan summarised for the person deciding on a policy: counts, and a few of each kind."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kgapp.graph import queries
from kgapp.graph.records import to_json
from kgapp.graph.retention.plan import retention_plan
from kgapp.graph.retention.policy import RetentionPolicy
from kgapp.graph.store import TenantStore

SAMPLE = 10


async def retention_preview(
    store: TenantStore, policy: RetentionPolicy, *, now: datetime | None = None
) -> dict[str, Any]:
    """What `policy` would remove if applied now; nothing is changed."""
    plan = await retention_plan(store, policy, now=now)
    samples: list[Any] = [[], [], [], []]
    if not plan.empty:
        samples = await store.query(
            queries.RETENTION_SAMPLES, {**plan.params(), "limit": SAMPLE}
        )
    facts, episodes, documents, entities = (list(rows or []) for rows in samples)
    return to_json(
        {
            "policy": policy.as_dict(),
            "now": plan.now,
            **plan.cutoffs(),
            "counts": plan.counts(),
            "sample": {
                "facts": facts,
                "episodes": episodes,
                "documents": documents,
                "entities": entities,
            },
        }
    )


async def retention_history(store: TenantStore, *, limit: int = 50) -> list[dict[str, Any]]:
    """The tenant's retention runs and policy changes, newest first."""
    return to_json(list(await store.query_one(queries.RETENTION_HISTORY, {"limit": limit}) or []))


async def retention_policy_audit(
    store: TenantStore, *, actor: str, before: RetentionPolicy, after: RetentionPolicy
) -> None:
    await store.query(
        queries.RETENTION_POLICY_AUDIT,
        {"actor": actor, "before": before.as_dict(), "after": after.as_dict()},
    )
