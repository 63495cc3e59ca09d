"""Documents cut into episode-sized chunks, and conversations into message windows.

A chunk must make sense alone, because extraction sees one chunk at a time: each
starts with the heading path of its section, and consecutive chunks of a section
share about `overlap_tokens` of text so that a sentence cut at a boundary is still
read whole on one side.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from kgapp.graph.documents.messages import Message
from kgapp.graph.documents.text import markdown_headings

MIN_MAX_TOKENS = 50


@dataclass(frozen=True)
class Chunk:
    """`text` starts with the heading line when `heading` (e.g. "Guide > Install") is set;
    `token_count` is `count_tokens(text)` and never above the `max_tokens` asked for."""

    index: int
    text: str
    heading: str | None
    token_count: int


# --- Token counting -----------------------------------------------------------------

_TOKEN_PIECES = re.compile(r"\w+|[^\w\s]")
# GPT vocabularies hold most short English words whole; longer ones split in ~4-letter
# parts, digit runs in groups of three, and CJK text at about one token a character.
_WHOLE_WORD_CHARS = 6
_WIDE_SCRIPTS_START = 0x2E80


def count_tokens(text: str) -> int:
    """An approximation of GPT (cl100k) tokens that errs high, without a vocabulary.

    Additive over whitespace: count(a + " " + b) == count(a) + count(b), which is what
    lets the chunker add up pieces instead of recounting chunks.
    """
    return sum(_piece_tokens(piece) for piece in _TOKEN_PIECES.findall(text))


def _piece_tokens(piece: str) -> int:
    if piece.isdigit():
        return math.ceil(len(piece) / 3)
    if piece.isascii():
        return 1 if len(piece) <= _WHOLE_WORD_CHARS else math.ceil(len(piece) / 4)
    wide = sum(1 for char in piece if ord(char) >= _WIDE_SCRIPTS_START)
    return max(1, wide + math.ceil((len(piece) - wide) / 4))


# --- Sections -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Section:
    path: str | None  # "Guide > Install"
    level: int
    body: str


def _sections(text: str) -> list[_Section]:
    """The text cut at its markdown headings; a heading's own line is not in any body."""
    lines = text.split("\n")
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    start, path, level = 0, None, 0
    for index, heading_level, title in markdown_headings(text):
        sections.append(_Section(path, level, "\n".join(lines[start:index])))
        while stack and stack[-1][0] >= heading_level:
            stack.pop()
        stack.append((heading_level, title))
        start, path, level = index + 1, " > ".join(t for _, t in stack), heading_level
    sections.append(_Section(path, level, "\n".join(lines[start:])))
    kept = [section for section in sections if section.body.strip()]
    # A text of headings only still says something; keep it as plain text.
    return kept or [_Section(None, 0, text)]


# --- Pieces: sentences (or parts of over-long ones) with the whitespace before them --


@dataclass(frozen=True)
class _Piece:
    text: str
    tokens: int
    joiner: str  # "\n\n" before a paragraph, "\n" before a line, " " within a line


# Lines that stand alone instead of continuing a hard-wrapped sentence: list items,
# table rows, quotes, code fences.
_BLOCK_START = re.compile(r"\s*(?:[-*+]\s|\d{1,3}[.)]\s|[|>]|```|~~~)")
_FENCE = re.compile(r"\s*(?:```|~~~)")
# After . ! ? (and a closing quote or bracket), unless a lowercase word follows: that
# keeps "e.g. this" together.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'\u201d\u2019)\]]))\s+(?![a-z])")


def _pieces(body: str, budget: int) -> Iterator[_Piece]:
    for joiner, run, prose in _runs(body):
        for separator, sentence in _sentences(run) if prose else [("", run)]:
            for part in _fit(sentence, budget):
                yield _Piece(part, count_tokens(part), joiner)
                joiner = " "
            joiner = "\n" if "\n" in separator else " "


def _runs(body: str) -> Iterator[tuple[str, str, bool]]:
    """(whitespace before, text, is prose) of each run of lines read as one stream:
    the lines of a prose paragraph join up (text wrapped by hand or by a PDF), while
    list items, table rows and quotes start a run and a code line is one alone."""
    run: list[str] = []
    joiner, in_code, alone = "\n\n", False, False
    for line in body.split("\n"):
        fence = _FENCE.match(line) is not None
        if run and (alone or in_code or fence or not line.strip() or _BLOCK_START.match(line)):
            yield joiner, "\n".join(run), not alone
            run, joiner = [], "\n"
        if not line.strip():
            joiner = "\n\n"
            continue
        run.append(line.rstrip())
        alone = in_code or fence
        in_code = in_code != fence
    if run:
        yield joiner, "\n".join(run), not alone


def split_sentences(text: str, maxsplit: int = 0) -> list[str]:
    """The sentences of `text` (split as chunking splits prose), the first `maxsplit`
    only when given, the rest left whole in the last item."""
    return [s for s in _SENTENCE_END.split(text.strip(), maxsplit=maxsplit) if s]


def _sentences(run: str) -> Iterator[tuple[str, str]]:
    """(whitespace before, sentence) of each sentence of a prose run."""
    start, separator = 0, ""
    for end in _SENTENCE_END.finditer(run):
        yield separator, run[start : end.start()]
        start, separator = end.end(), end[0]
    yield separator, run[start:]


def _fit(sentence: str, budget: int) -> Iterator[str]:
    """The sentence, or runs of its words, each within `budget` tokens."""
    if count_tokens(sentence) <= budget:
        yield sentence
        return
    words: list[str] = []
    used = 0
    for word in (part for whole in sentence.split() for part in _cut_word(whole, budget)):
        tokens = count_tokens(word)
        if words and used + tokens > budget:
            yield " ".join(words)
            words, used = [], 0
        words.append(word)
        used += tokens
    if words:
        yield " ".join(words)


def _cut_word(word: str, budget: int) -> Iterator[str]:
    """A word (a URL, a base64 blob) over budget, cut into parts within it.

    A character never costs more than one token, so shrinking a part to `budget`
    characters always fits; starting at four characters a token keeps parts large.
    """
    while word:
        size = min(len(word), budget * 4)
        while size > budget and count_tokens(word[:size]) > budget:
            size = max(budget, size * 3 // 4)
        yield word[:size]
        word = word[size:]


# --- Packing ------------------------------------------------------------------------


def chunk_text(text: str, *, max_tokens: int = 800, overlap_tokens: int = 100) -> list[Chunk]:
    """Chunks of at most `max_tokens`, in text order, indexed from 0; [] for blank text.

    Requires max_tokens >= 50 and 0 <= overlap_tokens < max_tokens / 2. Overlap stays
    within a section: the next section has its own heading to give it context.
    """
    if max_tokens < MIN_MAX_TOKENS:
        raise ValueError(f"max_tokens must be at least {MIN_MAX_TOKENS}, not {max_tokens}")
    if not 0 <= overlap_tokens < max_tokens / 2:
        raise ValueError(f"overlap_tokens must be in [0, max_tokens / 2), not {overlap_tokens}")
    if not text.strip():
        return []
    texts: list[tuple[str, str | None]] = []
    for section in _sections(text.replace("\r\n", "\n")):
        line = _heading_line(section, max_tokens // 4)
        budget = max_tokens - count_tokens(line)
        for pieces in _pack(list(_pieces(section.body, budget)), budget, overlap_tokens):
            body = _join(pieces)
            texts.append((f"{line}\n\n{body}" if line else body, section.path))
    return [
        Chunk(index=index, text=chunk, heading=path, token_count=count_tokens(chunk))
        for index, (chunk, path) in enumerate(texts)
    ]


def _heading_line(section: _Section, budget: int) -> str:
    """`## Guide > Install`; only the last heading, cut to fit, when the path is long."""
    if section.path is None:
        return ""
    marks = "#" * section.level
    line = f"{marks} {section.path}"
    if count_tokens(line) <= budget:
        return line
    last = section.path.rsplit(" > ", 1)[-1]
    return next(_fit(f"{marks} {last}", budget))


def _pack(pieces: list[_Piece], budget: int, overlap: int) -> list[list[_Piece]]:
    """Greedy packing; each chunk after the first opens with the previous one's tail."""
    chunks: list[list[_Piece]] = []
    current: list[_Piece] = []
    used = 0
    for piece in pieces:
        if current and used + piece.tokens > budget:
            chunks.append(current)
            current = _tail(current, min(overlap, budget - piece.tokens))
            used = sum(p.tokens for p in current)
        current.append(piece)
        used += piece.tokens
    if current:
        chunks.append(current)
    return chunks


def _tail(pieces: list[_Piece], limit: int) -> list[_Piece]:
    """Whole sentences from the end within `limit` tokens; the last words of the last
    sentence when not even it fits."""
    tail: list[_Piece] = []
    used = 0
    for piece in reversed(pieces):
        if used + piece.tokens > limit:
            break
        tail.insert(0, piece)
        used += piece.tokens
    if tail or limit <= 0:
        return tail
    words: list[str] = []
    for word in reversed(pieces[-1].text.split()):
        tokens = count_tokens(word)
        if used + tokens > limit:
            break
        words.insert(0, word)
        used += tokens
    return [_Piece(" ".join(words), used, "")] if words else []


def _join(pieces: list[_Piece]) -> str:
    return pieces[0].text + "".join(piece.joiner + piece.text for piece in pieces[1:])


# --- Conversations ------------------------------------------------------------------


def group_messages(
    messages: Iterable[Message],
    *,
    max_tokens: int = 600,
    max_gap: timedelta = timedelta(hours=6),
) -> list[tuple[Message, ...]]:
    """Consecutive messages in windows of at most `max_tokens` (a longer message is a
    window alone); a gap over `max_gap` or a new UTC date starts a new window, since
    it starts a new session. Messages without a timestamp never split a window."""
    if max_tokens <= 0 or max_gap <= timedelta(0):
        raise ValueError("max_tokens and max_gap must be positive")
    groups: list[tuple[Message, ...]] = []
    current: list[Message] = []
    used = 0
    last_seen: datetime | None = None
    for message in messages:
        tokens = count_tokens(f"{message.speaker}: {message.text}")
        if current and (
            used + tokens > max_tokens or _new_session(last_seen, message.timestamp, max_gap)
        ):
            groups.append(tuple(current))
            current, used, last_seen = [], 0, None
        current.append(message)
        used += tokens
        last_seen = message.timestamp or last_seen
    if current:
        groups.append(tuple(current))
    return groups


def _new_session(before: datetime | None, now: datetime | None, max_gap: timedelta) -> bool:
    if before is None or now is None:
        return False
    return abs(now - before) > max_gap or now.date() != before.date()


# --- Passage units ------------------------------------------------------------------

# A unit longer than this is cut into windows of words, so that one long message or
# paragraph cannot take a whole context section (or one embedding).
MAX_UNIT_TOKENS = 150


@functools.lru_cache(maxsize=10_000)
def passage_units(source: str, content: str) -> tuple[str, ...]:
    """The units that passage retrieval ranks and quotes: a message episode's messages (a
    line, with the indented lines that continue it); any other episode's sentences; each
    cut into windows within MAX_UNIT_TOKENS."""
    pieces: list[str] = []
    if source == "message":
        for line in content.splitlines():
            if line[:1].isspace() and pieces:
                pieces[-1] += "\n" + line.strip()
            elif line.strip():
                pieces.append(line.strip())
    else:
        for line in content.splitlines():
            pieces.extend(split_sentences(line))
    return tuple(window for piece in pieces for window in _unit_windows(piece))


def _unit_windows(text: str) -> list[str]:
    """The text, or runs of its words, each within MAX_UNIT_TOKENS."""
    if len(text) <= MAX_UNIT_TOKENS or count_tokens(text) <= MAX_UNIT_TOKENS:
        return [text]
    windows: list[str] = []
    words: list[str] = []
    used = 0
    for word in text.split():
        tokens = count_tokens(word)
        if words and used + tokens > MAX_UNIT_TOKENS:
            windows.append(" ".join(words))
            words, used = [], 0
        words.append(word)
        used += tokens
    if words:
        windows.append(" ".join(words))
    return windows
