"""Undoing an audited merge: a curator's (kgapp/graph/curation/merge.py) is put back
exactly; one that resolution made while ingesting (`auto_merge`) is split back off."""

from __future__ import annotations

import secrets
from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.curation.common import (
    CurationRefused,
    audit_of,
    content,
    records,
    recount,
    referrers,
    relink,
)
from kgapp.graph.curation.pages import audit_get
from kgapp.graph.ontology import entity_types_recount
from kgapp.graph.records import record_key
from kgapp.graph.store import TenantStore


async def undo(store: TenantStore, entry: RecordID, *, actor: str) -> dict[str, Any]:
    """Put back exactly what an audited merge changed; returns the undo's audit entry.
    Refused when the merge was undone already, or when what it created has changed
    since (a later change would be lost)."""
    audit = await audit_get(store, entry)
    if audit["action"] not in ("merge", "auto_merge"):
        raise CurationRefused(f"only merges can be undone, not {audit['action']!r}")
    if audit.get("undone_by") is not None:
        raise CurationRefused(f"this merge was undone already by {record_key(audit['undone_by'])}")
    if audit["action"] == "auto_merge":
        return await _undo_auto_merge(store, audit, actor=actor)
    before, after = audit["before"], audit["after"]
    created = after.get("facts_created") or []
    # What the merge created and what it changed, in one read (created ids are new ones).
    now = await records(store, [row["id"] for row in created + before["facts"]])
    for row in created:
        if now.get(record_key(row["id"])) != row:
            raise CurationRefused(
                f"{record_key(row['id'])} changed after the merge; undoing would lose that"
            )
    plan = queries.Batch()
    for row in created:
        plan.add(queries.RECORD_DELETE, id=row["id"])
    for key in ("mentions_created", "memberships_created"):
        for record in after.get(key) or []:
            plan.add(queries.RECORD_DELETE, id=record)
    plan.add(queries.RECORD_DELETE, id=after["alias_created"])
    restored_facts = []
    for fact in before["facts"]:
        if record_key(fact["id"]) in now:  # folded into, or linking to, a moved fact
            plan.add(queries.RECORD_REPLACE, id=fact["id"], row=content(fact))
        else:
            restored_facts.append(fact)
    if restored_facts:
        plan.add(queries.FACTS_BULK_INSERT, rows=restored_facts)
    if before.get("mentions"):
        plan.add(queries.MENTIONS_INSERT, rows=before["mentions"])
    if before.get("memberships"):
        plan.add(queries.MEMBERSHIPS_INSERT, rows=before["memberships"])
    for record in [*before["entities"], *before.get("aliases", []), *before.get("candidates", [])]:
        plan.add(queries.RECORD_REPLACE, id=record["id"], row=content(record))
    plan.add(
        queries.AUDIT_CREATE,
        actor=actor,
        action="undo",
        target=entry,
        before=None,
        after={"undid": entry},
        reason=None,
    )
    results = await store.transaction(plan.sql, plan.params)
    undo_entry = audit_of(results)
    await store.query(queries.AUDIT_UNDONE, {"id": entry, "by": undo_entry["id"]})
    ends = {record_key(e["id"]) for e in before["entities"]}
    for fact in before["facts"]:
        ends.update({record_key(fact["in"]), record_key(fact["out"])})
    await recount(store, ends)
    # The entities are as they were; mentions written since may count otherwise.
    await entity_types_recount(store, [e["id"] for e in before["entities"]])
    return undo_entry


async def _undo_auto_merge(
    store: TenantStore, audit: dict[str, Any], *, actor: str
) -> dict[str, Any]:
    """Split a name that resolution merged without a person back off: its entity stands
    alone again, with the facts and the mention its episode brought through that name,
    and the pair is recorded as rejected so that nothing proposes it again. Facts that
    later episodes attached through the alias stay with the survivor."""
    after = audit["after"]
    survivor, merged = after["survivor"], after["merged"]
    facts = await records(store, list(after.get("facts") or []))
    plan = queries.Batch()
    token = secrets.token_hex(4)
    # A relation's ends cannot change: each fact is re-created under a new id, and the
    # supersession links to it follow (as in a merge).
    new_ids = {
        key: RecordID("relates_to", f"{fact['id'].id}_{token}") for key, fact in facts.items()
    }
    moved = []
    for key, fact in facts.items():
        row = {**fact, "id": new_ids[key]}
        for end in ("in", "out"):
            if record_key(row[end]) == record_key(survivor):
                row[end] = merged
        relink(row, new_ids)
        plan.add(queries.RECORD_DELETE, id=fact["id"])
        moved.append(row)
    for key, referrer in (await referrers(store, [f["id"] for f in facts.values()])).items():
        if key not in facts:
            updated = dict(referrer)
            relink(updated, new_ids)
            plan.add(queries.RECORD_REPLACE, id=referrer["id"], row=content(updated))
    if moved:
        plan.add(queries.FACTS_BULK_INSERT, rows=moved)
    plan.add(queries.MENTIONS_INSERT, rows=[{"in": after["episode"], "out": merged}])
    plan.add(queries.ENTITY_UNMERGE, id=merged)
    plan.add(queries.RECORD_DELETE, id=after["alias"])
    plan.add(
        queries.CANDIDATE_REJECTED_ADD,
        a=merged,
        b=survivor,
        score=float(after.get("cosine") or after.get("score") or 0.0),
        method=f"auto_merge_{after.get('rule', '')}",
        actor=actor,
    )
    plan.add(
        queries.AUDIT_CREATE,
        actor=actor,
        action="undo",
        target=audit["id"],
        before=None,
        after={"undid": audit["id"], "facts_moved": [row["id"] for row in moved]},
        reason=None,
    )
    undo_entry = audit_of(await store.transaction(plan.sql, plan.params))
    await store.query(queries.AUDIT_UNDONE, {"id": audit["id"], "by": undo_entry["id"]})
    await recount(store, {record_key(survivor), record_key(merged)})
    await entity_types_recount(store, [survivor, merged])
    return undo_entry
