"""Ask: a question answered from the graph, its sources first.

The sources are what the question's context (query.py) holds, as records a reader can
follow: the passages it quotes, each under the label the context gives it ([S1], [S2],
...) with its document and date; the facts, with the time they held; the entities they
name. The answer is the model's, in plain text citing those labels, streamed as it is
written (`LLMClient.stream_text`): the reader has the sources before the model starts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypedDict, TypeVar

from surrealdb.data.types.record_id import RecordID
from typing_extensions import ReadOnly

from kgapp.graph import queries
from kgapp.graph.embeddings import Embedder
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts import query as prompt
from kgapp.graph.records import Entity, Fact, as_entity, record_key
from kgapp.graph.search.passages import Chunk
from kgapp.graph.search.query import QueryRequest, query
from kgapp.graph.store import TenantStore


# A row read by its id: an entity, or a document's names.
class DocumentName(TypedDict):
    """What a document is called (queries.SOURCE_NAMES): its title, if any, and file name."""

    id: ReadOnly[RecordID]
    title: ReadOnly[str | None]
    file_name: ReadOnly[str]


Named = TypeVar("Named", Entity, DocumentName)


@dataclass(frozen=True)
class PassageSource:
    """A passage the context quotes: its label, its episode, where it came from (the
    document's title or file name, None for an episode posted on its own) and when it
    was said."""

    ref: str
    episode: str
    name: str
    document: str | None
    said_at: datetime
    excerpts: tuple[str, ...]


@dataclass(frozen=True)
class FactSource:
    """A fact of the context, valid over [valid_at, invalid_at)."""

    id: str
    fact: str
    relation: str
    source: str
    source_name: str
    target: str
    target_name: str
    valid_at: datetime
    invalid_at: datetime | None


@dataclass(frozen=True)
class EntitySource:
    id: str
    name: str
    entity_type: str | None


@dataclass(frozen=True)
class Sources:
    passages: tuple[PassageSource, ...]
    facts: tuple[FactSource, ...]
    entities: tuple[EntitySource, ...]


@dataclass(frozen=True)
class Retrieved:
    """A question, its sources, and the context the model reads them in."""

    question: str
    sources: Sources
    context: str


async def ask_sources(
    store: TenantStore, request: QueryRequest, embedder: Embedder, llm: LLMClient | None
) -> Retrieved:
    """The question's context (its keywords from `llm` when there is one) and its
    sources. The entities are those the context describes, then the ends of its facts."""
    result = await query(store, replace(request, answer=False), embedder, llm)
    ends = [end for fact in result.facts for end in (fact["source"], fact["target"])]
    entity_ids = _distinct([e["id"] for e in result.entities] + ends)
    document_ids = _distinct(d for c in result.chunks if (d := c.get("document")))
    entities, documents = await store.query(
        queries.SOURCE_NAMES, {"entities": entity_ids, "documents": document_ids}
    )
    entity_rows = [as_entity(row) for row in entities or []]
    sources = Sources(
        passages=tuple(_passage(chunk, _by_key(documents)) for chunk in result.chunks),
        facts=tuple(_fact(fact) for fact in result.facts),
        entities=_entities(entity_ids, _by_key(entity_rows)),
    )
    return Retrieved(request.question, sources, result.context_text)


def answer_text(llm: LLMClient, retrieved: Retrieved) -> AsyncIterator[str]:
    """The model's answer from the context, citing its passages' labels, as it is
    written (LLMClient.stream_text: its errors are LLMErrors)."""
    return llm.stream_text(
        system=prompt.ANSWER_TEXT_SYSTEM,
        user=prompt.answer_prompt(retrieved.question, retrieved.context),
    )


def _passage(chunk: Chunk, documents: dict[str, DocumentName]) -> PassageSource:
    document_id = chunk.get("document")
    document = documents.get(record_key(document_id)) if document_id else None
    return PassageSource(
        ref=chunk["ref"],
        episode=record_key(chunk["id"]),
        name=str(chunk.get("name") or ""),
        document=(document.get("title") or document.get("file_name")) if document else None,
        said_at=chunk["valid_at"],
        excerpts=tuple(chunk.get("excerpts") or ()),
    )


def _fact(fact: Fact) -> FactSource:
    return FactSource(
        id=record_key(fact["id"]),
        fact=fact["fact"],
        relation=fact["relation"],
        source=record_key(fact["source"]),
        source_name=str(fact.get("source_name") or ""),
        target=record_key(fact["target"]),
        target_name=str(fact.get("target_name") or ""),
        valid_at=fact["valid_at"],
        invalid_at=fact.get("invalid_at"),
    )


def _entities(ids: list[RecordID], found: dict[str, Entity]) -> tuple[EntitySource, ...]:
    """The entities in the order given; one deleted since the context was read is left
    out."""
    rows = [found[key] for key in map(record_key, ids) if key in found]
    return tuple(
        EntitySource(record_key(row["id"]), str(row.get("name") or ""), row.get("entity_type"))
        for row in rows
    )


def _distinct(ids: Iterable[RecordID]) -> list[RecordID]:
    """Record ids once each, in order of appearance."""
    seen: dict[str, RecordID] = {}
    for record in ids:
        seen.setdefault(record_key(record), record)
    return list(seen.values())


def _by_key(rows: list[Named] | None) -> dict[str, Named]:
    return {record_key(row["id"]): row for row in rows or []}
