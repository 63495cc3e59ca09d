"""What the extractor reads: turns, each with its speaker and who "you" is."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from kgapp.graph.documents.messages import Message

# A conversation upload appends a shared photo's machine caption to the turn
# (kgapp.graph.documents.conversations): a description of the picture, not something
# the speaker said.
PHOTO = re.compile(r"\s*\[shared a photo:[^\]]*\]")


# A Markdown heading or list item marker, a line of its own.
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
QUOTE = re.compile(r"^\s*(?:>\s*)+")  # a Markdown or e-mail quotation
ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+")
# A heading without Markdown: a short line that ends no sentence ("Update, 3 February
# 2023", "From: Lena Ott").
SHORT_LINE_WORDS = 12


@dataclass(frozen=True)
class Turn:
    speaker: str | None
    other: str | None  # who "you" is: the other speaker of a two-party conversation
    text: str
    when: datetime | None = None  # the message's own time
    heading: bool = False  # a title line: it dates its section, it states no facts
    paragraph: bool = True  # the first turn of a paragraph (dates stated before lapse)
    context: bool = False  # text before the episode's own: read for focus, not facts


def text_turns(content: str) -> list[Turn]:
    """Content that is no conversation, as turns without a speaker: each heading line,
    each list item and each paragraph (lines between blank lines) a turn of its own,
    so that a heading never runs into the sentence after it."""
    turns: list[Turn] = []
    content = PHOTO.sub("", content)
    single = len([line for line in content.splitlines() if line.strip()]) == 1
    for block in re.split(r"\n\s*\n", content):
        lines: list[str] = []
        first = True
        lines_of_block = [QUOTE.sub("", line).strip() for line in block.splitlines()]
        lines_of_block = [line for line in lines_of_block if line]
        for index, line in enumerate(lines_of_block):
            after = lines_of_block[index + 1] if index + 1 < len(lines_of_block) else ""
            if _is_heading(line, single, after):
                turns.extend(_paragraph(lines, first))
                turns.append(Turn(None, None, HEADING.sub("", line).strip("*_ "), heading=True))
                lines, first = [], True
            elif ITEM.match(line):
                turns.extend(_paragraph(lines, first))
                turns.append(Turn(None, None, ITEM.sub("", line), paragraph=first))
                lines, first = [], False
            else:
                lines.append(line)
        turns.extend(_paragraph(lines, first))
    return turns


def _paragraph(lines: list[str], first: bool) -> list[Turn]:
    return [Turn(None, None, " ".join(lines), paragraph=first)] if lines else []


def _is_heading(line: str, single: bool, after: str) -> bool:
    """A Markdown heading; or a short line that ends no sentence, with no lower-case
    continuation after it (a wrapped line of a paragraph)."""
    if HEADING.match(line):
        return True
    if after[:1].islower():
        return False
    short = len(line.split()) <= SHORT_LINE_WORDS and not line.rstrip("*_ ").endswith(
        (".", "!", "?", ";", ",")
    )
    return short and not single and not ITEM.match(line)


def conversation_turns(messages: list[Message], speakers: list[str]) -> list[Turn]:
    """The messages that say something as turns, the lines of each joined."""
    turns = []
    for message in messages:
        lines = [line.strip() for line in message.text.splitlines() if line.strip()]
        if lines:
            speaker = message.speaker.strip()
            text = PHOTO.sub("", " ".join(lines)).strip()
            other = _other(speaker, speakers)
            turns.append(Turn(speaker, other, text, when=message.timestamp))
    return turns


def _other(speaker: str | None, speakers: list[str]) -> str | None:
    if speaker is None or len(speakers) != 2:
        return None
    return next((s for s in speakers if s != speaker), None)
