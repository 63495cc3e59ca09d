"""Conversation turns, and the `speaker: text` lines that episode content holds them in."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.time import in_utc


@dataclass(frozen=True)
class Message:
    """One turn of a conversation; `timestamp` is tz-aware UTC when known."""

    speaker: str
    text: str
    timestamp: datetime | None


# A speaker is a short name (at most five words) before a colon and a space, so that
# lines which merely contain a colon ("https://...", "at 10:30") do not start a message.
_SPEAKER_LINE = re.compile(r"(?P<speaker>[^\s:][^:]{0,63}?)\s*:(?:\s+(?P<text>.*))?")
_MAX_SPEAKER_WORDS = 5


def parse_message_lines(
    content: str, *, default_timestamp: datetime | None = None
) -> tuple[Message, ...]:
    """`speaker: text` lines as messages; indented or speaker-less lines continue the
    previous message. Every message gets `default_timestamp` (naive means UTC)."""
    timestamp = in_utc(default_timestamp) if default_timestamp else None
    turns: list[tuple[str, list[str]]] = []
    for number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        speaker, text = _speaker_of(line) if not line[0].isspace() else (None, line)
        if speaker is not None:
            turns.append((speaker, [text]))
        elif turns:
            turns[-1][1].append(text.strip())
        else:
            raise DocumentError(
                422,
                f"Line {number} has no speaker. Write each message "
                "as 'speaker: text', with a space after the colon.",
            )
    messages = tuple(
        Message(speaker=speaker, text="\n".join(lines).strip(), timestamp=timestamp)
        for speaker, lines in turns
        if "".join(lines).strip()
    )
    if not messages:
        raise DocumentError(422, "There are no messages. Write each one as 'speaker: text'.")
    return messages


def format_messages(messages: Iterable[Message]) -> str:
    """Messages as `speaker: text` lines; later lines of a message are indented so
    that `parse_message_lines` reads them back as continuations."""
    lines = []
    for message in messages:
        first, *rest = message.text.split("\n")
        lines.append(f"{message.speaker}: {first}")
        lines.extend(f"  {line}" for line in rest if line.strip())
    return "\n".join(lines)


def message_keys(messages: Sequence[Message]) -> tuple[str, ...]:
    """One key per message, from its content: speaker, time, text, the message before it,
    and how often that same combination came before in `messages`. An export that grows
    gives its earlier messages the same keys again, whatever the file is called; "ok"
    after two different messages is two messages."""
    keys = []
    seen: Counter[str] = Counter()
    previous = ""
    for message in messages:
        stamp = message.timestamp.isoformat() if message.timestamp else ""
        text = " ".join(message.text.split())
        basis = "\x1f".join((message.speaker.strip(), stamp, text, previous))
        seen[basis] += 1
        digest = hashlib.sha256(f"{basis}\x1f{seen[basis]}".encode()).hexdigest()
        keys.append("m" + digest[:32])
        previous = f"{message.speaker.strip()}\x1f{text}"
    return tuple(keys)


def _speaker_of(line: str) -> tuple[str | None, str]:
    match = _SPEAKER_LINE.fullmatch(line)
    if match is None:
        return None, line
    speaker = match["speaker"]
    if len(speaker.split()) > _MAX_SPEAKER_WORDS or speaker.isdigit():
        return None, line
    return speaker, (match["text"] or "").strip()
