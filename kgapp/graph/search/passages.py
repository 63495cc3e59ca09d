"""The "## Sources" section of a query's context: the candidate episodes cut into units
(a conversation's messages, a text's sentences), ranked for the question, the best
that fit the budget quoted under each episode's date and label, a relative date
("yesterday") resolved."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from kgapp.graph.chunking import count_tokens, passage_units
from kgapp.graph.index.analysis import bm25, terms
from kgapp.graph.records import Episode, record_key
from kgapp.graph.time import NamedDate, resolve_named

SOURCES = "## Sources"
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


class Chunk(Episode):
    """An episode the context quotes: its `ref` in the context ("S1") and the excerpts
    quoted."""

    ref: str
    excerpts: list[str]


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
    `index.analysis`), each unit also getting a share of its neighbours' scores; and the
    cosine of the unit's embedding (schema/0011) with the question's, where the episode
    has its units embedded."""

    def __init__(
        self,
        question: str,
        episodes: list[Episode],
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
        # A unit is said on its episode's day: "what did Joanna watch on 1 May 2022?"
        said = [f"{unit.text} {day(episodes[unit.episode]['valid_at'])}" for unit in self.units]
        lexical = self._with_neighbours(bm25(said, terms(question)))
        rankings = [[row for row in best_first(lexical) if lexical[row] > 0]]
        if question_vector is not None and vectors:
            meaning = self._cosines(vectors, question_vector)
            rankings.append([row for row in best_first(meaning) if meaning[row] >= MIN_COSINE])
        fused = _fused(rankings, len(self.units))
        if period is not None:
            # A third ranking: the units of the period named, by the other two.
            rankings.append([row for row in best_first(fused) if self.within(row, period)])
            fused = _fused(rankings, len(self.units))
        self.ranked = [self.units[row] for row in best_first(fused) if fused[row] > 0]

    def within(self, row: int, period: tuple[datetime, datetime]) -> bool:
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

    def excerpts(self, budget: int) -> tuple[list[str], list[Chunk]]:
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
        chunks: list[Chunk] = []
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
        return f"- [{day(self.episodes[number]['valid_at'])}] [{_ref(label)}]"

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


def best_first(scores: np.ndarray) -> list[int]:
    """Rows by score, best first, the earlier first among equals."""
    return sorted(range(len(scores)), key=lambda r: (-scores[r], r))


def day(moment: datetime) -> str:
    """A date as people write it ("8 May 2023"): the words a question or its answer uses."""
    return f"{moment.day} {moment:%B %Y}"


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
        when = day(named.start)
    if set(terms(when)) <= set(terms(text)):  # "in March 2024" says it already
        return ""
    return f" [refers to {when}]"
