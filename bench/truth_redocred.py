"""Re-DocRED for bench/truth.py: the offline extractor run on each paragraph of the
Re-DocRED dev split, scored against its human annotation. bench/truth.py's docstring
defines the figures; this module computes them. A helper module, not a benchmark:
`make bench` skips it (bench/truth.py runs it)."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.truth_gold import Counts, aligned

# Wikipedia paragraphs hold no dates of their own to resolve against; any fixed time
# will do, and a fixed one keeps runs comparable.
REFERENCE_TIME = datetime(2020, 1, 1, tzinfo=UTC)
DEV_ITEMS = 250  # items 0-249 are the development half, 250-499 the held-out one
NAMED_TYPES = frozenset({"PER", "ORG", "LOC", "MISC"})
UNNAMED_TYPES = frozenset({"TIME", "NUM"})  # the product keeps dates as fact times

# --- The text back from its tokens ---------------------------------------------------

_NO_SPACE_BEFORE = frozenset(
    {
        ",",
        ".",
        ";",
        ":",
        "!",
        "?",
        ")",
        "]",
        "}",
        "%",
        "...",
        "”",
        "’",
        "-",
        "–",
        "'s",
        "’s",
        "n't",
        "'m",
        "'re",
        "'ve",
        "'ll",
        "'d",
    }
)
_NO_SPACE_AFTER = frozenset({"(", "[", "{", "$", "#", "“", "‘", "-", "–"})


def detokenise(tokens: Sequence[str]) -> str:
    """Tokens joined as a writer would: no space before closing punctuation or after an
    opening bracket, hyphens and en dashes closed up, straight quotes paired (a `'`
    after a word ending in s, outside single quotes, is a plural's possessive)."""
    parts: list[str] = []
    glue, double_open, single_open, previous = True, False, False, ""
    for token in tokens:
        if not token.strip():  # a no-break space, tokenised on its own
            continue
        before, after = token in _NO_SPACE_BEFORE, token in _NO_SPACE_AFTER
        if token == '"':
            before, after, double_open = double_open, not double_open, not double_open
        elif token == "'" and previous.endswith("s") and not single_open:
            before, after = True, False
        elif token == "'":
            before, after, single_open = single_open, not single_open, not single_open
        if parts and not glue and not before:
            parts.append(" ")
        parts.append(token)
        glue, previous = after, token
    return "".join(parts)


# --- The annotation ------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    """One annotated entity: its mentions' names, and its type (the most common one of
    its mentions)."""

    names: frozenset[str]
    type: str


@dataclass(frozen=True)
class Item:
    title: str
    text: str
    clusters: tuple[Cluster, ...]
    pairs: frozenset[frozenset[int]]  # annotated related pairs (unordered), by cluster

    def is_named_pair(self, pair: frozenset[int]) -> bool:
        return all(self.clusters[i].type not in UNNAMED_TYPES for i in pair)


def item_of(raw: dict[str, Any]) -> Item:
    """A Re-DocRED item read: the text is its sentences detokenised and joined by
    spaces; a mention's names are its tokens detokenised the same way, and as the
    annotation writes it."""
    sentences = raw["sents"]
    clusters = tuple(
        Cluster(
            names=frozenset(
                name
                for m in mentions
                for name in (detokenise(sentences[m["sent_id"]][slice(*m["pos"])]), m["name"])
            ),
            type=Counter(m["type"] for m in mentions).most_common(1)[0][0],
        )
        for mentions in raw["vertexSet"]
    )
    pairs = frozenset(
        frozenset((label["h"], label["t"])) for label in raw["labels"] if label["h"] != label["t"]
    )
    text = " ".join(detokenise(sentence) for sentence in sentences)
    return Item(raw.get("title", ""), text, clusters, pairs)


# --- Names -----------------------------------------------------------------------------


def lenient_key(name: str) -> str:
    key = " ".join(name.split()).casefold()
    return key[4:] if key.startswith("the ") else key


def _contains_words(outer: str, inner: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(inner)}(?!\w)", outer) is not None


def names_alike(product: str, annotated: str) -> bool:
    """Equal ignoring case and a leading "the", or one inside the other as whole words."""
    a, b = lenient_key(product), lenient_key(annotated)
    return bool(a and b) and (a == b or _contains_words(a, b) or _contains_words(b, a))


def clusters_named(item: Item, name: str) -> frozenset[int]:
    """The annotated entities that `name` names, leniently."""
    return frozenset(
        i for i, c in enumerate(item.clusters) if any(names_alike(name, n) for n in c.names)
    )


# --- Scoring ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RedocredScore(Counts):
    """Counts over one or more items; the figures are ratios of them."""

    items: int = 0
    entities: int = 0
    entities_exact: int = 0
    entities_lenient: int = 0
    named: int = 0
    named_found: int = 0
    pairs: int = 0
    pairs_joined: int = 0
    named_pairs: int = 0
    named_pairs_joined: int = 0
    facts: int = 0
    facts_between: int = 0
    facts_between_related: int = 0
    facts_unannotated: int = 0


def score_item(
    item: Item, entities: Sequence[str], facts: Sequence[tuple[str, str]]
) -> RedocredScore:
    """`entities` (names) and `facts` ((subject, object) names) extracted from
    `item.text`, against its annotation."""
    names = {*entities, *(name for fact in facts for name in fact)}
    mapped = {name: clusters_named(item, name) for name in names}
    every = frozenset().union(*(c.names for c in item.clusters))
    found = frozenset().union(*(mapped[name] for name in entities))
    named = [i for i, c in enumerate(item.clusters) if c.type in NAMED_TYPES]
    joins = [_joined(mapped[s], mapped[o]) for s, o in facts]
    joined = frozenset().union(*joins) & item.pairs
    named_pairs = [p for p in item.pairs if item.is_named_pair(p)]
    return RedocredScore(
        items=1,
        entities=len(entities),
        entities_exact=sum(name in every for name in entities),
        entities_lenient=sum(bool(mapped[name]) for name in entities),
        named=len(named),
        named_found=sum(i in found for i in named),
        pairs=len(item.pairs),
        pairs_joined=len(joined),
        named_pairs=len(named_pairs),
        named_pairs_joined=sum(p in joined for p in named_pairs),
        facts=len(facts),
        facts_between=sum(bool(mapped[s] and mapped[o]) for s, o in facts),
        facts_between_related=sum(bool(j & item.pairs) for j in joins),
        facts_unannotated=sum(not (mapped[s] and mapped[o]) for s, o in facts),
    )


def _joined(subjects: frozenset[int], objects: frozenset[int]) -> frozenset[frozenset[int]]:
    return frozenset(frozenset((s, o)) for s in subjects for o in objects if s != o)


@dataclass(frozen=True)
class Figure:
    label: str
    part: str  # a RedocredScore count
    whole: str
    target: float | None  # at least this share; at most, when `at_most`
    at_most: bool = False

    def value(self, score: RedocredScore) -> float | None:
        whole = getattr(score, self.whole)
        return getattr(score, self.part) / whole if whole else None

    def met(self, value: float | None) -> str:
        if self.target is None or value is None:
            return ""
        return "yes" if (value <= self.target if self.at_most else value >= self.target) else "no"


FIGURES = (
    Figure("entities naming an annotated entity, exact", "entities_exact", "entities", 0.85),
    Figure("  the same, lenient", "entities_lenient", "entities", None),
    Figure("annotated named entities found", "named_found", "named", 0.90),
    Figure("related pairs joined, no TIME/NUM entity", "named_pairs_joined", "named_pairs", 0.25),
    Figure("  the same, all related pairs", "pairs_joined", "pairs", None),
    Figure(
        "facts between annotated entities joining a related pair",
        "facts_between_related",
        "facts_between",
        0.75,
    ),
    Figure(
        "facts with an endpoint no annotated entity",
        "facts_unannotated",
        "facts",
        0.20,
        at_most=True,
    ),
)


# --- Running and reporting -------------------------------------------------------------


def items_load(path: Path) -> list[Item]:
    return [item_of(raw) for raw in json.loads(path.read_text())]


def item_score(item: Item, extractor: Any) -> RedocredScore:
    """The offline extractor (`OfflineExtractor`) run on the item's text, scored."""
    extraction = extractor.extract(item.text, reference_time=REFERENCE_TIME)
    return score_item(
        item,
        [e.name for e in extraction.entities],
        [(f.source, f.target) for f in extraction.facts],
    )


def _total(scores: Iterable[RedocredScore]) -> RedocredScore:
    return sum(scores, RedocredScore())


def redocred_run(path: Path, extractor: Any) -> tuple[dict[str, RedocredScore], float]:
    """The scores of the dev half, the held-out half and all items, and the seconds."""
    started = time.perf_counter()
    scores = [item_score(item, extractor) for item in items_load(path)]
    halves = {
        "dev": _total(scores[:DEV_ITEMS]),
        "heldout": _total(scores[DEV_ITEMS:]),
        "all": _total(scores),
    }
    return halves, time.perf_counter() - started


def _cell(figure: Figure, score: RedocredScore) -> str:
    value = figure.value(score)
    part, whole = getattr(score, figure.part), getattr(score, figure.whole)
    return "-" if value is None else f"{value * 100:.1f}% ({part}/{whole})"


def redocred_table(halves: dict[str, RedocredScore]) -> list[str]:
    """One row per figure: each half and all items, the target, whether the held-out
    half meets it."""
    header = (
        "figure",
        *(f"{name} ({s.items} items)" for name, s in halves.items()),
        "target",
        "held-out met",
    )
    rows = [header]
    for figure in FIGURES:
        target = (
            ""
            if figure.target is None
            else (f"{'<=' if figure.at_most else '>='} {figure.target * 100:.0f}%")
        )
        cells = [_cell(figure, score) for score in halves.values()]
        rows.append((figure.label, *cells, target, figure.met(figure.value(halves["heldout"]))))
    return aligned(rows)


def redocred_figures(halves: dict[str, RedocredScore]) -> dict[str, Any]:
    """The figures and counts of each half, for --json."""
    return {
        name: {
            "counts": score.as_dict(),
            "figures": {f.label.strip(): f.value(score) for f in FIGURES},
        }
        for name, score in halves.items()
    }
