"""The audit log, typed: one entry per change a person (or resolution, while ingesting)
made, with a payload type for what each action records as `before` and `after`.

The stored JSON is exactly what these types hold (a TypedDict is the dict written), so
entries written before the types existed read the same. Entries are written by
curation (merge, undo, corrections, candidate decisions), by ingestion (`auto_merge`,
kgapp/graph/ingest/persist.py) and by retention (`retention_run`, `retention_policy`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph.errors import GraphError
from kgapp.graph.records import Entity, StoredFact

# --- records a merge moves -------------------------------------------------------------
# As `SELECT *` reads them, as a merge (or its undo) writes them back whole, and as a merge's
# entry keeps them; ingestion writes mentions too.

_RelationEnds = TypedDict("_RelationEnds", {"in": RecordID, "out": RecordID})


class MentionRow(_RelationEnds, total=False):
    """An episode's mention of an entity (`mentions`, episode -> entity), with the names
    and types the episode gave it."""

    id: RecordID
    name: str
    entity_type: str
    names: list[str]
    entity_types: list[str]
    summary: str
    seen_at: datetime
    created_at: datetime


class MembershipRow(_RelationEnds, total=False):
    """An entity's membership of a community (`has_member`, community -> entity)."""

    id: RecordID
    created_at: datetime


class AliasRow(TypedDict, total=False):
    """Another name of an entity (`alias`)."""

    id: RecordID
    name: str
    entity_type: str
    entity: RecordID
    created_at: datetime


class _CandidateFields(TypedDict):
    id: RecordID
    a: RecordID
    b: RecordID


class Candidate(_CandidateFields, total=False):
    """Two entities that may be one (`dedup_candidate`), and what was decided of them."""

    score: float
    method: str
    status: str
    decided_by: str | None
    decided_at: datetime | None
    created_at: datetime


def as_candidate(row: Any) -> Candidate:
    """A candidate read from the store, checked to have the fields every one has."""
    _check(row, _CandidateFields.__required_keys__, "a dedup candidate")
    return row


# --- payloads, by action ---------------------------------------------------------------


class MergeBefore(TypedDict):
    """`merge`: the records as they were, all that an undo puts back."""

    entities: list[Entity]  # the survivor, then the merged entity
    facts: list[StoredFact]
    mentions: list[MentionRow]
    memberships: list[MembershipRow]
    aliases: list[AliasRow]
    candidates: list[Candidate]


class MergeAfter(TypedDict):
    """`merge`: what the merge created (an undo deletes it)."""

    survivor: RecordID
    merged: RecordID
    facts_created: list[StoredFact]
    facts_folded: list[RecordID]
    mentions_created: list[RecordID]
    memberships_created: list[RecordID]
    alias_created: RecordID


class AutoMergeAfter(TypedDict):
    """`auto_merge`: a name that resolution merged into an entity while ingesting, the
    rule and scores that decided it, and the facts its episode attached through it."""

    survivor: RecordID
    merged: RecordID
    name: str
    survivor_name: str
    rule: str
    score: float | None
    cosine: float | None
    episode: RecordID
    facts: list[RecordID]
    alias: RecordID


class UndoAfter(TypedDict):
    """`undo`: the entry undone; an automatic merge's undo also lists the facts it moved."""

    undid: RecordID
    facts_moved: NotRequired[list[RecordID]]


class FactsBefore(TypedDict):
    """`invalidate`, `correct`: the fact as it was."""

    facts: list[StoredFact]


class InvalidateAfter(TypedDict):
    revision: RecordID
    ended_at: datetime


class CorrectAfter(TypedDict):
    fact: RecordID
    text: str


class CandidateAfter(TypedDict):
    """`candidate_<status>`: the status decided (`before` is the candidate as it was)."""

    status: str


class RetentionPolicyFields(TypedDict):
    """A retention policy as stored (`retention_policy` before and after; a run's)."""

    mode: str
    facts_ended_days: int | None
    episodes_days: int | None


class RetentionRunAfter(TypedDict):
    """`retention_run`: the policy applied, its cutoffs, what it removed and where the
    archive of that is."""

    policy: RetentionPolicyFields
    facts_ended_before: datetime | None
    episodes_before: datetime | None
    counts: dict[str, int]
    archive: str | None


AuditBefore = MergeBefore | FactsBefore | Candidate | RetentionPolicyFields
AuditAfter = (
    MergeAfter
    | AutoMergeAfter
    | UndoAfter
    | InvalidateAfter
    | CorrectAfter
    | CandidateAfter
    | RetentionRunAfter
    | RetentionPolicyFields
)


# --- entries ---------------------------------------------------------------------------


class _AuditFields(TypedDict):
    id: RecordID
    actor: str
    action: str
    at: datetime


class AuditEntry(_AuditFields, total=False):
    """An audit entry as read (lists leave out `before` and `after`)."""

    target: RecordID | str | None
    before: AuditBefore | None
    after: AuditAfter | None
    reason: str | None
    undone_by: RecordID | None


def as_audit(row: Any) -> AuditEntry:
    """An audit entry read from the store, checked to have the fields every entry has."""
    _check(row, _AuditFields.__required_keys__, "an audit entry")
    return row


def audit_written(results: list[Any]) -> AuditEntry:
    """The entry a transaction created (its last statement to return one)."""
    return as_audit(
        dict(next(r for r in reversed(results) if isinstance(r, dict) and "action" in r))
    )


def _check(row: object, fields: frozenset[str], what: str) -> None:
    if not isinstance(row, dict):
        raise GraphError(f"{what} read as {type(row).__name__}, not a record")
    missing = fields - row.keys()
    if missing:
        raise GraphError(f"{what} read without {', '.join(sorted(missing))}")


# --- payloads read back ------------------------------------------------------------------
# What an undo reads of the entry it undoes, typed; the fields an older entry may lack
# read as empty.


def merge_of(entry: AuditEntry) -> tuple[MergeBefore, MergeAfter]:
    """The `before` and `after` of a `merge` entry."""
    before, after = _stored(entry, "before"), _stored(entry, "after")
    return (
        MergeBefore(
            entities=before["entities"],
            facts=before["facts"],
            mentions=before.get("mentions") or [],
            memberships=before.get("memberships") or [],
            aliases=before.get("aliases") or [],
            candidates=before.get("candidates") or [],
        ),
        MergeAfter(
            survivor=after["survivor"],
            merged=after["merged"],
            facts_created=after.get("facts_created") or [],
            facts_folded=after.get("facts_folded") or [],
            mentions_created=after.get("mentions_created") or [],
            memberships_created=after.get("memberships_created") or [],
            alias_created=after["alias_created"],
        ),
    )


def auto_merge_of(entry: AuditEntry) -> AutoMergeAfter:
    """The `after` of an `auto_merge` entry, as kgapp/graph/ingest/persist.py wrote it."""
    after = _stored(entry, "after")
    return AutoMergeAfter(
        survivor=after["survivor"],
        merged=after["merged"],
        name=after.get("name") or "",
        survivor_name=after.get("survivor_name") or "",
        rule=after.get("rule") or "",
        score=after.get("score"),
        cosine=after.get("cosine"),
        episode=after["episode"],
        facts=list(after.get("facts") or []),
        alias=after["alias"],
    )


def _stored(entry: AuditEntry, part: Literal["before", "after"]) -> Any:
    """`before` or `after` of `entry` as the store read it: the JSON its action wrote,
    which the readers above turn into their type."""
    stored = entry.get(part)
    if not isinstance(stored, dict):
        raise GraphError(f"audit entry {entry['id']} ({entry['action']}) has no {part}")
    return stored
