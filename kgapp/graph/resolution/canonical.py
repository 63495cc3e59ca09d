"""Names as resolution compares them.

Canonical names are what resolution matches first (one entity per canonical name in a
tenant, whatever types extraction gives it), so two spellings that a person would call
the same (case, spacing, Unicode compatibility forms, invisible characters) must
normalise to the same string. Every other character is kept: symbols can be what tells
two names apart (C++, C#, C; AT&T, AT T). Spellings that differ in more than that are
for kgapp/graph/names.py to judge.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

MAX_NAME_BYTES = 512
# Control characters, zero-width and bidirectional controls: invisible, and a classic
# way to make two names look equal while differing (or the reverse).
_INVISIBLE = re.compile(
    "[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
)
# Trade mark, registered and copyright signs are not part of a name (NFKC would spell
# the trade mark sign "TM").
_MARKS = re.compile("[\u2122\u00ae\u00a9\u2120]")
_SPACES = re.compile(r"\s+")
_RELATION_CHARS = re.compile(r"[^A-Z0-9]+")


def visible_text(text: str) -> str:
    """NFKC with invisible characters removed; line structure kept."""
    keep = {"\n": "\n", "\t": " ", "\r": ""}
    return _INVISIBLE.sub(lambda m: keep.get(m.group(0), ""), unicodedata.normalize("NFKC", text))


def clean_text(text: str) -> str:
    """NFKC, invisible characters and trade mark signs removed, whitespace collapsed,
    trimmed."""
    text = unicodedata.normalize("NFKC", _MARKS.sub("", text))
    text = _INVISIBLE.sub("", text)
    return _SPACES.sub(" ", text).strip()


def display_name(name: str) -> str:
    """The name as shown: cleaned, case kept, capped at MAX_NAME_BYTES of UTF-8."""
    return _cap_bytes(clean_text(name))


def canonical_name(name: str) -> str:
    """The key resolution matches on: the display name, case-folded (punctuation and
    symbols kept)."""
    return _cap_bytes(clean_text(name).casefold())


def relation_name(relation: str) -> str:
    """`works at` / `worksAt` / `WORKS-AT` -> `WORKS_AT` (UPPER_SNAKE, ASCII)."""
    text = clean_text(relation)
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text)  # camelCase -> camel_Case
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    snake = _RELATION_CHARS.sub("_", ascii_text.upper()).strip("_")
    if not snake:
        return "RELATED_TO"
    return snake if snake[0].isalpha() else f"R_{snake}"


def entity_key(canonical: str) -> str:
    """A record key derived from the canonical name: concurrent writers of the same
    entity address the same record, so neither can create a second one, whatever type
    each gives it (a name has one type per tenant, decided by its mentions). Entities
    written before keys ignored the type keep their keys: they are found by name."""
    return "e" + hashlib.sha256(canonical.encode()).hexdigest()[:24]


def alias_key(entity_type: str, name: str) -> str:
    """A record key derived from (type, canonical name) for an alias."""
    digest = hashlib.sha256(f"{entity_type}\x1f{name}".encode()).hexdigest()
    return "e" + digest[:24]


def content_hash(text: str) -> str:
    return hashlib.sha256(clean_text(text).encode()).hexdigest()


def _cap_bytes(text: str) -> str:
    data = text.encode()
    if len(data) <= MAX_NAME_BYTES:
        return text
    return data[:MAX_NAME_BYTES].decode(errors="ignore").rstrip()
