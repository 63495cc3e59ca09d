"""LightRAG's dual-level retrieval, answering `POST query` with token-budgeted context.

- local: low-level keywords -> entities -> their one-hop facts, those that bear on the
  question;
- global: high-level keywords -> facts -> their endpoint entities;
- hybrid: both, merged round-robin; naive: source passages only; mix: hybrid + passages.
Every fact is read as of `as_of` / `known_at`. Budgets are in (approximate) tokens.

The context has up to three sections: "## Entities" (what their summaries say on the
question, but what the facts say), "## Facts" (each with its validity) and "## Sources":
excerpts of the passages (a conversation's messages, a text's sentences) that best
match the question by full text, by meaning and by the period it names, each episode's
under its date and a label (its `ref` in `chunks`), a relative date ("yesterday")
resolved; they take whatever budget the other two leave. Here: the request, the
retrieval and the answer; the context is built in context.py, its sources in
passages.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from itertools import chain, zip_longest
from typing import Literal, TypedDict, TypeVar

from kgapp.graph import queries
from kgapp.graph.embeddings import Embedder
from kgapp.graph.index import unit_vectors
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts import query as prompt
from kgapp.graph.records import Episode, Fact, as_episode, record_key
from kgapp.graph.search.context import LINE_OVERHEAD, STOP_WORDS, bearing, build_context
from kgapp.graph.search.hybrid import search
from kgapp.graph.search.model import (
    EntityEnd,
    FoundEntity,
    Method,
    Scope,
    SearchRequest,
    SearchResults,
)
from kgapp.graph.search.passages import Chunk, Passages
from kgapp.graph.search.reads import Indexes, fact_endpoints, facts_touching
from kgapp.graph.store import TenantStore
from kgapp.graph.time import Moment, stated_period

Mode = Literal["local", "global", "hybrid", "naive", "mix"]
_WORD = re.compile(r"[A-Za-z][\w'-]+")
# One-hop facts read: FACT_CANDIDATES times what the relation budget could hold, of which
# those that bear on the question go first (see `context.bearing`).
FACT_CANDIDATES = 4
# Candidate episodes read per passage asked for (`top_k`): the excerpts are the best
# units of all of them.
CANDIDATES_PER_PASSAGE = 3
# What is merged round-robin: facts, or entities.
T = TypeVar("T", bound=Fact | EntityEnd)


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


class Keywords(TypedDict):
    """The question's keywords: themes (high level) and names (low level)."""

    high_level: list[str]
    low_level: list[str]


@dataclass(frozen=True)
class QueryResult:
    keywords: Keywords
    entities: list[FoundEntity]
    facts: list[Fact]
    chunks: list[Chunk]
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
    entities: list[FoundEntity] = []
    facts: list[Fact] = []
    indexes = Indexes(store)
    if request.mode in ("local", "hybrid", "mix"):
        entities, facts = await _local(store, indexes, request, keywords["low_level"], embedder)
    if request.mode in ("global", "hybrid", "mix"):
        global_facts, global_entities = await _global(
            store, indexes, request, keywords["high_level"], embedder
        )
        entities = _round_robin(entities, global_entities)
        facts = _round_robin(facts, global_facts)
    passages = None
    if request.mode in ("naive", "mix"):
        passages = await _passages(store, indexes, request, embedder)
    context = build_context(
        request.question,
        entities,
        facts,
        passages,
        entity_tokens=request.max_entity_tokens,
        relation_tokens=request.max_relation_tokens,
        total_tokens=request.max_total_tokens,
    )
    result = QueryResult(keywords, context.entities, context.facts, context.chunks, context.text)
    if request.answer and llm is not None:
        answer = await llm.structured(
            task=prompt.ANSWER_TASK,
            schema=prompt.Answer,
            system=prompt.ANSWER_SYSTEM,
            user=prompt.answer_prompt(request.question, context.text),
        )
        result = replace(result, answer=answer.answer)
    return result


async def _keywords(question: str, llm: LLMClient | None) -> Keywords:
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
    words = [w for w in _WORD.findall(question) if w.lower() not in STOP_WORDS]
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
) -> SearchResults:
    """Hybrid search of one scope by the keywords (the question when there are none)."""
    spec = SearchRequest(
        query=" ".join(words) or request.question,
        scopes=(scope,),
        limit=request.top_k,
        moment=request.moment,
    )
    return await search(store, spec, embedder, indexes=indexes)


async def _local(
    store: TenantStore,
    indexes: Indexes,
    request: QueryRequest,
    words: list[str],
    embedder: Embedder,
) -> tuple[list[FoundEntity], list[Fact]]:
    found = await _keyword_search(store, indexes, request, words, Scope.ENTITIES, embedder)
    entities = [h.record for h in found.entities]
    # Read no more facts than FACT_CANDIDATES times the relation budget could hold (a
    # line costs at least its words plus the validity note); keep those that bear on the
    # question, best first.
    facts = await facts_touching(
        store,
        [e["id"] for e in entities],
        request.moment,
        limit=1000,
        budget=request.max_relation_tokens * FACT_CANDIDATES,
        per_fact=LINE_OVERHEAD,
        indexes=indexes,
    )
    bear = bearing(request.question, [f["fact"] for f in facts])
    return entities, [facts[i].copy() for i in bear]


async def _global(
    store: TenantStore,
    indexes: Indexes,
    request: QueryRequest,
    words: list[str],
    embedder: Embedder,
) -> tuple[list[Fact], list[EntityEnd]]:
    found = await _keyword_search(store, indexes, request, words, Scope.FACTS, embedder)
    facts = [h.record for h in found.facts]
    return facts, fact_endpoints(facts)


async def _passages(
    store: TenantStore, indexes: Indexes, request: QueryRequest, embedder: Embedder
) -> Passages:
    """The candidate episodes cut into ranked units. Candidates: by full text and by
    meaning, and those of the period the question names ("on 1 May, 2022")."""
    limit = request.top_k * CANDIDATES_PER_PASSAGE
    found = await search(
        store,
        SearchRequest(
            query=request.question,
            scopes=(Scope.EPISODES,),
            methods=(Method.BM25, Method.COSINE),
            limit=limit,
            moment=request.moment,
        ),
        embedder,
        indexes=indexes,
    )
    episodes: dict[str, Episode] = {h.id: h.record for h in found.episodes}
    period = stated_period(request.question)
    if period is not None:
        dated = await store.query_one(
            queries.EPISODES_IN_PERIOD, {"start": period[0], "end": period[1], "limit": limit}
        )
        for row in map(as_episode, dated or []):
            episodes.setdefault(record_key(row["id"]), row)
    vectors = (
        await unit_vectors(store, [e["id"] for e in episodes.values()])
        if episodes and found.vector is not None
        else {}
    )
    return Passages(request.question, list(episodes.values()), vectors, found.vector, period)


def _round_robin(first: list[T], second: list[T]) -> list[T]:
    merged: dict[str, T] = {}
    for item in chain.from_iterable(zip_longest(first, second)):
        if item is not None:
            merged.setdefault(record_key(item["id"]), item)
    return list(merged.values())
