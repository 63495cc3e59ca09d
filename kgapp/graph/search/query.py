"""LightRAG's dual-level retrieval, answering `POST query` with token-budgeted context.

- local: low-level keywords -> entities -> their one-hop facts;
- global: high-level keywords -> facts -> their endpoint entities;
- hybrid: both, merged round-robin; naive: source passages only; mix: hybrid + passages.
Every fact is read as of `as_of` / `known_at`. Budgets are in (approximate) tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain, zip_longest
from typing import Any, Literal

from kgapp.graph.embeddings import Embedder
from kgapp.graph.ingest.chunking import count_tokens
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts import query as prompt
from kgapp.graph.records import record_key
from kgapp.graph.search.service import (
    Hit,
    Indexes,
    Moment,
    Scope,
    SearchRequest,
    fact_endpoints,
    facts_touching,
    search,
)
from kgapp.graph.store import TenantStore

Mode = Literal["local", "global", "hybrid", "naive", "mix"]
_WORD = re.compile(r"[A-Za-z][\w'-]+")
_STOP = {
    "what",
    "who",
    "where",
    "when",
    "which",
    "does",
    "did",
    "the",
    "and",
    "for",
    "with",
    "about",
    "from",
    "that",
    "this",
    "have",
    "has",
    "how",
    "are",
    "was",
    "were",
    "is",
}


@dataclass(frozen=True)
class QueryRequest:
    question: str
    mode: Mode = "hybrid"
    moment: Moment = field(default_factory=Moment.of)
    top_k: int = 10
    max_entity_tokens: int = 1500
    max_relation_tokens: int = 2500
    max_total_tokens: int = 6000
    answer: bool = False


@dataclass
class QueryResult:
    keywords: dict[str, list[str]]
    entities: list[dict[str, Any]]
    facts: list[dict[str, Any]]
    chunks: list[dict[str, Any]]
    context_text: str
    answer: str | None = None


class AnswerUnavailable(ValueError):
    pass


async def query(
    store: TenantStore, request: QueryRequest, embedder: Embedder, llm: LLMClient | None
) -> QueryResult:
    if request.answer and llm is None:
        raise AnswerUnavailable("answering needs a model: set OPENAI_BASE_URL or OPENAI_API_KEY")
    keywords = await _keywords(request.question, llm)
    entities: list[dict[str, Any]] = []
    facts: list[dict[str, Any]] = []
    indexes = Indexes(store)
    if request.mode in ("local", "hybrid", "mix"):
        entities, facts = await _local(store, indexes, request, keywords["low_level"], embedder)
    if request.mode in ("global", "hybrid", "mix"):
        global_facts, global_entities = await _global(
            store, indexes, request, keywords["high_level"], embedder
        )
        entities = _round_robin(entities, global_entities)
        facts = _round_robin(facts, global_facts)
    chunks = []
    if request.mode in ("naive", "mix"):
        found = await search(
            store,
            SearchRequest(
                query=request.question,
                scopes=("episodes",),
                methods=("bm25",),
                limit=request.top_k,
                moment=request.moment,
            ),
            embedder,
            indexes=indexes,
        )
        chunks = [h.record for h in found.episodes]
    entities = _within(entities, request.max_entity_tokens, _entity_line)
    facts = _within(facts, request.max_relation_tokens, _fact_line)
    text = _context(entities, facts, chunks, request.max_total_tokens)
    result = QueryResult(keywords, entities, facts, chunks, text)
    if request.answer and llm is not None:
        answer = await llm.structured(
            task=prompt.ANSWER_TASK,
            schema=prompt.Answer,
            system=prompt.ANSWER_SYSTEM,
            user=prompt.answer_prompt(request.question, text),
        )
        result.answer = answer.answer
    return result


async def _keywords(question: str, llm: LLMClient | None) -> dict[str, list[str]]:
    if llm is not None:
        found = await llm.structured(
            task=prompt.KEYWORDS_TASK,
            schema=prompt.Keywords,
            system=prompt.KEYWORDS_SYSTEM,
            user=prompt.keywords_prompt(question),
        )
        return {"high_level": found.high_level[:10], "low_level": found.low_level[:10]}
    # Without a model: capitalised words are the specific (low-level) keywords, the
    # other content words the themes.
    words = [w for w in _WORD.findall(question) if w.lower() not in _STOP]
    low = [w for w in words if w[0].isupper()]
    high = [w for w in words if not w[0].isupper()]
    return {"high_level": high or words, "low_level": low or words}


async def _keyword_search(
    store: TenantStore,
    indexes: Indexes,
    request: QueryRequest,
    words: list[str],
    scope: Scope,
    embedder: Embedder,
) -> list[Hit]:
    """Hybrid search of one scope by the keywords (the question when there are none)."""
    spec = SearchRequest(
        query=" ".join(words) or request.question,
        scopes=(scope,),
        limit=request.top_k,
        moment=request.moment,
    )
    return getattr(await search(store, spec, embedder, indexes=indexes), scope)


async def _local(
    store: TenantStore,
    indexes: Indexes,
    request: QueryRequest,
    words: list[str],
    embedder: Embedder,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    hits = await _keyword_search(store, indexes, request, words, "entities", embedder)
    entities = [h.record for h in hits]
    # Read no more facts than the relation budget can hold: a line costs at least its
    # words plus the validity note.
    facts = await facts_touching(
        store,
        [e["id"] for e in entities],
        request.moment,
        limit=1000,
        budget=request.max_relation_tokens,
        per_fact=LINE_OVERHEAD,
        indexes=indexes,
    )
    return entities, facts


async def _global(
    store: TenantStore,
    indexes: Indexes,
    request: QueryRequest,
    words: list[str],
    embedder: Embedder,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    hits = await _keyword_search(store, indexes, request, words, "facts", embedder)
    facts = [h.record for h in hits]
    return facts, fact_endpoints(facts)


def _round_robin(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for item in chain.from_iterable(zip_longest(first, second)):
        if item is not None:
            merged.setdefault(record_key(item["id"]), item)
    return list(merged.values())


def _entity_line(entity: dict[str, Any]) -> str:
    summary = entity.get("summary") or ""
    return f"- {entity.get('name', '')} ({entity.get('entity_type', 'Entity')}): {summary}".rstrip(
        ": "
    )


def _day(moment: datetime) -> str:
    """A date as people write it ("8 May 2023"): the words a question or its answer uses."""
    return f"{moment.day} {moment:%B %Y}"


def _fact_line(fact: dict[str, Any]) -> str:
    since = _day(fact["valid_at"])
    if fact.get("invalid_at"):
        return f"- {fact['fact']} [{since} to {_day(fact['invalid_at'])}]"
    return f"- {fact['fact']} [since {since}]"


def _source_line(episode: dict[str, Any]) -> str:
    """The passage after its reference time (for a conversation, the session's date), so
    that "when" questions can be answered from it."""
    return f"- [{_day(episode['valid_at'])}] [{record_key(episode['id'])}] {episode['content']}"


# The tokens of a fact line beyond the fact's own words (the fewest: still valid, and a
# month name short enough to count as one token).
LINE_OVERHEAD = count_tokens(
    _fact_line({"fact": "", "valid_at": datetime(2024, 5, 1, tzinfo=UTC), "invalid_at": None})
)


def _within(items: list[dict[str, Any]], budget: int, line: Any) -> list[dict[str, Any]]:
    """The leading items whose lines fit in `budget` tokens."""
    return items[: _fitting([line(item) for item in items], budget)]


def _fitting(lines: list[str], budget: int) -> int:
    """How many leading lines fit in `budget` tokens."""
    used = 0
    for count, text in enumerate(lines):
        used += count_tokens(text)
        if used > budget:
            return count
    return len(lines)


def _context(
    entities: list[dict[str, Any]],
    facts: list[dict[str, Any]],
    chunks: list[dict[str, Any]],
    budget: int,
) -> str:
    """The sections in order, cut at the first line that would take the whole past
    `budget` tokens; a section with no line (none found, or none fitting) is left out,
    header included."""
    sections = (
        ("## Entities", [_entity_line(e) for e in entities]),
        ("## Facts", [_fact_line(f) for f in facts]),
        ("## Sources", [_source_line(c) for c in chunks]),
    )
    blocks: list[str] = []
    left = budget
    for header, lines in sections:
        if not lines:
            continue
        block = [header, *lines]
        kept = _fitting(block, left)
        if kept > 1:
            blocks.append("\n".join(block[:kept]))
            left -= sum(map(count_tokens, block[:kept]))
        if kept < len(block):
            break
    # Blank lines cost nothing: count_tokens is additive over whitespace.
    return "\n\n".join(blocks)
