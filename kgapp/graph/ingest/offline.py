"""The offline extractor: entities and facts without any model, deterministically.

It answers in the same shape as the `extract_graph` LLM task, so everything after
extraction is the same with or without a model. What it finds (README "Offline
extractor" states the limits):
- named entities: runs of capitalised words (not sentence-initial function words), typed
  Organization when they end in a company suffix, Location after "in/to/from" in a
  place pattern, Person as the subject of a person pattern, Entity otherwise;
- facts from simple patterns: "X works at/for Y", "X is employed by Y", "X joined Y",
  "X left Y", "X moved to Y", "X lives in Y", "X is the CEO of Y", "X founded Y",
  "X is married to Y", "X knows/met Y", "X studies at Y", "X likes Y";
- first person in conversations: "I joined Y" by speaker Alice is "Alice joined Y";
- dates: ISO dates, "March 10, 2024", "10 March 2024", "March 2024", "in 2024",
  "yesterday", "today", "last week/month/year", "N days/weeks/months/years ago",
  resolved against the episode's reference time.
It does not resolve pronouns, read negation ("does not work at"), or find relations
other than these patterns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta

from kgapp.graph.llm.prompts.extract import (
    MAX_ENTITIES,
    MAX_FACTS,
    ExtractedEntity,
    ExtractedFact,
    Extraction,
)

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
_MONTH = r"(January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
_NAME = r"(?:[A-Z][\w&'.-]*(?:\s+(?:of|de|van|von|the|and|&)\s+[A-Z][\w&'.-]*|\s+[A-Z][\w&'.-]*)*)"
_ORG_SUFFIX = re.compile(
    r"\b(Inc|Inc\.|Corp|Corp\.|Corporation|Ltd|Ltd\.|LLC|GmbH|AG|SA|plc|Co|Co\.|Company|Group|Labs|"
    r"University|College|Institute|Bank|Foundation|Agency|Studio|Studios)$"
)
_STOP = {
    "I",
    "The",
    "A",
    "An",
    "And",
    "But",
    "Or",
    "So",
    "We",
    "You",
    "He",
    "She",
    "They",
    "It",
    "This",
    "That",
    "These",
    "Those",
    "My",
    "Our",
    "Your",
    "His",
    "Her",
    "Their",
    "Its",
    "Yesterday",
    "Today",
    "Tomorrow",
    "Last",
    "Next",
    "In",
    "On",
    "At",
    "If",
    "When",
    "After",
    "Before",
    "Then",
    "Also",
    "Yes",
    "No",
    "Hi",
    "Hey",
    "Hello",
    "Thanks",
    "Oh",
    "Well",
    "Wow",
    "What",
    "Why",
    "How",
    "Where",
    "Who",
    "Just",
    "Really",
    "Great",
} | {m.capitalize() for m in _MONTHS}

# (relation, pattern with named groups s(ubject) and o(bject), subject type, object type,
#  whether the pattern ends the relation rather than starting it)
_FACT_PATTERNS: list[tuple[str, re.Pattern[str], str, str, bool]] = [
    (rel, re.compile(pattern), s_type, o_type, ends)
    for rel, pattern, s_type, o_type, ends in [
        (
            "WORKS_AT",
            rf"(?P<s>{_NAME})\s+(?:now\s+)?(?:works|worked|is working)\s+(?:at|for)\s+(?P<o>{_NAME})",
            "Person",
            "Organization",
            False,
        ),
        (
            "WORKS_AT",
            rf"(?P<s>{_NAME})\s+(?:is|was)\s+employed\s+(?:by|at)\s+(?P<o>{_NAME})",
            "Person",
            "Organization",
            False,
        ),
        (
            "WORKS_AT",
            rf"(?P<s>{_NAME})\s+(?:has\s+)?(?:joined|started at|started working at)\s+(?P<o>{_NAME})",
            "Person",
            "Organization",
            False,
        ),
        (
            "WORKS_AT",
            rf"(?P<s>{_NAME})\s+(?:has\s+)?(?:left|quit|resigned from)\s+(?P<o>{_NAME})",
            "Person",
            "Organization",
            True,
        ),
        (
            "LIVES_IN",
            rf"(?P<s>{_NAME})\s+(?:has\s+)?(?:moved|relocated)\s+to\s+(?P<o>{_NAME})",
            "Person",
            "Location",
            False,
        ),
        (
            "LIVES_IN",
            rf"(?P<s>{_NAME})\s+(?:lives|lived|is living|resides)\s+in\s+(?P<o>{_NAME})",
            "Person",
            "Location",
            False,
        ),
        (
            "CEO_OF",
            rf"(?P<s>{_NAME})\s+(?:is|was|became)\s+(?:the\s+)?(?:CEO|chief executive)\s+(?:of|at)\s+(?P<o>{_NAME})",
            "Person",
            "Organization",
            False,
        ),
        (
            "FOUNDED",
            rf"(?P<s>{_NAME})\s+(?:founded|co-founded|started)\s+(?P<o>{_NAME})",
            "Person",
            "Organization",
            False,
        ),
        (
            "MARRIED_TO",
            rf"(?P<s>{_NAME})\s+(?:is|was|got)\s+married\s+to\s+(?P<o>{_NAME})",
            "Person",
            "Person",
            False,
        ),
        (
            "KNOWS",
            rf"(?P<s>{_NAME})\s+(?:knows|met|is friends with)\s+(?P<o>{_NAME})",
            "Person",
            "Person",
            False,
        ),
        (
            "STUDIES_AT",
            rf"(?P<s>{_NAME})\s+(?:studies|studied|is studying)\s+at\s+(?P<o>{_NAME})",
            "Person",
            "Organization",
            False,
        ),
        (
            "LIKES",
            rf"(?P<s>{_NAME})\s+(?:likes|loves|enjoys)\s+(?P<o>{_NAME})",
            "Person",
            "Concept",
            False,
        ),
    ]
]
_FIRST_PERSON = re.compile(
    r"(?<![\w])I(?:'m| am)?\s+(?=(?:now\s+)?(?:work|worked|joined|left|quit|moved|relocated|live|lived|founded|started|study|studied|like|love|enjoy|met|know|got married|am married))"
)
_VERB_FIXES = [
    (re.compile(rf"\b{a}\b"), b)
    for a, b in [
        ("work", "works"),
        ("live", "lives"),
        ("study", "studies"),
        ("like", "likes"),
        ("love", "loves"),
        ("enjoy", "enjoys"),
        ("know", "knows"),
    ]
]


def extract_offline(
    content: str, *, reference_time: datetime, speakers: Iterable[str] = ()
) -> Extraction:
    """Entities and facts of `content` by rule (see the module docstring)."""
    entities: dict[str, ExtractedEntity] = {}
    facts: list[ExtractedFact] = []
    for speaker, text in _utterances(content, set(speakers)):
        if speaker:
            _add_entity(
                entities, speaker, "Person", f"{speaker} is a participant of the conversation."
            )
        for sentence in _sentences(_carry_subject(_first_person(text, speaker))):
            facts.extend(_sentence_facts(sentence, reference_time, entities))
            for name in _names(sentence):
                _add_entity(entities, name, _guess_type(name, sentence), "")
    return Extraction(entities=list(entities.values())[:MAX_ENTITIES], facts=facts[:MAX_FACTS])


def _utterances(content: str, speakers: set[str]) -> list[tuple[str | None, str]]:
    """Split message episodes ("speaker: text" lines) into (speaker, text)."""
    result: list[tuple[str | None, str]] = []
    for line in content.splitlines():
        speaker, sep, text = line.partition(":")
        if sep and (
            speaker.strip() in speakers or (speakers == set() and _looks_like_speaker(speaker))
        ):
            result.append((speaker.strip(), text.strip()))
        elif result and result[-1][0] is not None and line.strip():
            result[-1] = (result[-1][0], result[-1][1] + " " + line.strip())
        else:
            result.append((None, line))
    return result


def _looks_like_speaker(text: str) -> bool:
    words = text.strip().split()
    return 0 < len(words) <= 3 and all(w[:1].isupper() for w in words)


def _first_person(text: str, speaker: str | None) -> str:
    if not speaker:
        return text
    replaced = _FIRST_PERSON.sub(f"{speaker} ", text)
    for pattern, verb in _VERB_FIXES:
        replaced = re.sub(
            rf"({re.escape(speaker)}\s+(?:now\s+)?){pattern.pattern}", rf"\g<1>{verb}", replaced
        )
    return replaced


_VERBS = (
    r"(?:now\s+)?(?:works|worked|joined|left|quit|moved|relocated|lives|lived|founded|started|"
    r"studies|studied|likes|loves|enjoys|met|knows|is|was|got|became)\b"
)


def _carry_subject(text: str) -> str:
    """ "Alice joined Acme and moved to Boston" -> "Alice joined Acme. Alice moved to Boston"."""
    out = []
    for sentence in _sentences(text):
        subject = re.match(rf"({_NAME})\s+{_VERBS}", sentence)
        if subject:
            name = _trim_name(subject.group(1))
            sentence = re.sub(rf",?\s+and\s+(?={_VERBS})", f". {name} ", sentence)
        out.append(sentence)
    return "\n".join(out)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def _sentence_facts(
    sentence: str, reference_time: datetime, entities: dict[str, ExtractedEntity]
) -> list[ExtractedFact]:
    facts = []
    when = resolve_date(sentence, reference_time)
    for relation, pattern, s_type, o_type, ends in _FACT_PATTERNS:
        for match in pattern.finditer(sentence):
            subject, obj = _trim_name(match.group("s")), _trim_name(match.group("o"))
            if not subject or not obj or subject == obj:
                continue
            object_type = "Organization" if _ORG_SUFFIX.search(obj) else o_type
            _add_entity(entities, subject, s_type, sentence)
            _add_entity(entities, obj, object_type, sentence)
            facts.append(
                ExtractedFact(
                    source=subject,
                    relation=relation,
                    target=obj,
                    fact=sentence[:1000],
                    edge_type="temporal" if when and not ends else "semantic",
                    confidence=0.8,
                    valid_at=None if ends else (when.isoformat() if when else None),
                    invalid_at=(when or reference_time).isoformat() if ends else None,
                )
            )
    return facts


def _trim_name(name: str) -> str:
    words = name.split()
    while words and (words[0] in _STOP or words[0].lower() in _MONTHS):
        words.pop(0)
    while words and (words[-1] in _STOP or words[-1].lower().strip(".") in _MONTHS):
        words.pop()
    return " ".join(words).strip(" .,;:'\"")


def _names(sentence: str) -> list[str]:
    found = []
    for match in re.finditer(_NAME, sentence):
        name = _trim_name(match.group(0))
        if name and not name.isdigit() and len(name) > 1:
            found.append(name)
    return found


def _guess_type(name: str, sentence: str) -> str:
    if _ORG_SUFFIX.search(name):
        return "Organization"
    if re.search(rf"\b(in|to|from|near|visited)\s+{re.escape(name)}\b", sentence):
        return "Location"
    return "Entity"


def _add_entity(
    entities: dict[str, ExtractedEntity], name: str, entity_type: str, summary: str
) -> None:
    key = name.casefold()
    existing = entities.get(key)
    if existing is None:
        entities[key] = ExtractedEntity(name=name, entity_type=entity_type, summary=summary[:600])
    elif existing.entity_type == "Entity" and entity_type != "Entity":
        entities[key] = existing.model_copy(update={"entity_type": entity_type})


def resolve_date(text: str, reference: datetime) -> datetime | None:
    """The first date `text` states, resolved against `reference` (UTC midnight)."""
    ref = reference.astimezone(UTC)
    lowered = text.lower()
    if m := re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        return _day(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if m := re.search(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", text):
        return _day(int(m.group(3)), _MONTHS[m.group(1).lower()], int(m.group(2)))
    if m := re.search(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+(\d{{4}})\b", text):
        return _day(int(m.group(3)), _MONTHS[m.group(2).lower()], int(m.group(1)))
    if m := re.search(rf"\b{_MONTH}\s+(\d{{4}})\b", text):
        return _day(int(m.group(2)), _MONTHS[m.group(1).lower()], 1)
    if m := re.search(rf"\bin\s+{_MONTH}\b", text):
        month = _MONTHS[m.group(1).lower()]
        year = ref.year if month <= ref.month else ref.year - 1
        return _day(year, month, 1)
    if m := re.search(r"\bin\s+((?:19|20)\d{2})\b", text):
        return _day(int(m.group(1)), 1, 1)
    if "yesterday" in lowered:
        return _midnight(ref - timedelta(days=1))
    if "today" in lowered or "this morning" in lowered:
        return _midnight(ref)
    if "last week" in lowered:
        return _midnight(ref - timedelta(days=7))
    if "last month" in lowered:
        first = ref.replace(day=1)
        previous = first - timedelta(days=1)
        return _day(previous.year, previous.month, 1)
    if "last year" in lowered:
        return _day(ref.year - 1, 1, 1)
    if m := re.search(
        r"\b(\d+|a|an|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b", lowered
    ):
        count = {
            "a": 1,
            "an": 1,
            "one": 1,
            "two": 2,
            "three": 3,
            "four": 4,
            "five": 5,
            "six": 6,
        }.get(m.group(1)) or int(m.group(1))
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[m.group(2)] * count
        return _midnight(ref - timedelta(days=days))
    return None


def _day(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime.combine(date(year, month, day), datetime.min.time(), tzinfo=UTC)
    except ValueError:
        return None


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)
