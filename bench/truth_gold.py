"""The truth gold set for bench/truth.py: its texts (bench/gold/FORMAT.md), the graph the
product built from one of them, and the scoring of one against the other. bench/truth.py's
docstring defines the figures and the matching; this module computes them. A helper
module, not a benchmark: `make bench` skips it (bench/truth.py runs it)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import astuple, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import snowballstemmer

from kgapp.graph.export.snapshot import export_graph
from kgapp.graph.ontology import DEFAULT_ONTOLOGY, GENERIC_RELATION
from kgapp.graph.store import TenantStore

GOLD = Path(__file__).resolve().parent / "gold"
HALVES = ("dev", "heldout")
_stemmer = snowballstemmer.stemmer("english")
# --- Names and relation families -----------------------------------------------------


def name_key(name: str) -> str:
    key = " ".join(name.split()).casefold()
    return key[4:] if key.startswith("the ") else key


DECLARED_FAMILY = {
    "WORKS_AT": "employment",
    "CEO_OF": "role",
    "LIVES_IN": "residence",
    "HEADQUARTERED_IN": "location",
    "LOCATED_IN": "location",
    "MEMBER_OF": "membership",
    "STUDIES_AT": "study",
    "FAMILY_OF": "family",
    "KNOWS": "social",
    "MARRIED_TO": "partner",
    "FOUNDED": "founding",
    "OWNS": "ownership",
    "CREATED": "creation",
    "PARTICIPATED_IN": "participation",
    "LIKES": "likes",
    "USES": "uses",
    "PART_OF": "part_of",
}
SYMMETRIC = frozenset({"social", "partner", "family"})


@dataclass(frozen=True)
class WordRule:
    """Relation names with one of `words` (a run of words joined by _) are `family`."""

    family: str
    words: tuple[str, ...]
    reversed: bool = False  # the verb's subject is the gold object: "Acme HIRE Bob"

    def matches(self, stems: tuple[str, ...]) -> bool:
        return any(_has_run(stems, _stems(phrase.split("_"))) for phrase in self.words)


def _stems(words: Iterable[str]) -> tuple[str, ...]:
    return tuple(_stemmer.stemWord(word.lower()) for word in words)


def _has_run(stems: tuple[str, ...], run: tuple[str, ...]) -> bool:
    return any(stems[i : i + len(run)] == run for i in range(len(stems) - len(run) + 1))


# General English, first match wins: a plan first (WANT_TO_OPEN is a plan, not an
# opening), a specific run before a word it holds (PLAY_FOR before PLAY, WORK_ON before
# WORK; BOYFRIEND is no FRIEND since words are whole). HEAD only as HEAD_OF: "headed to
# the beach" is no role.
WORD_RULES = (
    WordRule("plan", ("PLAN", "WANT", "INTEND", "AIM_TO", "HOPE_TO")),
    WordRule("membership", ("MEMBER", "BELONG", "PLAY_FOR", "SIT_ON")),
    WordRule(
        "role",
        (
            "CEO",
            "CTO",
            "CFO",
            "COO",
            "CHIEF",
            "PRESIDENT",
            "DIRECTOR",
            "CHAIR",
            "CHAIRMAN",
            "CHAIRWOMAN",
            "CHAIRPERSON",
            "HEAD_OF",
            "LEAD",
            "LED",
            "MANAGE",
            "MANAGER",
            "VP",
            "OFFICER",
            "BOSS",
            "TREASURER",
            "SECRETARY",
            "CAPTAIN",
            "COACH",
        ),
    ),
    WordRule(
        "founding",
        ("FOUND", "FOUNDER", "COFOUND", "CO_FOUND", "ESTABLISH", "SET_UP", "START", "INCORPORATE"),
    ),
    WordRule(
        "participation",
        (
            "PARTICIPATE",
            "ATTEND",
            "COMPETE",
            "TAKE_PART",
            "TOOK_PART",
            "SPEAK_AT",
            "SPOKE_AT",
            "PRESENT_AT",
            "PERFORM_AT",
            "SIGN_UP",
            "REGISTER_FOR",
            "WORK_ON",
        ),
    ),
    WordRule("employment", ("WORK", "EMPLOYEE", "STAFF", "INTERN", "JOB_AT")),
    WordRule("employment", ("HIRE", "EMPLOY", "RECRUIT"), reversed=True),
    WordRule("study", ("STUDY", "STUDENT", "GRADUATE", "ENROL", "ENROLL", "ALUMNUS", "ALUMNA")),
    WordRule("residence", ("LIVE", "RESIDE", "RESIDENT", "MOVE_TO", "RELOCATE", "SETTLE_IN")),
    WordRule("location", ("LOCATE", "BASE", "HEADQUARTER", "HQ", "SITUATE")),
    WordRule(
        "partner",
        (
            "MARRY",
            "MARRIED",
            "SPOUSE",
            "HUSBAND",
            "WIFE",
            "DATE",
            "DATING",
            "ENGAGE",
            "BOYFRIEND",
            "GIRLFRIEND",
            "FIANCE",
            "FIANCEE",
        ),
    ),
    WordRule(
        "family",
        (
            "MOTHER",
            "MOM",
            "MUM",
            "FATHER",
            "DAD",
            "PARENT",
            "SISTER",
            "BROTHER",
            "SIBLING",
            "SON",
            "DAUGHTER",
            "CHILD",
            "KID",
            "GRANDMOTHER",
            "GRANDMA",
            "GRANDFATHER",
            "GRANDPA",
            "AUNT",
            "UNCLE",
            "COUSIN",
            "NIECE",
            "NEPHEW",
            "RELATIVE_OF",
        ),
    ),
    WordRule(
        "social",
        (
            "FRIEND",
            "KNOW",
            "KNEW",
            "MEET",
            "MET",
            "COLLEAGUE",
            "NEIGHBOR",
            "NEIGHBOUR",
            "MENTOR",
            "TEAMMATE",
            "COWORKER",
        ),
    ),
    WordRule(
        "ownership",
        ("OWN", "OWNER", "ACQUIRE", "BUY", "BOUGHT", "PURCHASE", "TAKE_OVER", "TOOK_OVER"),
    ),
    WordRule(
        "creation",
        (
            "CREATE",
            "WRITE",
            "WROTE",
            "WRITTEN",
            "BUILD",
            "BUILT",
            "DESIGN",
            "RELEASE",
            "PUBLISH",
            "PRODUCE",
            "DEVELOP",
            "AUTHOR",
            "COMPOSE",
            "INVENT",
            "LAUNCH",
        ),
    ),
    WordRule("likes", ("LIKE", "LOVE", "ENJOY", "PREFER", "FAN", "ADORE")),
    WordRule(
        "activity", ("PLAY", "PRACTISE", "PRACTICE", "DO", "DID", "TRAIN", "TAKE_UP", "TOOK_UP")
    ),
    WordRule("uses", ("USE", "RUN_ON", "RUNS_ON", "RELY_ON")),
    WordRule("part_of", ("PART", "SUBSIDIARY", "DIVISION", "BRANCH", "COMPONENT", "EPISODE")),
    WordRule(
        "supply",
        (
            "SUPPLY",
            "SUPPLIER",
            "SELL",
            "SOLD",
            "SPONSOR",
            "PARTNER",
            "CLIENT",
            "CUSTOMER",
            "VENDOR",
            "PROVIDE",
            "PROVIDER",
        ),
    ),
)


@dataclass(frozen=True)
class Family:
    name: str | None  # None: no family (matches gold "other" only)
    reversed: bool = False  # the fact's subject is the gold object


@functools.cache
def relation_family(relation: str) -> Family:
    """The family of a product relation name (see the module docstring)."""
    declared = DEFAULT_ONTOLOGY.relation(relation)
    if declared == GENERIC_RELATION:
        return Family(None)
    if declared in DECLARED_FAMILY:
        return Family(DECLARED_FAMILY[declared])
    words = declared.split("_")
    passive = len(words) > 1 and words[-1] == "BY"
    stems = _stems(words)
    rule = next((r for r in WORD_RULES if r.matches(stems)), None)
    return Family(rule.family if rule else None, (rule is not None and rule.reversed) != passive)


_PERIOD = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")


def in_period(period: str, moment: datetime | None) -> bool:
    """Whether `moment`'s UTC date lies in `period` ("2019", "2019-03" or "2019-03-14")."""
    return moment is not None and moment.astimezone(UTC).date().isoformat().startswith(period)


# --- The gold set ----------------------------------------------------------------------


@dataclass(frozen=True)
class GoldEntity:
    name: str
    type: str
    aliases: tuple[str, ...] = ()
    optional: bool = False

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(name_key(n) for n in (self.name, *self.aliases))


@dataclass(frozen=True)
class GoldFact:
    """A fact of the gold set, or a non-fact (`kind` set)."""

    subject: str
    family: str
    object: str
    start: str | None = None
    end: str | None = None
    optional: bool = False
    kind: str | None = None


@dataclass(frozen=True)
class GoldText:
    path: Path
    half: str
    style: str
    kind: str  # text or conversation
    reference_time: datetime
    text: str
    messages: tuple[dict[str, str], ...]
    entities: tuple[GoldEntity, ...]
    facts: tuple[GoldFact, ...]
    non_facts: tuple[GoldFact, ...] = ()

    def keys(self, name: str) -> frozenset[str]:
        """The keys of the entity called `name` in facts: its name's and its aliases'."""
        entity = next((e for e in self.entities if e.name == name), None)
        return entity.keys if entity else frozenset({name_key(name)})

    def upload(self) -> tuple[str, bytes]:
        """The file a team would upload: the text, or the messages as a JSON export."""
        if self.kind == "conversation":
            rows = [{k: m[k] for k in ("speaker", "text", "timestamp")} for m in self.messages]
            return f"{self.path.stem}.json", json.dumps(rows, indent=1).encode()
        return f"{self.path.stem}.txt", self.text.encode()


def _gold_fact(row: dict[str, Any]) -> GoldFact:
    for period in (row.get("start"), row.get("end")):
        if period is not None and not _PERIOD.fullmatch(period):
            raise ValueError(f"{period!r} is no year, month or day (YYYY[-MM[-DD]])")
    return GoldFact(
        row["subject"],
        row["relation"],
        row["object"],
        row.get("start"),
        row.get("end"),
        bool(row.get("optional")),
        row.get("kind"),
    )


def gold_load(path: Path, half: str) -> GoldText:
    """One annotated text (bench/gold/FORMAT.md); ValueError names the file at fault."""
    try:
        raw = json.loads(path.read_text())
        return GoldText(
            path=path,
            half=half,
            style=raw["style"],
            kind=raw["kind"],
            reference_time=datetime.fromisoformat(raw["reference_time"]),
            text=raw.get("text") or "",
            messages=tuple(raw.get("messages") or ()),
            entities=tuple(
                GoldEntity(
                    e["name"], e["type"], tuple(e.get("aliases") or ()), bool(e.get("optional"))
                )
                for e in raw["entities"]
            ),
            facts=tuple(_gold_fact(f) for f in raw.get("facts") or ()),
            non_facts=tuple(_gold_fact(f) for f in raw.get("non_facts") or ()),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path}: not in the gold format: {error!r}") from error


def half_of(path: Path) -> str:
    """dev or heldout by the folder a gold file is in; "file" elsewhere."""
    parent = path.resolve().parent
    return next((h for h in HALVES if parent == (GOLD / h).resolve()), "file")


# --- The product's graph -----------------------------------------------------------------


@dataclass(frozen=True)
class ProductEntity:
    name: str
    type: str
    aliases: tuple[str, ...] = ()
    summary: str = ""

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(name_key(n) for n in (self.name, *self.aliases))


@dataclass(frozen=True)
class ProductFact:
    subject: ProductEntity
    relation: str
    object: ProductEntity
    sentence: str = ""
    valid_at: datetime | None = None
    invalid_at: datetime | None = None

    def holds(self, now: datetime) -> bool:
        return self.invalid_at is None or self.invalid_at > now

    def __str__(self) -> str:
        times = f"{_day(self.valid_at)} .. {_day(self.invalid_at)}"
        return f"{self.subject.name} -{self.relation}-> {self.object.name} [{times}]"


def _day(moment: datetime | None) -> str:
    return moment.astimezone(UTC).date().isoformat() if moment else "-"


@dataclass(frozen=True)
class ProductGraph:
    entities: tuple[ProductEntity, ...]
    facts: tuple[ProductFact, ...]

    @classmethod
    async def read(cls, store: TenantStore, now: datetime) -> ProductGraph:
        """The current entities (merges followed) and the facts believed at `now`."""
        exported = await export_graph(store)
        rows = {str(e["id"]): e for e in exported["entity"]}

        def survivor(record: Any) -> str:
            key = str(record)
            for _ in range(64):  # a merge chain is short; never loop forever
                if not rows.get(key, {}).get("merged_into"):
                    break
                key = str(rows[key]["merged_into"])
            return key

        aliases: dict[str, list[str]] = {}
        for alias in exported["alias"]:
            aliases.setdefault(survivor(alias["entity"]), []).append(alias["name"])
        entities = {
            key: ProductEntity(
                row["name"],
                row.get("entity_type") or "",
                tuple(aliases.get(key, ())),
                row.get("summary") or "",
            )
            for key, row in rows.items()
            if not row.get("merged_into")
        }

        def entity(record: Any) -> ProductEntity:
            key = survivor(record)
            return entities.get(key) or ProductEntity(f"<missing {key}>", "")

        facts = tuple(
            ProductFact(
                entity(f["in"]),
                f["relation"],
                entity(f["out"]),
                f.get("fact") or "",
                f.get("valid_at"),
                f.get("invalid_at"),
            )
            for f in exported["relates_to"]
            if f.get("expired_at") is None or f["expired_at"] > now
        )
        return cls(tuple(entities.values()), facts)


# --- Scoring ---------------------------------------------------------------------------


def fact_matches(fact: ProductFact, gold: GoldFact, text: GoldText) -> bool:
    """Endpoints and family as the module docstring says."""
    family = relation_family(fact.relation)
    if gold.family != "other" and family.name != gold.family:
        return False
    subject, obj = text.keys(gold.subject), text.keys(gold.object)
    ends = (
        (fact.object.keys, fact.subject.keys)
        if family.reversed
        else (fact.subject.keys, fact.object.keys)
    )
    if ends[0] & subject and ends[1] & obj:
        return True
    return gold.family in SYMMETRIC and bool(ends[1] & subject and ends[0] & obj)


class Counts:
    """Counts that add field by field (a dataclass of ints), and read as a dict."""

    def __add__(self, other: Self) -> Self:
        return type(self)(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def as_dict(self) -> dict[str, int]:
        return dict(zip(self.__dataclass_fields__, astuple(self), strict=True))  # type: ignore[attr-defined]


def aligned(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows as left-aligned columns, a rule under the first (the header)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  " + "  ".join("-" * w for w in widths))
    return lines


@dataclass(frozen=True)
class Score(Counts):
    """Counts over one or more texts; the figures are ratios of them."""

    texts: int = 0
    entities: int = 0
    entities_right: int = 0
    types_right: int = 0
    gold_entities: int = 0
    gold_entities_found: int = 0
    facts: int = 0
    facts_right: int = 0
    gold_facts: int = 0
    gold_facts_found: int = 0
    starts: int = 0
    starts_right: int = 0
    endings: int = 0
    endings_found: int = 0
    endings_any: int = 0
    non_facts: int = 0
    non_facts_current: int = 0


Matches = list[tuple[GoldFact, list[ProductFact]]]


def fact_matching(text: GoldText, graph: ProductGraph) -> Matches:
    """Each gold fact with the product facts that match it."""
    return [(g, [f for f in graph.facts if fact_matches(f, g, text)]) for g in text.facts]


def _entity_counts(text: GoldText, graph: ProductGraph) -> dict[str, int]:
    named = [(p, [g for g in text.entities if p.keys & g.keys]) for p in graph.entities]
    wanted = [g for g in text.entities if not g.optional]
    return {
        "entities": len(graph.entities),
        "entities_right": sum(bool(golds) for _, golds in named),
        "types_right": sum(any(p.type == g.type for g in golds) for p, golds in named),
        "gold_entities": len(wanted),
        "gold_entities_found": sum(any(g.keys & p.keys for p in graph.entities) for g in wanted),
    }


def _fact_counts(graph: ProductGraph, matches: Matches) -> dict[str, int]:
    matching = {id(f) for _, facts in matches for f in facts}
    wanted = [facts for g, facts in matches if not g.optional]
    return {
        "facts": len(graph.facts),
        "facts_right": sum(id(f) in matching for f in graph.facts),
        "gold_facts": len(wanted),
        "gold_facts_found": sum(bool(facts) for facts in wanted),
    }


def _time_counts(matches: Matches) -> dict[str, int]:
    started = [(g, facts) for g, facts in matches if facts and g.start]
    ended = [(g, facts) for g, facts in matches if g.end and not g.optional]
    return {
        "starts": len(started),
        "starts_right": sum(
            any(in_period(g.start or "", f.valid_at) for f in facts) for g, facts in started
        ),
        "endings": len(ended),
        "endings_found": sum(
            any(in_period(g.end or "", f.invalid_at) for f in facts) for g, facts in ended
        ),
        "endings_any": sum(any(f.invalid_at for f in facts) for _, facts in ended),
    }


def score_text(text: GoldText, graph: ProductGraph, now: datetime) -> Score:
    """One text's counts (the figures are defined in the module docstring)."""
    matches = fact_matching(text, graph)
    current = [f for f in graph.facts if f.holds(now)]
    return Score(
        texts=1,
        **_entity_counts(text, graph),
        **_fact_counts(graph, matches),
        **_time_counts(matches),
        non_facts=len(text.non_facts),
        non_facts_current=sum(
            any(fact_matches(f, n, text) for f in current) for n in text.non_facts
        ),
    )


def misses(text: GoldText, graph: ProductGraph) -> list[str]:
    """For --show: what matches nothing, on either side, and dates that are wrong."""
    matches = fact_matching(text, graph)
    matching = {id(f) for _, facts in matches for f in facts}
    lines = [
        f"    entity matching nothing: {p.name} ({p.type})"
        for p in graph.entities
        if not any(p.keys & g.keys for g in text.entities)
    ]
    lines += [
        f"    fact matching nothing: {f}  ({relation_family(f.relation).name})"
        for f in graph.facts
        if id(f) not in matching
    ]
    for g, facts in matches:
        label = f"{g.subject} {g.family} {g.object} [{g.start or '-'} .. {g.end or '-'}]"
        if not facts and not g.optional:
            lines.append(f"    gold fact missed: {label}")
        elif g.start and facts and not any(in_period(g.start, f.valid_at) for f in facts):
            lines.append(f"    start wrong: {label}; product: {'; '.join(map(str, facts))}")
    return lines


@dataclass(frozen=True)
class Figure:
    label: str
    part: str  # a Score count
    whole: str
    at_least: float | None = None  # the target share, the held-out half's
    a_count: bool = False  # a count whose target is 0, not a share

    def value(self, score: Score) -> float | None:
        part, whole = getattr(score, self.part), getattr(score, self.whole)
        if self.a_count:
            return part
        return part / whole if whole else None

    @property
    def target(self) -> str:
        if self.a_count:
            return "= 0"
        return "" if self.at_least is None else f">= {self.at_least * 100:.0f}%"

    def cell(self, score: Score) -> str:
        part, whole = getattr(score, self.part), getattr(score, self.whole)
        if self.a_count:
            return f"{part}/{whole}"
        return f"{part / whole * 100:.0f}% {part}/{whole}" if whole else "-"

    def met(self, score: Score) -> str:
        value = self.value(score)
        if not self.target or value is None or not getattr(score, self.whole):
            return ""
        right = value == 0 if self.a_count else value >= (self.at_least or 0)
        return "yes" if right else "no"


FIGURES = (
    Figure("entity P", "entities_right", "entities", 0.85),
    Figure("entity R", "gold_entities_found", "gold_entities"),
    Figure("types right", "types_right", "entities_right"),
    Figure("fact P", "facts_right", "facts", 0.80),
    Figure("fact R", "gold_facts_found", "gold_facts"),
    Figure("starts right", "starts_right", "starts", 0.90),
    Figure("endings found", "endings_found", "endings", 0.80),
    Figure("  any end", "endings_any", "endings"),
    Figure("non-facts current", "non_facts_current", "non_facts", a_count=True),
)
