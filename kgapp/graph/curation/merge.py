"""Merging a duplicate entity into another, in one transaction with its audit entry.

A merge moves everything of the merged entity to the survivor:
- its facts are re-created between the survivor and their other end, under new ids
  (a relation record cannot change its ends); a moved fact that repeats one of the
  survivor's current facts (same relation, same other end, same text) is folded into
  it instead: the episodes are joined, the higher confidence kept;
- supersession links to a moved fact follow it to its new id;
- its mentions and community memberships become the survivor's (once each);
- its aliases point at the survivor, and its own name becomes one more alias;
- the survivor takes the type most of its mentions now give (kgapp/graph/ontology.py);
- the entity itself stays, marked `merged_into` the survivor.
Undoing it is kgapp/graph/curation/undo.py.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeVar

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.audit import (
    AliasRow,
    AuditEntry,
    Candidate,
    MembershipRow,
    MentionRow,
    MergeAfter,
    MergeBefore,
    audit_written,
)
from kgapp.graph.curation.common import (
    CurationRefused,
    content,
    new_id,
    recount,
    referrers,
    relink,
)
from kgapp.graph.errors import UniqueViolation
from kgapp.graph.ontology import entity_types_recount
from kgapp.graph.records import Entity, StoredFact, as_entity, found, record_key
from kgapp.graph.store import TenantStore

MERGE_ATTEMPTS = 3

_ENDS: tuple[Literal["in", "out"], ...] = ("in", "out")
# A mention (episode -> entity) or a community membership (community -> entity).
Relation = TypeVar("Relation", MentionRow, MembershipRow)


async def merge_entities(
    store: TenantStore,
    survivor: RecordID,
    merged: RecordID,
    *,
    actor: str,
    reason: str | None = None,
) -> AuditEntry:
    """Merge `merged` into `survivor`; returns the audit entry."""
    if record_key(survivor) == record_key(merged):
        raise CurationRefused("an entity cannot be merged into itself")
    for attempt in range(MERGE_ATTEMPTS):
        plan = await _merge_plan(store, survivor, merged, actor=actor, reason=reason)
        try:
            results = await store.transaction(plan.batch.sql, plan.batch.params)
        except UniqueViolation:  # a concurrent writer (or MERGE_GUARD): read again, re-plan
            if attempt + 1 < MERGE_ATTEMPTS:
                continue
            raise
        await recount(store, plan.endpoints)
        await entity_types_recount(store, [survivor])
        return audit_written(results)
    raise AssertionError("unreachable")


@dataclass
class _Read:
    """Both entities and everything of theirs that a merge touches, read at once."""

    kept: Entity
    gone: Entity
    facts_of_merged: list[StoredFact]
    facts_of_survivor: list[StoredFact]
    mentions_of_merged: list[MentionRow]
    mentions_of_survivor: list[MentionRow]
    members_of_merged: list[MembershipRow]
    members_of_survivor: list[MembershipRow]
    aliases: list[AliasRow]
    candidates: list[Candidate]


class _Plan:
    """A merge's statements, in order, and what its audit entry records, built step by
    step (`_merge_plan`)."""

    def __init__(self, survivor: RecordID, merged: RecordID) -> None:
        self.batch = queries.Batch()
        self.endpoints: set[str] = set()
        self.survivor = survivor
        self.merged = merged
        self.token = secrets.token_hex(4)
        self.new_ids: dict[str, RecordID] = {}  # moved fact's key -> its id from now on
        self.created: list[StoredFact] = []
        self.folded: dict[str, StoredFact] = {}  # survivor's fact key -> its new content
        self.before_facts: dict[str, StoredFact] = {}


async def _merge_plan(
    store: TenantStore, survivor: RecordID, merged: RecordID, *, actor: str, reason: str | None
) -> _Plan:
    """The statements of one merge, in order, from one read of both entities: the guard,
    the facts moved or folded, their links followed, mentions and memberships moved, the
    merged entity retired, and the audit entry last."""
    read = await _read(store, survivor, merged)
    plan = _Plan(survivor, merged)
    moving = {record_key(f["id"]): f for f in read.facts_of_merged}
    # The guard counts a fact from the entity to itself twice (as source and as target),
    # as the read lists it: count it so, or such a merge always "conflicts".
    plan.batch.add(queries.MERGE_GUARD, merged=merged, facts=len(read.facts_of_merged))
    _move_facts(plan, moving, read.facts_of_survivor)
    await _follow_links(store, plan, moving)
    _write_facts(plan)
    mentions = _moved_relations(
        plan,
        read.mentions_of_merged,
        read.mentions_of_survivor,
        "mentions",
        queries.MENTIONS_INSERT,
    )
    memberships = _moved_relations(
        plan,
        read.members_of_merged,
        read.members_of_survivor,
        "has_member",
        queries.MEMBERSHIPS_INSERT,
    )
    alias = _retire_merged(plan, read, actor=actor)
    plan.endpoints.update({record_key(survivor), record_key(merged)})
    after = MergeAfter(
        survivor=plan.survivor,
        merged=plan.merged,
        facts_created=plan.created,
        facts_folded=[row["id"] for row in plan.folded.values()],
        mentions_created=mentions,
        memberships_created=memberships,
        alias_created=alias,
    )
    _audit(plan, read, after, actor=actor, reason=reason)
    return plan


async def _read(store: TenantStore, survivor: RecordID, merged: RecordID) -> _Read:
    """Read both entities and all a merge touches in one round trip; NotFound when
    either is missing, refused when either was merged already."""
    kept_row, gone_row, *lists = await store.query(
        queries.CURATION_READ, {"survivor": survivor, "merged": merged}
    )
    kept = as_entity(found(kept_row, "entity", survivor))
    gone = as_entity(found(gone_row, "entity", merged))
    for entity in (kept, gone):
        into = entity.get("merged_into")
        if into is not None:
            raise CurationRefused(
                f"{record_key(entity['id'])} was already merged into "
                f"{record_key(into)}: merge into that one instead"
            )
    (
        out_m,
        in_m,
        out_s,
        in_s,
        mentions_m,
        mentions_s,
        members_m,
        members_s,
        aliases,
        candidates,
    ) = (rows or [] for rows in lists)
    return _Read(
        kept,
        gone,
        out_m + in_m,
        out_s + in_s,
        mentions_m,
        mentions_s,
        members_m,
        members_s,
        aliases,
        candidates,
    )


def _move_facts(plan: _Plan, moving: dict[str, StoredFact], of_survivor: list[StoredFact]) -> None:
    """Each fact of the merged entity is deleted and re-created with the survivor at
    its end, or folded into the survivor's current fact that it repeats."""
    current = {_same_fact_key(f): f for f in of_survivor if f.get("expired_at") is None}
    merged = record_key(plan.merged)
    plan.before_facts.update(moving)
    for key, fact in moving.items():
        row = fact.copy()
        for end in _ENDS:
            if record_key(fact[end]) == merged:
                row[end] = plan.survivor
        plan.endpoints.update({record_key(row["in"]), record_key(row["out"])})
        twin = current.get(_same_fact_key(row)) if fact.get("expired_at") is None else None
        if twin is not None:
            twin_key = record_key(twin["id"])
            target = plan.folded.setdefault(twin_key, twin.copy())
            plan.before_facts.setdefault(twin_key, twin)
            target["episodes"] = _union(target.get("episodes") or [], fact.get("episodes") or [])
            target["confidence"] = max(float(target["confidence"]), float(fact["confidence"]))
            plan.new_ids[key] = twin["id"]
        else:
            row["id"] = new_id(fact["id"], plan.token)
            plan.new_ids[key] = row["id"]
            plan.created.append(row)
        plan.batch.add(queries.RECORD_DELETE, id=fact["id"])


async def _follow_links(store: TenantStore, plan: _Plan, moving: dict[str, StoredFact]) -> None:
    """Supersession links into moved facts follow them (links among moved facts are
    rewritten in the re-created rows; others are updated where they are)."""
    linking = await referrers(store, [f["id"] for f in moving.values()])
    for row in plan.created:
        relink(row, plan.new_ids)
    for key, referrer in linking.items():
        if key in moving:
            continue
        plan.before_facts.setdefault(key, referrer)
        updated = plan.folded.setdefault(key, referrer.copy())
        relink(updated, plan.new_ids)


def _write_facts(plan: _Plan) -> None:
    if plan.created:
        plan.batch.add(queries.FACTS_BULK_INSERT, rows=plan.created)
    for row in plan.folded.values():
        plan.batch.add(queries.RECORD_REPLACE, id=row["id"], row=content(row))


def _moved_relations(
    plan: _Plan,
    of_merged: list[Relation],
    of_survivor: list[Relation],
    table: str,
    insert: str,
) -> list[RecordID]:
    """Mentions (episode -> entity) or memberships (community -> entity) of the merged
    entity, re-created for the survivor unless it already has them."""
    has = {record_key(r["in"]) for r in of_survivor}
    rows: list[Relation] = []
    for relation in of_merged:
        plan.batch.add(queries.RECORD_DELETE, id=relation["id"])
        if record_key(relation["in"]) in has:
            continue
        has.add(record_key(relation["in"]))
        row = relation.copy()
        row["id"] = new_id(relation["id"], plan.token)
        row["out"] = plan.survivor
        rows.append(row)
    if rows:
        plan.batch.add(insert, rows=rows)
    return [row["id"] for row in rows]


def _retire_merged(plan: _Plan, read: _Read, *, actor: str) -> RecordID:
    """The merged entity's aliases point at the survivor and its name becomes one more,
    it is marked merged, and a candidate pair of the two is decided as merged; returns
    the alias made of its name."""
    for alias in read.aliases:
        plan.batch.add(queries.ALIAS_POINT, id=alias["id"], entity=plan.survivor)
    alias_key = f"merge_{plan.token}"
    plan.batch.add(
        queries.ALIAS_ADD,
        key=alias_key,
        row=AliasRow(
            name=read.gone["canonical_name"],
            entity_type=read.gone["entity_type"],
            entity=plan.survivor,
        ),
    )
    plan.batch.add(queries.ENTITY_MERGED_MARK, id=plan.merged, survivor=plan.survivor)
    for candidate in read.candidates:
        plan.batch.add(queries.CANDIDATE_DECIDE, id=candidate["id"], status="merged", actor=actor)
    return RecordID("alias", alias_key)


def _audit(plan: _Plan, read: _Read, after: MergeAfter, *, actor: str, reason: str | None) -> None:
    """The audit entry, last in the transaction: the records as they were (all that an
    undo puts back) and what the merge created."""
    before = MergeBefore(
        entities=[read.kept, read.gone],
        facts=list(plan.before_facts.values()),
        mentions=read.mentions_of_merged,
        memberships=read.members_of_merged,
        aliases=read.aliases,
        candidates=read.candidates,
    )
    plan.batch.add(
        queries.AUDIT_CREATE,
        actor=actor,
        action="merge",
        target=plan.survivor,
        before=before,
        after=after,
        reason=reason,
    )


def _same_fact_key(fact: StoredFact) -> tuple[str, str, str, str]:
    return (record_key(fact["in"]), fact["relation"], record_key(fact["out"]), fact["fact"])


def _union(first: Iterable[RecordID], second: Iterable[RecordID]) -> list[RecordID]:
    seen: dict[str, RecordID] = {}
    for item in [*first, *second]:
        seen.setdefault(record_key(item), item)
    return list(seen.values())
