"""A query's context under its token budgets: "## Entities" (what their summaries say on
the question, but what the facts say), "## Facts" (each with its validity) and
"## Sources" (passages.py: excerpts of the passages that best match the question),
which take whatever budget the other two leave."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from kgapp.graph.chunking import count_tokens, split_sentences
from kgapp.graph.index.analysis import bm25, terms
from kgapp.graph.records import Fact, record_key
from kgapp.graph.search.model import FoundEntity
from kgapp.graph.search.passages import SOURCES, Chunk, Passages, best_first, day

T = TypeVar("T")

# Words that ask rather than say: not keywords (query.py), not what a text must match.
STOP_WORDS = {
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


_STOP_TERMS = frozenset(t for word in STOP_WORDS for t in terms(word))
# A term that more than this share of the texts weighed together have tells them apart
# no better than chance (typically the name of the entity they are about).
INFORMATIVE_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class Context:
    """The context's text, and what it holds."""

    entities: list[FoundEntity]  # those with a line in the text
    facts: list[Fact]  # those with a line in the text
    text: str
    chunks: list[Chunk]  # the episodes quoted, each with its excerpts


def build_context(
    question: str,
    entities: list[FoundEntity],
    facts: list[Fact],
    passages: Passages | None,
    *,
    entity_tokens: int,
    relation_tokens: int,
    total_tokens: int,
) -> Context:
    """The context of the entities, facts and passages found, best first, each section
    within its budget and the whole within `total_tokens`."""
    facts, fact_lines = _within(facts, relation_tokens, _fact_line)
    # An entity's summary but what the facts section says.
    said = frozenset(statement(f["fact"]) for f in facts)
    # An entity with nothing to say on the question but its name is left out: the facts
    # and passages that name it speak for it.
    summaries = entity_summaries(entities, question, said)
    entities, entity_lines = _within(
        [e for e in entities if summaries[record_key(e["id"])]],
        entity_tokens,
        lambda e: entity_line(e, summaries[record_key(e["id"])]),
    )
    text, chunks = _sections(entity_lines, fact_lines, passages, total_tokens)
    return Context(entities, facts, text, chunks)


def _sections(
    entities: list[str],
    facts: list[str],
    passages: Passages | None,
    budget: int,
) -> tuple[str, list[Chunk]]:
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
    chunks: list[Chunk] = []
    if passages is not None:
        lines, chunks = passages.excerpts(left - count_tokens(SOURCES))
        if lines:
            blocks.append("\n".join([SOURCES, *lines]))
    # Blank lines cost nothing: count_tokens is additive over whitespace.
    return "\n\n".join(blocks), chunks


def _within(items: list[T], budget: int, line: Callable[[T], str]) -> tuple[list[T], list[str]]:
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


def bearing(question: str, texts: list[str]) -> list[int]:
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
    scores = bm25(texts, wanted)
    return [row for row in best_first(scores) if scores[row] > 0]


def _content_terms(question: str) -> list[str]:
    """The question's index terms but for its stop words (which, when, did...); all of
    them when it has no other."""
    found = terms(question)
    return [t for t in found if t not in _STOP_TERMS] or found


def entity_summaries(
    entities: Sequence[FoundEntity], question: str = "", said: frozenset[str] = frozenset()
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
            what = statement(sentence)
            if what and what not in seen:
                said_here.append((what, sentence))
                seen.add(what)
    if question:
        # Each statement once, however many entities' summaries say it.
        pooled = list(dict(pair for pairs in own.values() for pair in pairs).items())
        wanted = {pooled[row][0] for row in bearing(question, [s for _, s in pooled])}
        own = {key: [p for p in pairs if p[0] in wanted] for key, pairs in own.items()}
    return {key: " ".join(sentence for _, sentence in pairs) for key, pairs in own.items()}


def entity_line(entity: FoundEntity, summary: str) -> str:
    """`- name (type): summary`."""
    return f"- {entity.get('name', '')} ({entity.get('entity_type', 'Entity')}): {summary}".rstrip(
        ": "
    )


def statement(text: str) -> str:
    """What a sentence says, as the analyzer reads it (case, punctuation, endings aside)."""
    return " ".join(terms(text))


def _fact_line(fact: Fact) -> str:
    return _validity_line(fact["fact"], fact["valid_at"], fact.get("invalid_at"))


def _validity_line(text: str, valid_at: datetime, invalid_at: datetime | None) -> str:
    since = day(valid_at)
    if invalid_at:
        return f"- {text} [{since} to {day(invalid_at)}]"
    return f"- {text} [since {since}]"


# The tokens of a fact line beyond the fact's own words (the fewest: still valid, and a
# month name short enough to count as one token).
LINE_OVERHEAD = count_tokens(_validity_line("", datetime(2024, 5, 1, tzinfo=UTC), None))
