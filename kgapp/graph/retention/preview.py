"""A plan summarised for the person deciding on a policy: counts, and a few of each kind."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NotRequired, TypedDict

from kgapp.graph import queries
from kgapp.graph.audit import RetentionPolicyFields
from kgapp.graph.records import to_json
from kgapp.graph.retention.plan import retention_plan
from kgapp.graph.retention.policy import RetentionPolicy
from kgapp.graph.store import TenantStore

SAMPLE = 10

# What this module answers is JSON (`to_json`): record ids and moments as text.


class FactSample(TypedDict):
    id: str
    fact: str
    relation: str
    source_name: str | None
    target_name: str | None
    valid_at: str
    invalid_at: str | None
    created_at: str
    expired_at: str | None


class EpisodeSample(TypedDict):
    id: str
    name: str
    source: str
    excerpt: str
    valid_at: str
    created_at: str


class DocumentSample(TypedDict):
    id: str
    file_name: str
    created_at: str


class EntitySample(TypedDict):
    id: str
    name: str
    entity_type: str


class PreviewSample(TypedDict):
    facts: list[FactSample]
    episodes: list[EpisodeSample]
    documents: list[DocumentSample]
    entities: list[EntitySample]


class RetentionPreview(TypedDict):
    """What a policy would remove now: its cutoffs, counts by kind and a few of each."""

    policy: RetentionPolicyFields
    now: str
    facts_ended_before: str | None
    episodes_before: str | None
    counts: dict[str, int]
    sample: PreviewSample


class RunAfterJson(TypedDict):
    """A `retention_run` entry's `after` (audit.RetentionRunAfter) as JSON."""

    policy: RetentionPolicyFields
    facts_ended_before: str | None
    episodes_before: str | None
    counts: dict[str, int]
    archive: str | None


class HistoryEntry(TypedDict):
    """A retention run or policy change, as its audit entry records it."""

    id: str
    actor: str
    action: str  # retention_run | retention_policy
    at: str
    before: NotRequired[RetentionPolicyFields | None]
    after: NotRequired[RetentionPolicyFields | RunAfterJson | None]


async def retention_preview(
    store: TenantStore, policy: RetentionPolicy, *, now: datetime | None = None
) -> RetentionPreview:
    """What `policy` would remove if applied now; nothing is changed."""
    plan = await retention_plan(store, policy, now=now)
    samples: list[Any] = [[], [], [], []]
    if not plan.empty:
        samples = await store.query(queries.RETENTION_SAMPLES, {**plan.params(), "limit": SAMPLE})
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


async def retention_history(store: TenantStore, *, limit: int = 50) -> list[HistoryEntry]:
    """The tenant's retention runs and policy changes, newest first."""
    return to_json(list(await store.query_one(queries.RETENTION_HISTORY, {"limit": limit}) or []))


async def retention_policy_audit(
    store: TenantStore, *, actor: str, before: RetentionPolicy, after: RetentionPolicy
) -> None:
    await store.query(
        queries.RETENTION_POLICY_AUDIT,
        {"actor": actor, "before": before.as_dict(), "after": after.as_dict()},
    )
