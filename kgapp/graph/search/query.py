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
resolved; they take whatever budget the other two leave.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain, zip_longest
from typing import Any, Literal

import numpy as np

from kgapp.graph import queries
from kgapp.graph.chunking import count_tokens, passage_units, split_sentences
from kgapp.graph.embeddings import Embedder
from kgapp.graph.index import Postings, unit_vectors
from kgapp.graph.index.analyzer import terms
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts import query as prompt
from kgapp.graph.records import record_key
from kgapp.graph.search.service import (
    Hit,
    Indexes,
    Scope,
    SearchRequest,
    fact_endpoints,
    facts_touching,
    search,
)
from kgapp.graph.store import TenantStore
from kgapp.graph.time import Moment, NamedDate, resolve_named, stated_period

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
    "why",
    "whom",
    "whose",
    "do",
    "an",
    "of",
    "to",
    "in",
    "on",
    "at",
    "by",
    "or",
    "be",
    "it",
    "he",
    "she",
    "his",
    "her",
    "they",
    "their",
    "you",
    "your",
    "my",
    "me",
}


_STOP_TERMS = frozenset(t for word in _STOP for t in terms(word))
# One-hop facts read: FACT_CANDIDATES times what the relation budget could hold, of which
# those that bear on the question go first (see `_bearing`).
FACT_CANDIDATES = 4
# A term that more than this share of the texts weighed together have tells them apart
# no better than chance (typically the name of the entity they are about).
INFORMATIVE_SHARE = 0.25


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
    passages = None
    if request.mode in ("naive", "mix"):
        passages = await _passages(store, indexes, request, embedder)
    facts, fact_lines = _within(facts, request.max_relation_tokens, _fact_line)
    # An entity's summary but what the facts section says.
    said = frozenset(_statement(f["fact"]) for f in facts)
    # An entity with nothing to say on the question but its name is left out: the facts
    # and passages that name it speak for it.
    summaries = _entity_summaries(entities, request.question, said)
    entities, entity_lines = _within(
        [e for e in entities if summaries[record_key(e["id"])]],
        request.max_entity_tokens,
        lambda e: _entity_line(e, summaries[record_key(e["id"])]),
    )
    text, chunks = _context(entity_lines, fact_lines, passages, request.max_total_tokens)
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
    return entities, [facts[i] for i in _bearing(request.question, [f["fact"] for f in facts])]


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
            scopes=("episodes",),
            methods=("bm25", "cosine"),
            limit=limit,
            moment=request.moment,
        ),
        embedder,
        indexes=indexes,
    )
    episodes = {h.id: h.record for h in found.episodes}
    period = stated_period(request.question)
    if period is not None:
        dated = await store.query_one(
            queries.EPISODES_IN_PERIOD, {"start": period[0], "end": period[1], "limit": limit}
        )
        for row in dated or []:
            episodes.setdefault(record_key(row["id"]), row)
    vectors = (
        await unit_vectors(store, [e["id"] for e in episodes.values()])
        if episodes and found.vector is not None
        else {}
    )
    return Passages(request.question, list(episodes.values()), vectors, found.vector, period)


def _bearing(question: str, texts: list[str]) -> list[int]:
    """The indices of the texts that bear on the question, best first (the given order
    among equals): BM25 for the question's terms but its stop words, weighed among these
    texts alone, leaving out a term that more than INFORMATIVE_SHARE of them (and more
    than one) have: the name of the entity they are about, say. Every index, in order,
    when the question has no other term: it asks about the entity as a whole ("Who is
    Jon?")."""
    share = Counter(term for text in texts for term in set(terms(text)))
    common = max(1.0, INFORMATIVE_SHARE * len(texts))
    wanted = [t for t in _content_terms(question) if share[t] <= common]
    if not wanted:
        return list(range(len(texts)))
    postings = Postings()
    for row, text in enumerate(texts):
        postings.add(row, text)
    scores = postings.scores(wanted, len(texts))
    return [row for row in _best_first(scores) if scores[row] > 0]


def _round_robin(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for item in chain.from_iterable(zip_longest(first, second)):
        if item is not None:
            merged.setdefault(record_key(item["id"]), item)
    return list(merged.values())


def _entity_summaries(
    entities: list[dict[str, Any]], question: str = "", said: frozenset[str] = frozenset()
) -> dict[str, str]:
    """By entity key, what its summary says: each sentence once and none that the facts
    section says (`said`); with a question, only the sentences that bear on it, weighed
    among the sentences of all the entities (a name most of them share, the speaker's
    say, tells nothing), all of them when it asks about the entities as a whole."""
    # (statement, sentence) pairs: what a sentence says, as the analyzer reads it.
    own: dict[str, list[tuple[str, str]]] = {}
    for entity in entities:
        said_here = own.setdefault(record_key(entity["id"]), [])
        seen = set(said)
        for sentence in split_sentences(str(entity.get("summary") or "")):
            statement = _statement(sentence)
            if statement and statement not in seen:
                said_here.append((statement, sentence))
                seen.add(statement)
    if question:
        # Each statement once, however many entities' summaries say it.
        pooled = list(dict(pair for pairs in own.values() for pair in pairs).items())
        bearing = {pooled[row][0] for row in _bearing(question, [s for _, s in pooled])}
        own = {key: [p for p in pairs if p[0] in bearing] for key, pairs in own.items()}
    return {key: " ".join(sentence for _, sentence in pairs) for key, pairs in own.items()}


def _entity_line(entity: dict[str, Any], summary: str) -> str:
    """`- name (type): summary`."""
    return f"- {entity.get('name', '')} ({entity.get('entity_type', 'Entity')}): {summary}".rstrip(
        ": "
    )


def _content_terms(question: str) -> list[str]:
    """The question's index terms but for its stop words (which, when, did...); all of
    them when it has no other."""
    found = terms(question)
    return [t for t in found if t not in _STOP_TERMS] or found


def _statement(text: str) -> str:
    """What a sentence says, as the analyzer reads it (case, punctuation, endings aside)."""
    return " ".join(terms(text))


def _day(moment: datetime) -> str:
    """A date as people write it ("8 May 2023"): the words a question or its answer uses."""
    return f"{moment.day} {moment:%B %Y}"


def _fact_line(fact: dict[str, Any]) -> str:
    since = _day(fact["valid_at"])
    if fact.get("invalid_at"):
        return f"- {fact['fact']} [{since} to {_day(fact['invalid_at'])}]"
    return f"- {fact['fact']} [since {since}]"


# The tokens of a fact line beyond the fact's own words (the fewest: still valid, and a
# month name short enough to count as one token).
LINE_OVERHEAD = count_tokens(
    _fact_line({"fact": "", "valid_at": datetime(2024, 5, 1, tzinfo=UTC), "invalid_at": None})
)


def _within(
    items: list[dict[str, Any]], budget: int, line: Callable[[dict[str, Any]], str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The leading items whose lines fit in `budget` tokens, and their lines."""
    lines = [line(item) for item in items]
    kept = _fitting(lines, budget)
    return items[:kept], lines[:kept]


def _fitting(lines: list[str], budget: int) -> int:
    """How many leading lines fit in `budget` tokens."""
    used = 0
    for count, text in enumerate(lines):
        used += count_tokens(text)
        if used > budget:
            return count
    return len(lines)


def _context(
    entities: list[str],
    facts: list[str],
    passages: Passages | None,
    budget: int,
) -> tuple[str, list[dict[str, Any]]]:
    """The sections in order, cut at the first line that would take the whole past
    `budget` tokens; a section with no line (none found, or none fitting) is left out,
    header included. Sources come last and take what the others left: the excerpts that
    fit it. Also the episodes quoted, each with its excerpts."""
    sections = (
        ("## Entities", entities),
        ("## Facts", facts),
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
            return "\n\n".join(blocks), []
    chunks: list[dict[str, Any]] = []
    if passages is not None:
        lines, chunks = passages.excerpts(left - count_tokens(SOURCES))
        if lines:
            blocks.append("\n".join([SOURCES, *lines]))
    # Blank lines cost nothing: count_tokens is additive over whitespace.
    return "\n\n".join(blocks), chunks


# --- Sources: the passages' best units ---------------------------------------------------

SOURCES = "## Sources"
# Candidate episodes read per passage asked for (`top_k`): the excerpts are the best
# units of all of them.
CANDIDATES_PER_PASSAGE = 3
# Reciprocal rank fusion of the units' two rankings (BM25, embedding): the usual
# constant, which keeps a unit that one method ranks far down from counting much.
PASSAGE_RRF_K = 60
# Below this cosine with the question (all-MiniLM-L6-v2), a unit that shares no term
# with it is not about it.
MIN_COSINE = 0.2
# The share of a unit's score that each of its neighbours gets: the answer to a question
# asked, or the sentence that goes on, is often worded otherwise.
NEIGHBOUR_SHARE = 0.5
GAP = "  …"  # between excerpts of one episode that are not next to each other
MIN_UNIT_TOKENS = 8  # below this much budget left, no unit would fit


@dataclass(frozen=True)
class _Unit:
    episode: int  # index of the episode among the candidates
    position: int  # order within the episode, among the units kept
    text: str
    index: int  # among the episode's passage_units (its vectors' order)


class Passages:
    """Candidate episodes cut into units (chunking.passage_units: a conversation's
    messages, a text's sentences), ranked for the question by two methods fused by RRF:
    BM25, the units of all the candidates one collection (the product's analysis, see
    `index.Postings`), each unit also getting a share of its neighbours' scores; and the
    cosine of the unit's embedding (schema/0011) with the question's, where the episode
    has its units embedded."""

    def __init__(
        self,
        question: str,
        episodes: list[dict[str, Any]],
        vectors: dict[str, np.ndarray] | None = None,
        question_vector: list[float] | None = None,
        period: tuple[datetime, datetime] | None = None,
    ) -> None:
        self.episodes = episodes
        self.units: list[_Unit] = []
        seen: set[str] = set()
        self.counts: list[int] = []  # each episode's passage units
        for number, episode in enumerate(episodes):
            position = 0
            own = passage_units(str(episode.get("source") or ""), str(episode["content"] or ""))
            self.counts.append(len(own))
            for index, text in enumerate(own):
                folded = " ".join(text.split()).casefold()
                if folded in seen:  # the overlap of consecutive chunks of a document
                    continue
                seen.add(folded)
                self.units.append(_Unit(number, position, text, index))
                position += 1
        postings = Postings()
        for row, unit in enumerate(self.units):
            # A unit is said on its episode's day: "what did Joanna watch on 1 May 2022?"
            postings.add(row, f"{unit.text} {_day(episodes[unit.episode]['valid_at'])}")
        lexical = self._with_neighbours(postings.scores(terms(question), len(self.units)))
        rankings = [[row for row in _best_first(lexical) if lexical[row] > 0]]
        if question_vector is not None and vectors:
            meaning = self._cosines(vectors, question_vector)
            rankings.append([row for row in _best_first(meaning) if meaning[row] >= MIN_COSINE])
        fused = _fused(rankings, len(self.units))
        if period is not None:
            # A third ranking: the units of the period named, by the other two.
            rankings.append([row for row in _best_first(fused) if self._within(row, period)])
            fused = _fused(rankings, len(self.units))
        self.ranked = [self.units[row] for row in _best_first(fused) if fused[row] > 0]

    def _within(self, row: int, period: tuple[datetime, datetime]) -> bool:
        """Whether the unit was said in the period, or names a day in it ("yesterday")."""
        unit = self.units[row]
        said = self.episodes[unit.episode]["valid_at"]
        named = _named_day(unit.text, said)
        if period[0] <= said < period[1]:
            return True
        # What it names overlaps the period ("last month" said on 2 June, of May).
        return named is not None and named.start < period[1] and period[0] < named.end

    def _with_neighbours(self, own: np.ndarray) -> np.ndarray:
        """Each unit's score plus NEIGHBOUR_SHARE of each adjacent unit's own."""
        scores = own.copy()
        for row in range(1, len(self.units)):
            if self.units[row].episode == self.units[row - 1].episode:
                scores[row] += NEIGHBOUR_SHARE * own[row - 1]
                scores[row - 1] += NEIGHBOUR_SHARE * own[row]
        return scores

    def _cosines(self, vectors: dict[str, np.ndarray], question: list[float]) -> np.ndarray:
        """Cosine of each unit with the question; -1 where its episode has no vectors
        (not indexed yet, indexed from other units, or by another embedding model)."""
        wanted = np.asarray(question, dtype=np.float32)
        by_episode: dict[int, np.ndarray] = {}
        for number, episode in enumerate(self.episodes):
            own = vectors.get(record_key(episode["id"]))
            if own is not None and own.shape == (self.counts[number], len(wanted)):
                by_episode[number] = own @ wanted
        found = np.full(len(self.units), -1.0)
        for row, unit in enumerate(self.units):
            if unit.episode in by_episode:
                found[row] = by_episode[unit.episode][unit.index]
        return found

    def excerpts(self, budget: int) -> tuple[list[str], list[dict[str, Any]]]:
        """The lines of the best units that fit in `budget` tokens, grouped by episode
        (the episode of the best unit first, units in their own order, a gap marked
        between units that are not adjacent), and the episodes quoted, each with its
        `excerpts`."""
        chosen: dict[int, list[_Unit]] = {}
        used = 0
        gap = count_tokens(GAP)
        for unit in self.ranked:
            if budget - used < MIN_UNIT_TOKENS:
                break
            group = chosen.get(unit.episode)
            cost = count_tokens(self._shown(unit))
            if group is None:
                cost += count_tokens(self._header(unit.episode, len(chosen) + 1))
            else:
                # Among the others: a gap more on each side where it is not adjacent to
                # its neighbour, one less where it falls in a gap.
                before = max((u.position for u in group if u.position < unit.position), default=-1)
                after = min((u.position for u in group if u.position > unit.position), default=-1)
                gaps = (before >= 0 and before != unit.position - 1) + (
                    after >= 0 and after != unit.position + 1
                )
                cost += gap * (gaps - (before >= 0 and after >= 0))
            if used + cost > budget:
                continue
            chosen.setdefault(unit.episode, []).append(unit)
            used += cost
        lines: list[str] = []
        chunks: list[dict[str, Any]] = []
        for label, (number, units) in enumerate(chosen.items(), start=1):
            units.sort(key=lambda u: u.position)
            lines.extend(self._lines(number, label, units))
            chunks.append(
                {**self.episodes[number], "ref": _ref(label), "excerpts": [u.text for u in units]}
            )
        return lines, chunks

    def _header(self, number: int, label: int) -> str:
        """`- [date] [S1]`: the episode's day, and the `ref` of its entry in `chunks`
        (a short label instead of the episode's 35-character key)."""
        return f"- [{_day(self.episodes[number]['valid_at'])}] [{_ref(label)}]"

    def _shown(self, unit: _Unit) -> str:
        """The unit, with the day it speaks of when it names one in other words than its
        episode's date ("yesterday", "last Friday")."""
        return unit.text + _date_note(unit.text, self.episodes[unit.episode]["valid_at"])

    def _lines(self, number: int, label: int, units: list[_Unit]) -> list[str]:
        """`- [date] [S1] first unit`, the other units indented, `…` over gaps."""
        lines = [self._header(number, label)]
        for previous, unit in zip([None, *units], units, strict=False):
            if previous is not None and unit.position != previous.position + 1:
                lines.append(GAP)
            lines.extend(f"  {line}" for line in self._shown(unit).split("\n"))
        lines[:2] = [f"{lines[0]} {lines[1].lstrip()}"]
        return lines


def _ref(label: int) -> str:
    return f"S{label}"


def _fused(rankings: list[list[int]], size: int) -> np.ndarray:
    """Reciprocal rank fusion of best-first lists of rows."""
    fused = np.zeros(size)
    for ranking in rankings:
        for rank, row in enumerate(ranking):
            fused[row] += 1.0 / (PASSAGE_RRF_K + rank)
    return fused


def _best_first(scores: np.ndarray) -> list[int]:
    """Rows by score, best first, the earlier first among equals."""
    return sorted(range(len(scores)), key=lambda r: (-scores[r], r))


@functools.lru_cache(maxsize=50_000)
def _named_day(text: str, reference: datetime) -> NamedDate | None:
    """The date `text` names (offline.resolve_named), resolved against its episode's date."""
    return resolve_named(text, reference)


@functools.lru_cache(maxsize=50_000)
def _date_note(text: str, reference: datetime) -> str:
    """` [refers to 7 May 2023]` for a text that names a date (resolved against
    `reference`, its episode's date) other than `reference`'s own day and in other
    words: a day, or a month or year when that is what it names ("last month")."""
    named = _named_day(text, reference)
    if named is None or (
        named.unit == "day" and named.start.date() == reference.astimezone(UTC).date()
    ):
        return ""
    if named.unit == "year":
        when = str(named.start.year)
    elif named.unit == "month":
        when = f"{named.start:%B %Y}"
    else:
        when = _day(named.start)
    if set(terms(when)) <= set(terms(text)):  # "in March 2024" says it already
        return ""
    return f" [refers to {when}]"
