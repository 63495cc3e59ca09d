"""What the extractor reads: turns, each with its speaker and who "you" is."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgapp.graph.documents.messages import Message

# A conversation upload appends a shared photo's machine caption to the turn
# (kgapp.graph.documents.conversations): a description of the picture, not something
# the speaker said.
PHOTO = re.compile(r"\s*\[shared a photo:[^\]]*\]")


@dataclass(frozen=True)
class Turn:
    speaker: str | None
    other: str | None  # who "you" is: the other speaker of a two-party conversation
    text: str


def text_turn(content: str) -> Turn:
    """Content that is no conversation, as one turn without a speaker."""
    return Turn(None, None, PHOTO.sub("", content))


def conversation_turns(messages: list[Message], speakers: list[str]) -> list[Turn]:
    """The messages that say something as turns, the lines of each joined."""
    turns = []
    for message in messages:
        lines = [line.strip() for line in message.text.splitlines() if line.strip()]
        if lines:
            speaker = message.speaker.strip()
            text = PHOTO.sub("", " ".join(lines)).strip()
            turns.append(Turn(speaker, _other(speaker, speakers), text))
    return turns


def _other(speaker: str | None, speakers: list[str]) -> str | None:
    if speaker is None or len(speakers) != 2:
        return None
    return next((s for s in speakers if s != speaker), None)
