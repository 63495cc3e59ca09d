"""When a clause's fact began: its own date words, else the date its paragraph or
section has stated ("In March 2019, X founded Y. She became its CEO."), resolved
against the time of the message or section it is in."""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING

from kgapp.graph.ingest.offline.turns import Turn
from kgapp.graph.time import NamedDate, resolve_in_context, resolve_named, stated_until

if TYPE_CHECKING:
    from spacy.tokens import Span

# Clauses about a distant, undated past: their facts did not begin at the reference
# time, and no date can be given to them ("when I was a kid I went to the lake").
VAGUE_PAST = re.compile(
    r"\b(when (i|we|he|she|they) (was|were) (a |an )?(kid|kids|child|children|little|young|"
    r"younger|teenager|teen|boy|girl|in (school|high school|college))|as (a )?(kid|child|"
    r"teenager)|growing up|back then|back in the day|years ago|long ago|in my childhood|"
    r"as a little)\b"
)


class Dating:
    """The dates a text has stated so far: its section's (a dated heading), and its
    paragraph's (the last date a sentence of the paragraph stated)."""

    def __init__(self, reference: datetime) -> None:
        self.reference = reference
        self.section: NamedDate | None = None
        self.paragraph: NamedDate | None = None
        self.before: NamedDate | None = None  # the context the sentence began in
        self.now = reference  # what "today" and "last week" count from
        self.message: datetime | None = None

    def enter(self, turn: Turn) -> None:
        """A new turn: a heading dates its section; a message is its own now."""
        if turn.heading:
            self.section = heading_date(turn.text, self.reference)
            self.paragraph = None
        elif turn.speaker is not None or turn.paragraph:
            self.paragraph = None
        day = self.section is not None and self.section.unit == "day"
        self.now = turn.when or (self.section.start if day and self.section else self.reference)
        self.message = turn.when

    @property
    def context(self) -> NamedDate | None:
        return self.paragraph or self.section

    def sentence(self, sentence: Span) -> None:
        """A sentence that states a date governs the undated sentences after it."""
        self.before = self.context
        found = resolve_in_context(sentence.text, self.now, self.before)
        if found is not None and not found.deictic:  # "last month" dates its own sentence
            self.paragraph = found

    def clause(self, text: str, *, future: bool, past: bool = True) -> NamedDate | None:
        """The date of a clause whose words are `text`: its own, else (told in the past
        tense) the paragraph's or section's, else the message's day. A clause in the
        present tense tells how things are now ("Skarv Labs is based in Trondheim")."""
        own = resolve_in_context(_before_until(text), self.now, self.before, future=future)
        if own is not None:
            return own
        return (self.before or self.context if past else None) or self.said

    def until(self, text: str) -> NamedDate | None:
        """The end a clause states ("chaired it from 2020 until 2023")."""
        return stated_until(text, self.now, self.before)

    @property
    def said(self) -> NamedDate | None:
        """A message's day: what it tells is true from then, as far as anyone knows."""
        if self.message is None:
            return None
        return NamedDate(self.message.replace(hour=0, minute=0, second=0, microsecond=0), "day")


def vague_past(text: str) -> bool:
    return VAGUE_PAST.search(text.lower()) is not None


def _before_until(text: str) -> str:
    """The words before "until ...": what follows it is the end, not the start."""
    return re.split(r"\b(?:until|till)\b", text, maxsplit=1, flags=re.IGNORECASE)[0]


def heading_date(heading: str, reference: datetime) -> NamedDate | None:
    """The date a heading gives its section: a full date ("Update, 3 February 2023") or
    a bare year ("## 2019: The first vessel"); in a heading path ("Report > 2019"), the
    last heading's."""
    last = heading.split(" > ")[-1]
    found = resolve_named(last, reference)
    if found is not None and found.with_year:
        return found
    year = re.search(r"\b(?:19|20)\d{2}\b", last)
    return resolve_named(f"in {year.group(0)}", reference) if year else None
