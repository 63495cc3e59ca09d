"""Stage: what of a document's episodes the graph already holds.

A conversation's messages are recognised by content (`message_keys`: speaker, time,
text), whatever file brought them: an export that extends one already uploaded claims
the episodes of the messages it repeats, and only its new messages become episodes. A
text document's new version keeps the passages it shares with its previous version.
Either way the kept episodes are not extracted again (no model call), and the episodes
the previous version held that this one no longer has are withdrawn once the new ones
are in (`removal.claims_withdraw`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Required, TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.ingest.chunk import (
    DocumentContent,
    chunk,
    conversation_episodes,
    conversation_messages,
)
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.records import record_key
from kgapp.graph.resolution.canonical import content_hash
from kgapp.graph.store import TenantStore


class PlanCounts(TypedDict):
    """What a document version's job brought, kept and dropped, as its result shows it."""

    version: int
    episodes_new: int
    episodes_kept: int
    episodes_withdrawn: int
    messages_known: int
    messages_new: int
    summary: str


class _Held(TypedDict, total=False):
    """An episode a document holds (queries.DOCUMENT_EPISODES_HELD), or one that holds a
    message of it (MESSAGE_EPISODES)."""

    id: Required[RecordID]
    created_at: datetime
    content_hash: str
    chunk_index: int | None
    message_keys: list[str] | None
    documents: list[RecordID] | None


@dataclass
class DocumentPlan:
    """A document version's episodes: those to ingest, those the graph holds already,
    and those its previous version held that it no longer has."""

    kind: str
    version: int
    new: list[EpisodeInput] = field(default_factory=list)
    kept: list[RecordID] = field(default_factory=list)
    withdrawn: list[RecordID] = field(default_factory=list)
    messages_known: int = 0
    messages_new: int = 0

    @property
    def episodes(self) -> int:
        return len(self.new) + len(self.kept)

    def summary(self) -> str:
        """What the upload changes, as the job tells it."""
        if self.kind == "conversation":
            if not self.messages_known and not self.withdrawn:
                return _count(self.messages_new, "message")
            said = (
                f"{_count(self.messages_known, 'message')} already known, {self.messages_new} new"
            )
            if self.withdrawn:
                said += f", {_count(len(self.withdrawn), 'episode')} no longer in it"
            return said
        if self.version > 1:
            return (
                f"version {self.version}: {_count(len(self.new), 'passage')} added, "
                f"{len(self.withdrawn)} removed, {len(self.kept)} unchanged"
            )
        return _count(len(self.new), "passage")

    def as_dict(self) -> PlanCounts:
        return {
            "version": self.version,
            "episodes_new": len(self.new),
            "episodes_kept": len(self.kept),
            "episodes_withdrawn": len(self.withdrawn),
            "messages_known": self.messages_known,
            "messages_new": self.messages_new,
            "summary": self.summary(),
        }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


async def document_plan(
    store: TenantStore, document: RecordID, row: DocumentContent
) -> DocumentPlan:
    """The plan of `document` (as `chunk.read_document` gives it), its kept episodes
    claimed already, so that nothing else takes them away meanwhile."""
    rows: list[_Held] = (
        await store.query_one(queries.DOCUMENT_EPISODES_HELD, {"document": document}) or []
    )
    since = row.get("version_at") or row.get("created_at")
    held = [e for e in rows if not _this_version(e, since)]
    if row["kind"] == "conversation":
        plan = await _conversation_plan(store, document, row, held, since)
    else:
        plan = _text_plan(document, row, held)
    if plan.kept:
        await store.query(queries.CLAIMS_ADD, {"document": document, "episodes": plan.kept})
    return plan


def _text_plan(document: RecordID, row: DocumentContent, held: list[_Held]) -> DocumentPlan:
    """Passages equal to one the previous version held are kept (each once)."""
    plan = DocumentPlan(kind="text", version=row.get("version") or 1)
    previous: dict[str, list[RecordID]] = defaultdict(list)
    for stored in held:
        previous[stored["content_hash"]].append(stored["id"])
    for episode in chunk(document, row):
        same = previous.get(content_hash(episode.content))
        if same:
            plan.kept.append(same.pop(0))
        else:
            plan.new.append(episode)
    plan.withdrawn = [e for rest in previous.values() for e in rest]
    return plan


def _this_version(episode: _Held, since: datetime | None, document: RecordID | None = None) -> bool:
    """Whether an earlier attempt of this version's job wrote `episode` (held by
    `document`, when given): it is planned again as new, so that a retried job cuts the
    same episodes and skips those it wrote (prepare.py)."""
    if since is None or episode.get("created_at") is None or episode["created_at"] < since:
        return False
    return document is None or document in (episode.get("documents") or [])


async def _conversation_plan(
    store: TenantStore,
    document: RecordID,
    row: DocumentContent,
    held: list[_Held],
    since: datetime | None,
) -> DocumentPlan:
    """Episodes all of whose messages this export has are kept, wherever they came from;
    the messages left over are grouped into new episodes."""
    plan = DocumentPlan(kind="conversation", version=row.get("version") or 1)
    keyed = conversation_messages(row)
    keys = {key for _, key in keyed}
    known: list[_Held] = (
        await store.query_one(
            queries.MESSAGE_EPISODES, {"ids": [RecordID("message_key", k) for k in keys]}
        )
        or []
    )
    covered: set[str] = set()
    for episode in known:
        if _this_version(episode, since, document):
            continue
        its = set(episode.get("message_keys") or [])
        if its and its <= keys:
            plan.kept.append(episode["id"])
            covered |= its
    fresh = [(message, key) for message, key in keyed if key not in covered]
    plan.messages_known = len(keyed) - len(fresh)
    plan.messages_new = len(fresh)
    start = 1 + max((e.get("chunk_index") or 0 for e in held), default=-1)
    plan.new = conversation_episodes(document, row, fresh, start=start)
    kept = {record_key(e) for e in plan.kept}
    plan.withdrawn = [e["id"] for e in held if record_key(e["id"]) not in kept]
    return plan
