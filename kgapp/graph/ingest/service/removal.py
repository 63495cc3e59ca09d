"""Deleting what was ingested: episodes, or a document's claim on its episodes, and
every fact, entity, alias or summary sentence that only they supported.

What "supported" means (README, "Documents and versions"):
- an episode is supported by the documents whose current version holds it, or by the
  API call that posted it (it has no document then, and goes only when deleted itself);
- a fact by its episodes: it goes when its last episode goes, and a fact it ended is
  current again;
- an entity by its mentions and its facts: it goes when neither is left;
- what an entity says of itself (its name, type, summary sentences, first and last seen,
  the aliases and automatic merges its spellings caused) by the mentions that said it:
  its type is the one most of the remaining mentions give (kgapp/graph/ontology.py).
Curators' merges, their aliases and their edits are not episodes' to take back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Required, TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.chunking import split_sentences
from kgapp.graph.ontology import entity_types_recount, ontology_load
from kgapp.graph.records import StoredFact, found, record_key
from kgapp.graph.resolution import names
from kgapp.graph.resolution.canonical import canonical_name
from kgapp.graph.resolution.facts import revision_row
from kgapp.graph.store import TenantStore

# Aliases a curator's merge made (curation/merge.py) are keyed so; ingestion's are not.
CURATOR_ALIAS_PREFIX = "merge_"


@dataclass
class Removal:
    """What a removal took away, and what it left because something else holds it."""

    episodes_deleted: int = 0
    episodes_kept: int = 0  # held by another document too
    facts_deleted: int = 0
    facts_restored: int = 0
    entities_deleted: int = 0
    entities_changed: int = 0  # kept, with a name, summary or alias withdrawn

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class WithdrawnMention(TypedDict, total=False):
    """What a gone episode said of an entity that stays (queries.EPISODES_REMOVE)."""

    entity: Required[RecordID]
    name: str | None
    names: list[str] | None
    summary: str | None


class _Removed(TypedDict):
    """What queries.EPISODES_REMOVE did."""

    endpoints: list[RecordID]
    facts_deleted: int
    facts_restored: int
    restored: list[RecordID] | None
    entities_deleted: int
    episodes_deleted: int
    withdrawn: list[WithdrawnMention] | None


class _Rival(TypedDict):
    id: RecordID
    valid_at: datetime


class _Rivalled(StoredFact, total=False):
    """A fact made current again, with the current facts of its subject and relation
    but another object (queries.FACTS_WITH_RIVALS)."""

    rivals: list[_Rival] | None


class _PreviewCounts(TypedDict, total=False):
    """What removing episodes would take away (queries.EPISODES_REMOVAL_PREVIEW)."""

    episodes_deleted: int
    facts_deleted: int
    facts_kept: int
    facts_restored: int
    entities_deleted: int
    entities_kept: int
    entity_names_deleted: list[str] | None
    entity_names_kept: list[str] | None


class _MentionRow(TypedDict, total=False):
    id: Required[RecordID]
    created_at: Required[datetime]
    name: str | None
    names: list[str] | None
    summary: str | None
    seen_at: datetime | None


class _AliasRow(TypedDict):
    id: RecordID
    name: str


class _Follower(TypedDict):
    id: RecordID
    canonical_name: str


class _Supported(TypedDict, total=False):
    """An entity that lost mentions, with what stays of its support
    (queries.ENTITIES_SUPPORT): its mentions, aliases and the records merged into it."""

    id: Required[RecordID]
    name: Required[str]
    entity_type: Required[str]
    summary: str | None
    first_seen_at: datetime | None
    last_seen_at: datetime | None
    mentions: list[_MentionRow] | None
    aliases: list[_AliasRow] | None
    followers: list[_Follower] | None


class _Changes(TypedDict, total=False):
    """What an entity says of itself once gone mentions are withdrawn."""

    name: str
    match_key: str | None
    summary: str
    first_seen_at: datetime
    last_seen_at: datetime


@dataclass(frozen=True)
class _Mention:
    name: str | None
    summary: str | None
    seen_at: datetime | None
    order: tuple[datetime, str]
    names: tuple[str, ...] = ()  # every spelling its episode gave (name first)


@dataclass
class _Support:
    """One entity as stored, with what its remaining mentions say."""

    row: _Supported
    mentions: list[_Mention] = field(default_factory=list)


def _returned(results: list[Any]) -> Any:
    """What a query's RETURN gave: the last object of its results."""
    return next(dict(r) for r in reversed(results) if isinstance(r, dict))


async def episodes_remove(store: TenantStore, episodes: Sequence[RecordID]) -> Removal:
    if not episodes:
        return Removal()
    results = await store.transaction(queries.EPISODES_REMOVE, {"episodes": list(episodes)})
    removed: _Removed = _returned(results)
    await _end_restored(store, removed.get("restored") or [])
    await store.query(queries.ENTITY_DEGREE_RECOUNT, {"ids": removed["endpoints"]})
    changed = await entities_recompute(store, removed.get("withdrawn") or [])
    return Removal(
        episodes_deleted=removed["episodes_deleted"],
        facts_deleted=removed["facts_deleted"],
        facts_restored=removed["facts_restored"],
        entities_deleted=removed["entities_deleted"],
        entities_changed=changed,
    )


async def _end_restored(store: TenantStore, restored: list[RecordID]) -> int:
    """A fact made current again, of a single-valued relation, ends where a later fact
    about its subject begins, as if the deleted one that had ended it never was (as
    resolve_facts would have ended it); returns how many were ended."""
    if not restored:
        return 0
    ontology = await ontology_load(store)
    rows: list[_Rivalled] = (
        await store.query_one(queries.FACTS_WITH_RIVALS, {"ids": restored}) or []
    )
    now = datetime.now(UTC)
    batch = queries.Batch()
    ended = 0
    for row in rows:
        later = [r for r in row["rivals"] or [] if r["valid_at"] > row["valid_at"]]
        if not later or not ontology.is_single_valued(row["relation"]):
            continue
        first = min(later, key=lambda r: r["valid_at"])
        ends = row.get("invalid_at")
        if ends is not None and ends <= first["valid_at"]:
            continue
        revision = revision_row(row, ends_at=first["valid_at"], by=first["id"], now=now)
        batch.add(queries.FACT_RETIRE, id=row["id"], now=now, by=first["id"])
        batch.add(queries.FACT_CREATE, row=revision)
        batch.add(queries.FACT_RELINK, id=first["id"], supersedes=revision["id"])
        ended += 1
    if ended:
        await store.transaction(batch.sql, batch.params)
    return ended


async def episode_delete(store: TenantStore, episode: RecordID) -> Removal:
    await _existing(store, "episode", episode)
    return await episodes_remove(store, [episode])


async def claims_withdraw(
    store: TenantStore, document: RecordID, episodes: Sequence[RecordID]
) -> Removal:
    """`document` no longer holds `episodes`: those no other document holds are removed
    with what only they supported; the others stay, shown under another document."""
    if not episodes:
        return Removal()
    unclaimed = await store.query_one(
        queries.CLAIMS_WITHDRAW, {"document": document, "episodes": list(episodes)}
    )
    removal = await episodes_remove(store, list(unclaimed or []))
    removal.episodes_kept = len(episodes) - removal.episodes_deleted
    return removal


async def document_delete(store: TenantStore, document: RecordID) -> Removal:
    """Remove the document, and every episode, fact or entity only it supported."""
    await _existing(store, "document", document)
    claims = await store.query_one(queries.DOCUMENT_CLAIMS, {"document": document}) or []
    removal = await claims_withdraw(store, document, [row["id"] for row in claims])
    await store.transaction(queries.DOCUMENT_REMOVE, {"document": document})
    return removal


@dataclass(frozen=True)
class RemovalPreview:
    """What deleting a document would take away and what would stay because another
    document, an API call or a curator still holds it."""

    episodes_deleted: int
    episodes_kept: int
    facts_deleted: int
    facts_kept: int
    facts_restored: int
    entities_deleted: int
    entities_kept: int
    entity_names_deleted: list[str]
    entity_names_kept: list[str]

    def as_dict(self) -> dict[str, int | list[str]]:
        return dict(self.__dict__)


async def document_removal_preview(store: TenantStore, document: RecordID) -> RemovalPreview:
    """What `document_delete(document)` would do, changing nothing."""
    await _existing(store, "document", document)
    claims = await store.query_one(queries.DOCUMENT_CLAIMS, {"document": document}) or []
    gone = [row["id"] for row in claims if len(row["documents"]) == 1]
    plan: _PreviewCounts = {}
    if gone:
        results = await store.query(queries.EPISODES_REMOVAL_PREVIEW, {"episodes": gone})
        plan = _returned(results)
    return RemovalPreview(
        episodes_deleted=len(gone),
        episodes_kept=len(claims) - len(gone),
        facts_deleted=plan.get("facts_deleted", 0),
        facts_kept=plan.get("facts_kept", 0),
        facts_restored=plan.get("facts_restored", 0),
        entities_deleted=plan.get("entities_deleted", 0),
        entities_kept=plan.get("entities_kept", 0),
        entity_names_deleted=sorted(plan.get("entity_names_deleted") or []),
        entity_names_kept=sorted(plan.get("entity_names_kept") or []),
    )


async def entities_recompute(store: TenantStore, withdrawn: list[WithdrawnMention]) -> int:
    """Take back from the entities that stay what only the gone mentions said of them
    (`withdrawn`: entity, name, summary of each); returns how many changed."""
    by_entity: dict[str, list[WithdrawnMention]] = {}
    for mention in withdrawn:
        by_entity.setdefault(record_key(mention["entity"]), []).append(mention)
    if not by_entity:
        return 0
    ids = [m[0]["entity"] for m in by_entity.values()]
    supported, auto_merged = await store.query(queries.ENTITIES_SUPPORT, {"ids": ids})
    rows: list[_Supported] = supported or []
    auto = {record_key(r) for r in auto_merged or [] if r is not None}
    batch = queries.Batch()
    changed = set()
    for row in rows:
        support = _support(row)
        gone = by_entity[record_key(row["id"])]
        if _withdraw(batch, support, gone, auto):
            changed.add(record_key(row["id"]))
    if batch.sql:
        await store.transaction(batch.sql, batch.params)
    changed |= await entity_types_recount(store, [row["id"] for row in rows])
    return len(changed)


def _support(row: _Supported) -> _Support:
    mentions = [
        _Mention(
            m.get("name"),
            m.get("summary"),
            m.get("seen_at"),
            (m["created_at"], str(m["id"])),
            tuple(m.get("names") or [m.get("name") or ""]),
        )
        for m in row.get("mentions") or []
    ]
    return _Support(row=row, mentions=sorted(mentions, key=lambda m: m.order))


def _withdraw(
    batch: queries.Batch, support: _Support, gone: list[WithdrawnMention], auto: set[str]
) -> bool:
    """Statements that take back what only `gone` said of one entity; True if any."""
    row, remaining = support.row, support.mentions
    if any(m.name is None for m in remaining) or any(g.get("name") is None for g in gone):
        return False  # mentions from before 0016 say nothing to recompute from
    spelled = {canonical_name(n) for m in remaining for n in m.names}
    withdrawn = {
        canonical_name(n) for g in gone for n in g.get("names") or [g.get("name") or ""]
    } - spelled
    changes: _Changes = {}
    name = row["name"]
    if remaining and canonical_name(name) not in spelled:
        name = remaining[0].name or name
        # The match key follows the type as well, once the type is recounted.
        changes["name"] = name
        changes["match_key"] = names.match_key(name, row["entity_type"]) or None
    summary = _summary_left(row.get("summary") or "", gone, remaining)
    if summary != (row.get("summary") or ""):
        changes["summary"] = summary
    seen = [m.seen_at for m in remaining if m.seen_at is not None]
    if remaining and len(seen) == len(remaining):
        first, last = min(seen), max(seen)
        if (first, last) != (row.get("first_seen_at"), row.get("last_seen_at")):
            changes["first_seen_at"], changes["last_seen_at"] = first, last
    if changes:
        batch.add(queries.ENTITY_SUPPORT_SET, id=row["id"], changes=changes)
    aliases = [
        a["id"]
        for a in row.get("aliases") or []
        if a["name"] in withdrawn and not str(a["id"].id).startswith(CURATOR_ALIAS_PREFIX)
    ]
    followers = [
        f["id"]
        for f in row.get("followers") or []
        if f["canonical_name"] in withdrawn and record_key(f["id"]) in auto
    ]
    if aliases or followers:
        batch.add(queries.SUPPORT_RECORDS_DELETE, aliases=aliases, entities=followers)
    return bool(changes or aliases or followers)


def _summary_left(summary: str, gone: list[WithdrawnMention], remaining: list[_Mention]) -> str:
    """The summary without the sentences that only gone mentions gave: sentences a
    remaining mention or a curator gave stay, in their order."""
    said_gone = {s for g in gone for s in split_sentences(g.get("summary") or "")}
    said_left = {s for m in remaining for s in split_sentences(m.summary or "")}
    only_gone = said_gone - said_left
    if not only_gone:
        return summary
    return " ".join(s for s in split_sentences(summary) if s not in only_gone)


async def _existing(store: TenantStore, what: str, record: RecordID) -> None:
    """NotFound ("no episode episode:...") unless `record` exists."""
    exists = await store.query_one(queries.RECORD_EXISTS, {"id": record})
    found(exists or None, what, record)
