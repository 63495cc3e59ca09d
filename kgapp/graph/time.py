"""Time as the graph keeps it: instants in UTC, the dates that text names, and the
bi-temporal rule of when a fact is visible.

Every instant stored or compared is an aware UTC datetime. A fact holds over
[valid_at, invalid_at) in the world and is known over [created_at, expired_at) in the
graph; open ends are None.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypedDict

# --- instants ----------------------------------------------------------------------------


def in_utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive datetime is taken to be UTC already. OverflowError when
    the offset carries it past year 1 or 9999."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def parse_when(value: str | None) -> datetime | None:
    """An ISO-8601 date or datetime as an aware UTC datetime; None when absent or invalid."""
    if not value:
        return None
    try:
        return in_utc(datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
    except (ValueError, OverflowError):
        return None


class MomentParams(TypedDict):
    as_of: datetime
    known_at: datetime


# --- bi-temporal visibility --------------------------------------------------------------
# The one rule, mirrored once in SurrealQL (queries.VISIBLE) and once in JavaScript
# (frontend/static/js/time.js); tests/graph/test_time.py holds the three to one table.


@dataclass(frozen=True)
class Moment:
    """A point in valid time (`as_of`) and system time (`known_at`)."""

    as_of: datetime
    known_at: datetime

    @classmethod
    def of(cls, as_of: datetime | None = None, known_at: datetime | None = None) -> Moment:
        now = datetime.now(UTC)
        return cls(as_of=as_of or now, known_at=known_at or now)

    def params(self) -> MomentParams:
        """The moment as query parameters ($as_of, $known_at)."""
        return {"as_of": self.as_of, "known_at": self.known_at}

    def shows(self, fact: Mapping[str, Any]) -> bool:
        return visible(fact, self.as_of, self.known_at)


def holds_at(fact: Mapping[str, Any], as_of: datetime) -> bool:
    """Whether the fact is true in the world at `as_of`: valid_at <= as_of < invalid_at."""
    return fact["valid_at"] <= as_of and (
        fact.get("invalid_at") is None or fact["invalid_at"] > as_of
    )


def known_at(fact: Mapping[str, Any], moment: datetime) -> bool:
    """Whether the graph held the fact at `moment`: created_at <= moment < expired_at."""
    return fact["created_at"] <= moment and (
        fact.get("expired_at") is None or fact["expired_at"] > moment
    )


def visible(fact: Mapping[str, Any], as_of: datetime, known: datetime) -> bool:
    """True in the world at `as_of`, as the graph knew it at `known`."""
    return holds_at(fact, as_of) and known_at(fact, known)


# --- dates that text names ---------------------------------------------------------------


_MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = (
    r"(January|February|March|April|May|June|July|August|September|October|November|"
    r"December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
)
_COUNTS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "a few": 3, "couple": 2,
    "a couple": 2, "a couple of": 2, "couple of": 2,
}  # fmt: skip
_COUNT = (
    r"(\d+|a couple of|a couple|couple of|a few|few|an?|"
    r"one|two|three|four|five|six|seven|eight|nine|ten)"
)
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = f"({'|'.join(WEEKDAYS)})"


@dataclass(frozen=True)
class NamedDate:
    """A date a text names: its first day (UTC midnight), how much of the calendar the
    text names ("last month": a month), and whether it states its year."""

    start: datetime
    unit: str  # day | month | year
    with_year: bool = False
    deictic: bool = False  # counted from the writer's now ("last month", "yesterday")

    @property
    def end(self) -> datetime:
        if self.unit == "day":
            return self.start + timedelta(days=1)
        if self.unit == "month":
            month = self.start.month  # the next month's first day
            return self.start.replace(year=self.start.year + month // 12, month=month % 12 + 1)
        return self.start.replace(year=self.start.year + 1)


def resolve_date(text: str, reference: datetime, *, future: bool = False) -> datetime | None:
    """The first date `text` states, resolved against `reference`, as UTC midnight.

    Absolute dates ("2024-03-10", "March 10, 2024", "10 March 2024", "March 2024", "in
    2019"), then relative ones: yesterday, today, tomorrow, last/this/next week, month,
    year and weekend, last/next/on <weekday>, "N days/weeks/months/years ago", "in N
    days". A bare "on Saturday" is the last one before `reference`, or the next one
    when `future` (the clause speaks of what will happen). A month or year resolves to
    its first day (`resolve_named` says which it was).
    """
    named = resolve_named(text, reference, future=future)
    return named.start if named else None


def resolve_named(text: str, reference: datetime, *, future: bool = False) -> NamedDate | None:
    """As `resolve_date`, with how much of the calendar the text names."""
    ref = reference.astimezone(UTC)
    lowered = " ".join(text.lower().split())
    return _absolute(text, ref) or _relative(lowered, ref, future)


def stated_period(text: str) -> tuple[datetime, datetime] | None:
    """The period that the first absolute date of `text` names with its year, as
    [start, end) in UTC: its day ("on 1 May, 2022", "2022-05-01"), its month ("in
    November 2022") or its year ("in 2019"); None when it names none."""
    named = _absolute(text, datetime.now(UTC))
    return (named.start, named.end) if named and named.with_year else None


def _absolute(text: str, ref: datetime) -> NamedDate | None:
    if m := re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        return _named(_day(int(m.group(1)), int(m.group(2)), int(m.group(3))), "day", True)
    if m := re.search(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", text):
        return _named(
            _day(int(m.group(3)), _MONTHS[m.group(1).lower()], int(m.group(2))), "day", True
        )
    if m := re.search(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b", text):
        return _named(
            _day(int(m.group(3)), _MONTHS[m.group(2).lower()], int(m.group(1))), "day", True
        )
    if m := re.search(rf"\b{_MONTH},?\s+(\d{{4}})\b", text):
        return _named(_day(int(m.group(2)), _MONTHS[m.group(1).lower()], 1), "month", True)
    if m := re.search(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b", text):
        return _named(_day(ref.year, _MONTHS[m.group(2).lower()], int(m.group(1))), "day")
    if m := re.search(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", text):
        return _named(_day(ref.year, _MONTHS[m.group(1).lower()], int(m.group(2))), "day")
    if m := re.search(rf"\b(?:in|last|this|since|of|by)\s+{_MONTH}\b", text, re.IGNORECASE):
        month = _MONTHS[m.group(1).lower()]
        year = ref.year if month <= ref.month else ref.year - 1
        return _named(_day(year, month, 1), "month")
    if m := re.search(
        r"\b(?:in|since|back in|from|during|by|of)\s+((?:19|20)\d{2})\b", text, re.IGNORECASE
    ):
        return _named(_day(int(m.group(1)), 1, 1), "year", True)
    return None


def _named(start: datetime | None, unit: str, with_year: bool = False) -> NamedDate | None:
    return NamedDate(start, unit, with_year) if start is not None else None


def _relative(lowered: str, ref: datetime, future: bool) -> NamedDate | None:
    today = _midnight(ref)
    if "day before yesterday" in lowered:
        return NamedDate(today - timedelta(days=2), "day")
    if re.search(r"\b(yesterday|last night)\b", lowered):
        return NamedDate(today - timedelta(days=1), "day")
    if re.search(r"\b(today|tonight|this (morning|afternoon|evening))\b", lowered):
        return NamedDate(today, "day")
    if "tomorrow" in lowered:
        return NamedDate(today + timedelta(days=1), "day")
    if m := re.search(rf"\b{_COUNT}\s+(day|week|month|year)s?\s+ago\b", lowered):
        return NamedDate(today - timedelta(days=_count(m.group(1)) * _UNIT_DAYS[m.group(2)]), "day")
    if m := re.search(rf"\b(?:in|within)\s+{_COUNT}\s+(day|week|month|year)s?\b", lowered):
        return NamedDate(today + timedelta(days=_count(m.group(1)) * _UNIT_DAYS[m.group(2)]), "day")
    return _named_period(lowered, today, future)


def _named_period(lowered: str, today: datetime, future: bool) -> NamedDate | None:
    if m := re.search(r"\b(last|this|next)\s+(week|month|year|weekend)\b", lowered):
        unit = m.group(2) if m.group(2) in ("month", "year") else "day"
        return _named(_period(m.group(1), m.group(2), today), unit)
    if m := re.search(rf"\b(last|next|this past|this coming|this|on)\s+{_WEEKDAY}\b", lowered):
        which = m.group(1)
        ahead = which in ("next", "this coming") or (which in ("this", "on") and future)
        return NamedDate(_weekday(WEEKDAYS.index(m.group(2)), today, ahead), "day")
    return None


def _period(which: str, unit: str, today: datetime) -> datetime | None:
    step = {"last": -1, "this": 0, "next": 1}[which]
    if unit == "week":
        return today + timedelta(days=7 * step)
    if unit == "month":
        month = today.month - 1 + step
        return _day(today.year + month // 12, month % 12 + 1, 1)
    if unit == "year":
        return _day(today.year + step, 1, 1)
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)  # the latest, or today
    if step < 0:
        return saturday - timedelta(days=7) if today.weekday() >= 5 else saturday
    if step == 0:
        return saturday if today.weekday() >= 5 else saturday + timedelta(days=7)
    return saturday + timedelta(days=7)


def _weekday(day: int, today: datetime, ahead: bool) -> datetime:
    if ahead:
        return today + timedelta(days=(day - today.weekday() - 1) % 7 + 1)
    return today - timedelta(days=(today.weekday() - day - 1) % 7 + 1)


def _count(word: str) -> int:
    return _COUNTS.get(word) or int(word)


def _day(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime.combine(date(year, month, day), datetime.min.time(), tzinfo=UTC)
    except ValueError:
        return None


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_SEASON = "|".join(_SEASONS)
_LATER = rf"\b{_COUNT}\s+(year|month)s?\s+(?:later|after(?:wards)?)\b"


def resolve_in_context(
    text: str, reference: datetime, context: NamedDate | None, *, future: bool = False
) -> NamedDate | None:
    """As `resolve_named`, in a text whose paragraph or section has stated the date
    `context` ("In March 2019, ..."): what refers back to it ("later that year", "the
    following spring", "two years later", "that summer", "in May") resolves against
    it; what the writer says of their own present ("last week", "yesterday") against
    `reference`."""
    ref = reference.astimezone(UTC)
    lowered = " ".join(text.lower().split())
    # A month without its year ("in May") is in the context's year.
    year_end = None if context is None else _day(context.start.year, 12, 31)
    found = _absolute(text, year_end or ref)
    if found is not None or context is None:
        return found or _deictic(_relative(lowered, ref, future))
    return _anaphoric(lowered, context) or _deictic(_relative(lowered, ref, future))


def _deictic(found: NamedDate | None) -> NamedDate | None:
    return replace(found, deictic=True) if found is not None else None


def _anaphoric(lowered: str, context: NamedDate) -> NamedDate | None:
    year = context.start.year
    if m := re.search(rf"\b(the following|the next|that|the same|this)\s+({_SEASON})\b", lowered):
        shift = 1 if m.group(1) in ("the following", "the next") else 0
        return _named(_day(year + shift, _SEASONS[m.group(2)], 1), "month", True)
    if re.search(r"\bthe (following|next) year\b", lowered):
        return _named(_day(year + 1, 1, 1), "year", True)
    if m := re.search(_LATER, lowered):
        count = _count(m.group(1))
        if m.group(2) == "year":
            return _named(_day(year + count, 1, 1), "year", True)
        month = context.start.month - 1 + count
        return _named(_day(year + month // 12, month % 12 + 1, 1), "month", True)
    if re.search(r"\b(that|the same) year\b|\b(later|earlier) in the year\b", lowered):
        return _named(_day(year, 1, 1), "year", True)
    if re.search(r"\bthe (following|next) month\b|\ba month later\b", lowered):
        month = context.start.month
        return _named(_day(year + month // 12, month % 12 + 1, 1), "month", True)
    return None


_UNTIL = re.compile(
    rf"\b(?:until|till|til|through|to)\s+(?:the\s+(?:end|middle)\s+of\s+)?"
    rf"((?:\d{{1,2}}(?:st|nd|rd|th)?\s+)?(?:{_MONTH}\s*(?:\d{{1,2}},?\s+)?(?:(?:19|20)\d{{2}})?|(?:19|20)\d{{2}}))\b",
    re.IGNORECASE,
)


def stated_until(
    text: str, reference: datetime, context: NamedDate | None = None
) -> NamedDate | None:
    """The end a clause states: "until 2023", "from 2015 to 2019", "till the end of
    April"; None when it states none."""
    for match in _UNTIL.finditer(text):
        said = match.group(1).strip()
        if match.group(0)[:2].lower() in ("to", "th") and not re.search(r"\d{4}", said):
            continue  # "talked to May": a month needs its year after "to"
        found = resolve_in_context(f"in {said}", reference, context)
        if found is not None:
            return found
    return None
