"""Curators' changes to a tenant's graph: merging duplicate entities (and undoing a
merge exactly), deciding dedup candidates. Every change is one transaction with the
audit entry that records it, `before` holding the records as they were.

A merge moves everything of the merged entity to the survivor:
- its facts are re-created between the survivor and their other end, under new ids
  (a relation record cannot change its ends); a moved fact that repeats one of the
  survivor's current facts (same relation, same other end, same text) is folded into
  it instead: the episodes are joined, the higher confidence kept;
- supersession links to a moved fact follow it to its new id;
- its mentions and community memberships become the survivor's (once each);
- its aliases point at the survivor, and its own name becomes one more alias;
- the entity itself stays, marked `merged_into` the survivor.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import numpy as np
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import names, queries
from kgapp.graph.errors import GraphError, NotFound, UniqueViolation
from kgapp.graph.index import entity_index
from kgapp.graph.ontology import types_compatible
from kgapp.graph.records import record_key
from kgapp.graph.store import TenantStore

MERGE_ATTEMPTS = 3


class CurationRefused(GraphError):
    """The change cannot be made as asked (a person can act on the message)."""


async def merge_entities(
    store: TenantStore,
    survivor: RecordID,
    merged: RecordID,
    *,
    actor: str,
    reason: str | None = None,
) -> dict[str, Any]:
    """Merge `merged` into `survivor`; returns the audit entry."""
    if record_key(survivor) == record_key(merged):
        raise CurationRefused("an entity cannot be merged into itself")
    for attempt in range(MERGE_ATTEMPTS):
        plan = await _merge_plan(store, survivor, merged, actor=actor, reason=reason)
        try:
            results = await store.transaction(plan.sql, plan.params)
        except UniqueViolation:  # a concurrent writer (or MERGE_GUARD): read again, re-plan
            if attempt + 1 < MERGE_ATTEMPTS:
                continue
            raise
        await _recount(store, plan.endpoints)
        return _audit_of(results)
    raise AssertionError("unreachable")


class _Plan:
    def __init__(self) -> None:
        self.batch = queries.Batch()
        self.endpoints: set[str] = set()

    @property
    def sql(self) -> str:
        return self.batch.sql

    @property
    def params(self) -> dict[str, Any]:
        return self.batch.params


async def _merge_plan(
    store: TenantStore, survivor: RecordID, merged: RecordID, *, actor: str, reason: str | None
) -> _Plan:
    (
        kept,
        gone,
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
    ) = await store.query(queries.CURATION_READ, {"survivor": survivor, "merged": merged})
    if not kept:
        raise NotFound(f"no entity {record_key(survivor)}")
    if not gone:
        raise NotFound(f"no entity {record_key(merged)}")
    for entity in (kept, gone):
        if entity.get("merged_into") is not None:
            raise CurationRefused(
                f"{record_key(entity['id'])} was already merged into "
                f"{record_key(entity['merged_into'])}: merge into that one instead"
            )
    token = secrets.token_hex(4)
    moving = {record_key(f["id"]): f for f in (out_m or []) + (in_m or [])}
    current = {
        _same_fact_key(f): f for f in (out_s or []) + (in_s or []) if f.get("expired_at") is None
    }
    plan = _Plan()
    plan.batch.add(queries.MERGE_GUARD, merged=merged, facts=len(moving))
    new_ids: dict[str, RecordID] = {}
    created: list[dict[str, Any]] = []
    folded: dict[str, dict[str, Any]] = {}  # survivor's fact key -> its new content
    before_facts: dict[str, dict[str, Any]] = dict(moving)
    for key, fact in moving.items():
        row = {**fact}
        row["in"] = survivor if record_key(fact["in"]) == record_key(merged) else fact["in"]
        row["out"] = survivor if record_key(fact["out"]) == record_key(merged) else fact["out"]
        plan.endpoints.update({record_key(row["in"]), record_key(row["out"])})
        twin = current.get(_same_fact_key(row)) if fact.get("expired_at") is None else None
        if twin is not None:
            twin_key = record_key(twin["id"])
            target = folded.setdefault(twin_key, dict(twin))
            before_facts.setdefault(twin_key, twin)
            target["episodes"] = _union(target.get("episodes") or [], fact.get("episodes") or [])
            target["confidence"] = max(float(target["confidence"]), float(fact["confidence"]))
            new_ids[key] = twin["id"]
        else:
            row["id"] = RecordID("relates_to", f"{fact['id'].id}_{token}")
            new_ids[key] = row["id"]
            created.append(row)
        plan.batch.add(queries.RECORD_DELETE, id=fact["id"])
    # Supersession links into moved facts follow them (links among moved facts are
    # rewritten in the rows above; others are updated where they are).
    referrers = await _referrers(store, [f["id"] for f in moving.values()])
    for row in created:
        _relink(row, new_ids)
    for key, referrer in referrers.items():
        if key in moving:
            continue
        before_facts.setdefault(key, referrer)
        updated = folded.setdefault(key, dict(referrer))
        _relink(updated, new_ids)
    if created:
        plan.batch.add(queries.FACTS_BULK_INSERT, rows=created)
    for row in folded.values():
        plan.batch.add(queries.RECORD_REPLACE, id=row["id"], row=_content(row))
    mentions_created = _moved_relations(
        plan,
        mentions_m or [],
        mentions_s or [],
        survivor,
        token,
        "mentions",
        queries.MENTIONS_INSERT,
    )
    members_created = _moved_relations(
        plan,
        members_m or [],
        members_s or [],
        survivor,
        token,
        "has_member",
        queries.MEMBERSHIPS_INSERT,
    )
    for alias in aliases or []:
        plan.batch.add(queries.ALIAS_POINT, id=alias["id"], entity=survivor)
    alias_key = f"merge_{token}"
    plan.batch.add(
        queries.ALIAS_ADD,
        key=alias_key,
        row={
            "name": gone["canonical_name"],
            "entity_type": gone["entity_type"],
            "entity": survivor,
        },
    )
    plan.batch.add(queries.ENTITY_MERGED_MARK, id=merged, survivor=survivor)
    for candidate in candidates or []:
        plan.batch.add(queries.CANDIDATE_DECIDE, id=candidate["id"], status="merged", actor=actor)
    plan.endpoints.update({record_key(survivor), record_key(merged)})
    before = {
        "entities": [kept, gone],
        "facts": list(before_facts.values()),
        "mentions": mentions_m or [],
        "memberships": members_m or [],
        "aliases": aliases or [],
        "candidates": candidates or [],
    }
    after = {
        "survivor": survivor,
        "merged": merged,
        "facts_created": created,
        "facts_folded": [row["id"] for row in folded.values()],
        "mentions_created": mentions_created,
        "memberships_created": members_created,
        "alias_created": RecordID("alias", alias_key),
    }
    plan.batch.add(
        queries.AUDIT_CREATE,
        actor=actor,
        action="merge",
        target=survivor,
        before=before,
        after=after,
        reason=reason,
    )
    return plan


def _audit_of(results: list[Any]) -> dict[str, Any]:
    """The audit entry a transaction created (its last statement before COMMIT)."""
    return dict(next(r for r in reversed(results) if isinstance(r, dict) and "action" in r))


def _moved_relations(
    plan: _Plan,
    of_merged: list[dict[str, Any]],
    of_survivor: list[dict[str, Any]],
    survivor: RecordID,
    token: str,
    table: str,
    insert: str,
) -> list[RecordID]:
    """Mentions (episode -> entity) or memberships (community -> entity) of the merged
    entity, re-created for the survivor unless it already has them."""
    has = {record_key(r["in"]) for r in of_survivor}
    rows = []
    for relation in of_merged:
        plan.batch.add(queries.RECORD_DELETE, id=relation["id"])
        if record_key(relation["in"]) in has:
            continue
        has.add(record_key(relation["in"]))
        rows.append(
            {**relation, "id": RecordID(table, f"{relation['id'].id}_{token}"), "out": survivor}
        )
    if rows:
        plan.batch.add(insert, rows=rows)
    return [row["id"] for row in rows]


async def _referrers(store: TenantStore, facts: list[RecordID]) -> dict[str, dict[str, Any]]:
    batch = queries.Batch()
    for fact in facts:
        batch.add(queries.FACT_REFERRERS, id=fact)
    found: dict[str, dict[str, Any]] = {}
    for rows in await store.query(batch.sql, batch.params) if facts else []:
        for row in rows or []:
            found.setdefault(record_key(row["id"]), row)
    return found


def _relink(row: dict[str, Any], new_ids: dict[str, RecordID]) -> None:
    for link in ("supersedes", "superseded_by", "revision_of"):
        target = row.get(link)
        if target is not None and record_key(target) in new_ids:
            row[link] = new_ids[record_key(target)]


def _same_fact_key(fact: dict[str, Any]) -> tuple[str, str, str, str]:
    return (record_key(fact["in"]), fact["relation"], record_key(fact["out"]), fact["fact"])


def _union(first: Iterable[Any], second: Iterable[Any]) -> list[Any]:
    seen: dict[str, Any] = {}
    for item in [*first, *second]:
        seen.setdefault(record_key(item), item)
    return list(seen.values())


def _content(row: dict[str, Any]) -> dict[str, Any]:
    """A record's fields for `UPDATE ... CONTENT` (the id is the statement's)."""
    return {k: v for k, v in row.items() if k != "id"}


async def _recount(store: TenantStore, endpoints: Iterable[str]) -> None:
    ids = [RecordID(*key.split(":", 1)) for key in sorted(endpoints)]
    if ids:
        await store.query(queries.ENTITY_DEGREE_RECOUNT, {"ids": ids})


# --- undo ----------------------------------------------------------------------------


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
    now = await _records(store, [row["id"] for row in created + before["facts"]])
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
            plan.add(queries.RECORD_REPLACE, id=fact["id"], row=_content(fact))
        else:
            restored_facts.append(fact)
    if restored_facts:
        plan.add(queries.FACTS_BULK_INSERT, rows=restored_facts)
    if before.get("mentions"):
        plan.add(queries.MENTIONS_INSERT, rows=before["mentions"])
    if before.get("memberships"):
        plan.add(queries.MEMBERSHIPS_INSERT, rows=before["memberships"])
    for record in [*before["entities"], *before.get("aliases", []), *before.get("candidates", [])]:
        plan.add(queries.RECORD_REPLACE, id=record["id"], row=_content(record))
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
    undo_entry = _audit_of(results)
    await store.query(queries.AUDIT_UNDONE, {"id": entry, "by": undo_entry["id"]})
    ends = {record_key(e["id"]) for e in before["entities"]}
    for fact in before["facts"]:
        ends.update({record_key(fact["in"]), record_key(fact["out"])})
    await _recount(store, ends)
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
    facts = await _records(store, list(after.get("facts") or []))
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
        _relink(row, new_ids)
        plan.add(queries.RECORD_DELETE, id=fact["id"])
        moved.append(row)
    for key, referrer in (await _referrers(store, [f["id"] for f in facts.values()])).items():
        if key not in facts:
            updated = dict(referrer)
            _relink(updated, new_ids)
            plan.add(queries.RECORD_REPLACE, id=referrer["id"], row=_content(updated))
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
    undo_entry = _audit_of(await store.transaction(plan.sql, plan.params))
    await store.query(queries.AUDIT_UNDONE, {"id": audit["id"], "by": undo_entry["id"]})
    await _recount(store, {record_key(survivor), record_key(merged)})
    return undo_entry


async def _records(store: TenantStore, ids: list[RecordID]) -> dict[str, dict[str, Any]]:
    """The records of `ids` that exist, by key, in one round trip (one statement per
    record: `FROM $ids` sometimes fails on 3.0.2, docs/surrealdb-notes.md)."""
    batch = queries.Batch()
    for record in ids:
        batch.add(queries.RECORD_GET, id=record)
    rows = await store.query(batch.sql, batch.params) if ids else []
    return {record_key(row["id"]): row for row in rows if row}


async def _record_of(store: TenantStore, record: RecordID, table: str, what: str) -> dict[str, Any]:
    """One record of `table`, or NotFound naming it as `what`."""
    row = None
    if record.table_name == table:
        row = await store.query_one(queries.RECORD_GET, {"id": record})
    if not row:
        raise NotFound(f"no {what} {record_key(record)}")
    return dict(row)


# --- fact corrections ------------------------------------------------------------------


async def invalidate_fact(
    store: TenantStore,
    fact: RecordID,
    *,
    ended_at: datetime,
    actor: str,
    reason: str | None = None,
) -> dict[str, Any]:
    """The fact stopped holding at `ended_at`: its row is retired and a revision that
    ends then takes its place (as known from now on); nothing is deleted."""
    old = await _current_fact(store, fact)
    if ended_at < old["valid_at"]:
        raise CurationRefused("a fact cannot end before it began: pick a later end")
    revision = {
        **old,
        "id": RecordID("relates_to", f"{old['id'].id}_r{secrets.token_hex(3)}"),
        "invalid_at": ended_at,
        "created_at": datetime.now(UTC),
        "expired_at": None,
        "revision_of": old["id"],
        "superseded_by": None,
    }
    return await _retire_into(
        store,
        old,
        revision,
        superseded_by=None,
        action="invalidate",
        after={"revision": revision["id"], "ended_at": ended_at},
        actor=actor,
        reason=reason,
    )


async def correct_fact(
    store: TenantStore,
    fact: RecordID,
    *,
    text: str,
    valid_at: datetime | None,
    embedding: list[float] | None,
    actor: str,
    reason: str | None = None,
) -> dict[str, Any]:
    """A corrected version of the fact supersedes it (the old one is retired, linked
    both ways); the ends and relation stay, the text and start may change."""
    old = await _current_fact(store, fact)
    text = text.strip()
    if not text:
        raise CurationRefused("the corrected fact needs a text")
    now = datetime.now(UTC)
    new = {
        **old,
        "id": RecordID("relates_to", f"{old['id'].id}_c{secrets.token_hex(3)}"),
        "fact": text,
        "fact_embedding": embedding,
        "valid_at": valid_at or old["valid_at"],
        "created_at": now,
        "expired_at": None,
        "supersedes": old["id"],
        "superseded_by": None,
        "revision_of": None,
        "confidence": 1.0,
    }
    return await _retire_into(
        store,
        old,
        new,
        superseded_by=new["id"],
        action="correct",
        after={"fact": new["id"], "text": text},
        actor=actor,
        reason=reason,
    )


async def _retire_into(
    store: TenantStore,
    old: dict[str, Any],
    new: dict[str, Any],
    *,
    superseded_by: RecordID | None,
    action: str,
    after: dict[str, Any],
    actor: str,
    reason: str | None,
) -> dict[str, Any]:
    """Retire `old` (as known from `new`'s creation) and write `new`, audited, at once."""
    batch = queries.Batch()
    batch.add(queries.FACT_RETIRE, id=old["id"], now=new["created_at"], by=superseded_by)
    batch.add(queries.FACT_CREATE, row=new)
    batch.add(
        queries.AUDIT_CREATE,
        actor=actor,
        action=action,
        target=old["id"],
        before={"facts": [old]},
        after=after,
        reason=reason,
    )
    return _audit_of(await store.transaction(batch.sql, batch.params))


async def _current_fact(store: TenantStore, fact: RecordID) -> dict[str, Any]:
    row = await _record_of(store, fact, "relates_to", "fact")
    if row.get("expired_at") is not None:
        raise CurationRefused("this fact was already retired; correct the version that replaced it")
    return {k: v for k, v in row.items() if k not in ("retrieval_count", "updated_at")}


# --- review queue --------------------------------------------------------------------


async def decide_candidate(
    store: TenantStore, candidate: RecordID, *, status: str, actor: str
) -> dict[str, Any]:
    """Reject (never proposed again for that pair) or defer a candidate pair."""
    if status not in ("rejected", "deferred", "pending"):
        raise CurationRefused(f"a candidate can be rejected, deferred or pending, not {status!r}")
    row = await candidate_get(store, candidate)
    batch = queries.Batch()
    batch.add(queries.CANDIDATE_DECIDE, id=candidate, status=status, actor=actor)
    batch.add(
        queries.AUDIT_CREATE,
        actor=actor,
        action=f"candidate_{status}",
        target=candidate,
        before=row,
        after={"status": status},
        reason=None,
    )
    return _audit_of(await store.transaction(batch.sql, batch.params))


# Pairs proposed for review: cosine of the name vectors in [EMBEDDING_BAND, 1), or names
# that resemble each other (kgapp/graph/names.py) among each entity's nearest;
# never a pair whose names differ in what distinguishes two things (a number, a qualifier).
EMBEDDING_BAND = 0.70
NEIGHBOURS = 10


async def generate_candidates(
    store: TenantStore, *, band: float = EMBEDDING_BAND, most: int = 1000
) -> int:
    """Queue pairs of current entities that may be one (never a pair seen before,
    whatever was decided about it); returns how many were queued."""
    index = await entity_index(store)
    with index.lock:
        size = len(index.keys)
        usable = np.flatnonzero(index.alive.data[:size] & index.has_vector.data[:size])
        vectors = index.vectors.data[usable]
        rows = [index.rows[int(i)] for i in usable]
    known = {
        frozenset((record_key(r["a"]), record_key(r["b"])))
        for r in await store.query_one(queries.CANDIDATE_PAIRS) or []
    }
    found: dict[frozenset[str], tuple[float, str, Any, Any]] = {}
    for start in range(0, len(rows), 512):
        block = vectors[start : start + 512] @ vectors.T
        for offset, scores in enumerate(block):
            i = start + offset
            for j in np.argsort(-scores)[: NEIGHBOURS + 1]:
                a, b = rows[i], rows[j]
                if j <= i or not types_compatible(a["entity_type"], b["entity_type"]):
                    continue
                pair = frozenset((record_key(a["id"]), record_key(b["id"])))
                if pair in known or pair in found:
                    continue
                evidence = names.compare(a["name"], a["entity_type"], b["name"], b["entity_type"])
                cosine = float(scores[j])
                if evidence.verdict == "blocked":
                    continue
                if cosine >= band:
                    found[pair] = (cosine, "embedding_band", a["id"], b["id"])
                elif evidence.verdict in ("same", "similar"):
                    found[pair] = (evidence.score, f"name_{evidence.rule}", a["id"], b["id"])
    best = sorted(found.values(), key=lambda item: -item[0])[:most]
    batch = queries.Batch()
    for score, method, a, b in best:
        batch.add(queries.CANDIDATE_ADD, a=a, b=b, score=round(score, 4), method=method)
    if best:
        await store.transaction(batch.sql, batch.params)
    return len(best)


async def candidate_get(store: TenantStore, candidate: RecordID) -> dict[str, Any]:
    return await _record_of(store, candidate, "dedup_candidate", "dedup candidate")


async def candidates(
    store: TenantStore, *, status: str = "pending", limit: int = 50, offset: int = 0
) -> list[dict[str, Any]]:
    rows = await store.query_one(
        queries.CANDIDATE_LIST, {"status": status, "limit": limit, "offset": offset}
    )
    return list(rows or [])


# --- reading, for the admin ------------------------------------------------------------

FACT_STATES = ("current", "invalidated", "expired")


async def facts_page(
    store: TenantStore,
    *,
    q: str | None = None,
    relation: str | None = None,
    entity: RecordID | None = None,
    state: str | None = None,
    valid_from: Any = None,
    valid_to: Any = None,
    known_at: Any = None,
    limit: int = 50,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """Facts, newest first, filtered; `q` matches the fact's words (all of them)."""
    if state is not None and state not in FACT_STATES:
        raise CurationRefused(f"state is one of {', '.join(FACT_STATES)}")
    params = {
        "relation": relation,
        "entity": entity,
        "state": state,
        "valid_from": valid_from,
        "valid_to": valid_to,
        "known_at": known_at,
        "limit": limit,
        "offset": offset,
        "q": q,
    }
    sql = queries.ADMIN_FACTS_MATCHING if q else queries.ADMIN_FACTS
    return list(await store.query_one(sql, params) or [])


async def relations(store: TenantStore) -> list[str]:
    return sorted(await store.query_one(queries.ADMIN_RELATIONS) or [])


async def episodes_of(store: TenantStore, episodes: list[RecordID]) -> list[dict[str, Any]]:
    batch = queries.Batch()
    for episode in episodes:
        batch.add(queries.EPISODE_BRIEF, id=episode)
    rows = await store.query(batch.sql, batch.params) if episodes else []
    return [row for row in rows if row]


async def entity_page(store: TenantStore, entity: RecordID) -> dict[str, Any]:
    """An entity with its aliases, communities, merged-in entities, audit entries and
    every fact in and out, history included."""
    row, aliases, communities, merged, audits = await store.query(
        queries.ADMIN_ENTITY, {"id": entity}
    )
    if not row:
        raise NotFound(f"no entity {record_key(entity)}")
    out, into = await store.query(queries.ENTITY_ALL_FACTS, {"id": entity})
    return {
        "entity": row,
        "aliases": aliases or [],
        "communities": communities or [],
        "merged": merged or [],
        "audits": audits or [],
        "facts_out": out or [],
        "facts_in": into or [],
    }


async def audit_page(
    store: TenantStore,
    *,
    action: str | None = None,
    actor: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[dict[str, Any]]:
    params = {"action": action, "actor": actor, "limit": limit, "offset": offset}
    return list(await store.query_one(queries.AUDIT_LIST, params) or [])


async def audit_get(store: TenantStore, entry: RecordID) -> dict[str, Any]:
    return await _record_of(store, entry, "audit", "audit entry")


async def export_graph(store: TenantStore) -> dict[str, list[dict[str, Any]]]:
    """Every record of the graph tables, by table, in id order."""
    results = await store.query(queries.GRAPH_EXPORT)
    return {
        table: list(rows or [])
        for table, rows in zip(queries.GRAPH_EXPORT_TABLES, results, strict=True)
    }
