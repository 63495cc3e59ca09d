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
from typing import Any

from kgapp.graph import queries
from kgapp.graph.embeddings import Embedder
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts import query as prompt
from kgapp.graph.records import record_key
from kgapp.graph.search.query import QueryRequest, query
from kgapp.graph.store import TenantStore


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
    document_ids = _distinct(c["document"] for c in result.chunks if c.get("document"))
    entities, documents = await store.query(
        queries.SOURCE_NAMES, {"entities": entity_ids, "documents": document_ids}
    )
    sources = Sources(
        passages=tuple(_passage(chunk, _by_key(documents)) for chunk in result.chunks),
        facts=tuple(_fact(fact) for fact in result.facts),
        entities=_entities(entity_ids, _by_key(entities)),
    )
    return Retrieved(request.question, sources, result.context_text)


def answer_text(llm: LLMClient, retrieved: Retrieved) -> AsyncIterator[str]:
    """The model's answer from the context, citing its passages' labels, as it is
    written (LLMClient.stream_text: its errors are LLMErrors)."""
    return llm.stream_text(
        system=prompt.ANSWER_TEXT_SYSTEM,
        user=prompt.answer_prompt(retrieved.question, retrieved.context),
    )


def _passage(chunk: dict[str, Any], documents: dict[str, dict[str, Any]]) -> PassageSource:
    document = documents.get(record_key(chunk["document"])) if chunk.get("document") else None
    return PassageSource(
        ref=chunk["ref"],
        episode=record_key(chunk["id"]),
        name=str(chunk.get("name") or ""),
        document=(document.get("title") or document.get("file_name")) if document else None,
        said_at=chunk["valid_at"],
        excerpts=tuple(chunk.get("excerpts") or ()),
    )


def _fact(fact: dict[str, Any]) -> FactSource:
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


def _entities(ids: list[Any], found: dict[str, dict[str, Any]]) -> tuple[EntitySource, ...]:
    """The entities in the order given; one deleted since the context was read is left
    out."""
    rows = [found[key] for key in map(record_key, ids) if key in found]
    return tuple(
        EntitySource(record_key(row["id"]), str(row.get("name") or ""), row.get("entity_type"))
        for row in rows
    )


def _distinct(ids: Iterable[Any]) -> list[Any]:
    """Record ids once each, in order of appearance."""
    seen: dict[str, Any] = {}
    for record in ids:
        seen.setdefault(record_key(record), record)
    return list(seen.values())


def _by_key(rows: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    return {record_key(row["id"]): row for row in rows or []}
