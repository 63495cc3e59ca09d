"""Undoing an audited merge: a curator's (kgapp/graph/curation/merge.py) is put back
exactly; one that resolution made while ingesting (`auto_merge`) is split back off."""

from __future__ import annotations

import secrets
from typing import Literal

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.audit import (
    AliasRow,
    AuditEntry,
    Candidate,
    MentionRow,
    MergeAfter,
    MergeBefore,
    UndoAfter,
    audit_written,
    auto_merge_of,
    merge_of,
)
from kgapp.graph.curation.common import (
    CurationRefused,
    content,
    new_id,
    records,
    recount,
    referrers,
    relink,
)
from kgapp.graph.curation.pages import audit_get
from kgapp.graph.ontology import entity_types_recount
from kgapp.graph.records import Entity, StoredFact, record_key
from kgapp.graph.store import TenantStore

_ENDS: tuple[Literal["in", "out"], ...] = ("in", "out")


async def undo(store: TenantStore, entry: RecordID, *, actor: str) -> AuditEntry:
    """Put back exactly what an audited merge changed; returns the undo's audit entry.
    Refused when the merge was undone already, or when what it created has changed
    since (a later change would be lost)."""
    audit = await audit_get(store, entry)
    if audit["action"] not in ("merge", "auto_merge"):
        raise CurationRefused(f"only merges can be undone, not {audit['action']!r}")
    undone_by = audit.get("undone_by")
    if undone_by is not None:
        raise CurationRefused(f"this merge was undone already by {record_key(undone_by)}")
    if audit["action"] == "auto_merge":
        return await _undo_auto_merge(store, audit, actor=actor)
    return await _undo_merge(store, audit, actor=actor)


async def _undo_merge(store: TenantStore, audit: AuditEntry, *, actor: str) -> AuditEntry:
    """Put a curator's merge back exactly, unless what it created has changed since."""
    entry = audit["id"]
    before, after = merge_of(audit)
    created = after["facts_created"]
    # What the merge created and what it changed, in one read (created ids are new ones).
    now = await records(store, [row["id"] for row in created + before["facts"]])
    for row in created:
        if now.get(record_key(row["id"])) != row:
            raise CurationRefused(
                f"{record_key(row['id'])} changed after the merge; undoing would lose that"
            )
    plan = _put_back(before, after, set(now))
    plan.add(
        queries.AUDIT_CREATE,
        actor=actor,
        action="undo",
        target=entry,
        before=None,
        after=UndoAfter(undid=entry),
        reason=None,
    )
    results = await store.transaction(plan.sql, plan.params)
    undo_entry = audit_written(results)
    await store.query(queries.AUDIT_UNDONE, {"id": entry, "by": undo_entry["id"]})
    ends = {record_key(e["id"]) for e in before["entities"]}
    for fact in before["facts"]:
        ends.update({record_key(fact["in"]), record_key(fact["out"])})
    await recount(store, ends)
    # The entities are as they were; mentions written since may count otherwise.
    await entity_types_recount(store, [e["id"] for e in before["entities"]])
    return undo_entry


def _put_back(before: MergeBefore, after: MergeAfter, existing: set[str]) -> queries.Batch:
    """The statements that delete what a merge created and put back what it changed;
    `existing`: the keys of the facts it touched that exist now."""
    plan = queries.Batch()
    for row in after["facts_created"]:
        plan.add(queries.RECORD_DELETE, id=row["id"])
    for record in after["mentions_created"] + after["memberships_created"]:
        plan.add(queries.RECORD_DELETE, id=record)
    plan.add(queries.RECORD_DELETE, id=after["alias_created"])
    restored_facts = []
    for fact in before["facts"]:
        if record_key(fact["id"]) in existing:  # folded into, or linking to, a moved fact
            plan.add(queries.RECORD_REPLACE, id=fact["id"], row=content(fact))
        else:
            restored_facts.append(fact)
    if restored_facts:
        plan.add(queries.FACTS_BULK_INSERT, rows=restored_facts)
    if before["mentions"]:
        plan.add(queries.MENTIONS_INSERT, rows=before["mentions"])
    if before["memberships"]:
        plan.add(queries.MEMBERSHIPS_INSERT, rows=before["memberships"])
    others: list[Entity | AliasRow | Candidate] = [
        *before["entities"],
        *before["aliases"],
        *before["candidates"],
    ]
    for kept in others:
        plan.add(queries.RECORD_REPLACE, id=kept["id"], row=content(kept))
    return plan


async def _undo_auto_merge(store: TenantStore, audit: AuditEntry, *, actor: str) -> AuditEntry:
    """Split a name that resolution merged without a person back off: its entity stands
    alone again, with the facts and the mention its episode brought through that name,
    and the pair is recorded as rejected so that nothing proposes it again. Facts that
    later episodes attached through the alias stay with the survivor."""
    after = auto_merge_of(audit)
    survivor, merged = after["survivor"], after["merged"]
    facts = await records(store, after["facts"])
    plan = queries.Batch()
    token = secrets.token_hex(4)
    # A relation's ends cannot change: each fact is re-created under a new id, and the
    # supersession links to it follow (as in a merge).
    new_ids = {key: new_id(fact["id"], token) for key, fact in facts.items()}
    moved: list[StoredFact] = []
    for key, fact in facts.items():
        row = fact.copy()
        row["id"] = new_ids[key]
        for end in _ENDS:
            if record_key(row[end]) == record_key(survivor):
                row[end] = merged
        relink(row, new_ids)
        plan.add(queries.RECORD_DELETE, id=fact["id"])
        moved.append(row)
    for key, referrer in (await referrers(store, [f["id"] for f in facts.values()])).items():
        if key not in facts:
            updated = referrer.copy()
            relink(updated, new_ids)
            plan.add(queries.RECORD_REPLACE, id=referrer["id"], row=content(updated))
    if moved:
        plan.add(queries.FACTS_BULK_INSERT, rows=moved)
    mention: MentionRow = {"in": after["episode"], "out": merged}
    plan.add(queries.MENTIONS_INSERT, rows=[mention])
    plan.add(queries.ENTITY_UNMERGE, id=merged)
    plan.add(queries.RECORD_DELETE, id=after["alias"])
    plan.add(
        queries.CANDIDATE_REJECTED_ADD,
        a=merged,
        b=survivor,
        score=float(after["cosine"] or after["score"] or 0.0),
        method=f"auto_merge_{after['rule']}",
        actor=actor,
    )
    plan.add(
        queries.AUDIT_CREATE,
        actor=actor,
        action="undo",
        target=audit["id"],
        before=None,
        after=UndoAfter(undid=audit["id"], facts_moved=[row["id"] for row in moved]),
        reason=None,
    )
    undo_entry = audit_written(await store.transaction(plan.sql, plan.params))
    await store.query(queries.AUDIT_UNDONE, {"id": audit["id"], "by": undo_entry["id"]})
    await recount(store, {record_key(survivor), record_key(merged)})
    await entity_types_recount(store, [survivor, merged])
    return undo_entry
