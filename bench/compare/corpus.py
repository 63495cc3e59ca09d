"""The corpus the three systems are compared on, generated from a seed: a few hundred
dated episodes about people, organisations, places and versioned products changing over
time, with gold entities, gold facts (and when each stopped holding) and questions.

What makes it hard, on purpose:
- name variants of one entity ("Dr. Maria Lopez", "Maria Lopez"; "Northwind Labs Inc.",
  "Northwind Labs") that must merge;
- look-alike names of different entities that must not: versions ("Atlas 2" and
  "Atlas 3"), qualifiers ("Apex Health" and "Apex Health Europe"), one letter apart
  ("Maria Lopez" and "Mario Lopez");
- contradictions: a person's employer, city and title, a company's headquarters and the
  product version it runs are single-valued, so a later one ends the earlier;
- out-of-order arrival: some episodes reach the system long after later news did, so
  their fact must be stored as already ended, not as current.

Every fact's sentence is unique and written with the surface names its episode uses, so
a system's stored fact text tells which gold fact it is, and its endpoint names which
gold entities it joined. `python bench/compare/corpus.py` prints a summary.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property

# Single-valued relations: a newer fact about the same subject ends the older one.
FUNCTIONAL = {"WORKS_AT", "LIVES_IN", "HEADQUARTERED_IN", "USES", "HAS_TITLE"}
START = datetime(2019, 1, 7, tzinfo=UTC)
QUESTION_WORDS = frozenset(
    {
        "what",
        "where",
        "which",
        "who",
        "when",
        "how",
        "does",
        "did",
        "was",
        "were",
        "the",
        "and",
        "for",
        "with",
        "there",
    }
)


@dataclass(frozen=True)
class Entity:
    id: str
    name: str  # canonical
    type: str  # Person, Organization, Location, Product, Title
    variants: tuple[str, ...]  # every surface form, the canonical name first


@dataclass
class Fact:
    id: str
    subject: str  # entity id
    relation: str
    object: str  # entity id
    text: str  # the sentence, unique, with the episode's surface names
    valid_from: datetime
    episode: str
    valid_to: datetime | None = None  # set once the whole history is known

    def holds_at(self, moment: datetime) -> bool:
        return self.valid_from <= moment and (self.valid_to is None or moment < self.valid_to)


@dataclass(frozen=True)
class Mention:
    entity: str
    surface: str


@dataclass
class Episode:
    id: str
    reference_time: datetime
    text: str
    mentions: list[Mention]
    facts: list[str]  # fact ids stated here
    late: bool = False  # arrives after episodes dated later than it
    # "message": a conversation's turns, one "Speaker: text" line each (as the product
    # ingests an uploaded chat, and graphiti's EpisodeType.message); "text": prose.
    source: str = "text"

    def surface_of(self, entity: str) -> str:
        """The name this episode calls `entity` by."""
        return next(m.surface for m in self.mentions if m.entity == entity)


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    answer: str  # fact id
    at: datetime | None  # None: now
    entities: tuple[str, ...]  # surface names in the question


@dataclass
class Corpus:
    entities: dict[str, Entity]
    facts: dict[str, Fact]
    episodes: list[Episode]  # in arrival order
    questions: list[Question]
    seed: int

    @cached_property
    def entity_of_surface(self) -> dict[str, str]:
        return {v: e.id for e in self.entities.values() for v in e.variants}

    @cached_property
    def fact_of_text(self) -> dict[str, Fact]:
        return {f.text: f for f in self.facts.values()}

    @cached_property
    def episode_by_id(self) -> dict[str, Episode]:
        return {e.id: e for e in self.episodes}

    @cached_property
    def entity_of_folded(self) -> dict[str, str]:
        return {k.casefold(): v for k, v in self.entity_of_surface.items()}

    def entity_of(self, name: str) -> str | None:
        """The gold entity a surface name stands for (exact, then ignoring case)."""
        name = name.strip()
        return self.entity_of_surface.get(name) or self.entity_of_folded.get(name.casefold())

    def same_entity(self, a: str, b: str) -> bool:
        one, other = self.entity_of(a), self.entity_of(b)
        return one is not None and one == other

    def facts_in(self, text: str) -> list[Fact]:
        """The gold facts a stored text holds: one sentence, or a merged description of
        several (LightRAG joins them)."""
        exact = self.fact_of_text.get(text.strip())
        if exact is not None:
            return [exact]
        return [f for t, f in self.fact_of_text.items() if t in text]

    def fact_in(self, text: str) -> Fact | None:
        """The gold fact whose sentence `text` is, or the first it holds."""
        found = self.facts_in(text)
        return found[0] if found else None

    def conflict(self, a: Fact, b: Fact) -> bool:
        """Whether two facts cannot both hold at once: the same subject and single-valued
        relation with different objects (whichever is older ends)."""
        return (
            a.id != b.id
            and a.relation == b.relation
            and a.relation in FUNCTIONAL
            and a.subject == b.subject
            and a.object != b.object
            and self.line(a) == self.line(b)
        )

    def line(self, fact: Fact) -> str:
        """A product's line ("Atlas" for "Atlas 3"): versions of different lines coexist."""
        return self.entities[fact.object].name.split()[0] if fact.relation == "USES" else ""

    def episode_in(self, prompt: str) -> list[Episode]:
        """The episodes whose text `prompt` carries, in arrival order."""
        return [e for e in self.episodes if e.text in prompt]

    def description(self, episode: Episode, entity: str) -> str:
        """What a perfect model writes about `entity` from `episode`, the same for every
        system that asks: the episode's gold sentences about it, else the sentence of
        the episode that names it."""
        stated = [
            self.facts[f].text
            for f in episode.facts
            if entity in (self.facts[f].subject, self.facts[f].object)
        ]
        if stated:
            return " ".join(stated)
        surface = episode.surface_of(entity)
        sentences = re.split(r"(?<=[.!?])\s+|\n", episode.text)
        return next((s for s in sentences if surface in s), surface)

    def keywords(self, question: str) -> tuple[list[str], list[str]]:
        """A perfect keyword extraction, the same for every system that asks for one:
        (high level: the question's other content words, low level: the gold names it
        holds, longest first, so "Apex Health Europe" is not also read as "Apex Health")."""
        low: list[str] = []
        rest = question
        for surface in sorted(self.entity_of_surface, key=len, reverse=True):
            if re.search(r"(?<!\w)" + re.escape(surface) + r"(?!\w)", rest):
                low.append(surface)
                rest = rest.replace(surface, " ")
        high = [w for w in re.findall(r"[A-Za-z]{3,}", rest) if w.lower() not in QUESTION_WORDS]
        return high, low

    def ended_facts(self) -> list[Fact]:
        return [f for f in self.facts.values() if f.valid_to is not None]

    def current_facts(self) -> list[Fact]:
        return [f for f in self.facts.values() if f.valid_to is None]


# -- the world -------------------------------------------------------------------------

PEOPLE = [
    ("Maria Lopez", ("Dr. Maria Lopez",)),
    ("Mario Lopez", ()),
    ("Aisha Khan", ("Aisha R. Khan",)),
    ("Tomas Novak", ("Tomáš Novák",)),
    ("Priya Raman", ("Dr. Priya Raman",)),
    ("Priya Ramesh", ()),
    ("Jonas Weber", ("Jonas M. Weber",)),
    ("Chen Wei", ()),
    ("Chen Wen", ()),
    ("Lucia Ferreira", ("Lúcia Ferreira",)),
    ("Daniel Okafor", ("Dan Okafor",)),
    ("Sofia Rossi", ()),
    ("Sofia Russo", ()),
    ("Omar Haddad", ("Omar El Haddad",)),
    ("Hannah Becker", ()),
    ("Kenji Sato", ("Kenji Satō",)),
    ("Elena Petrova", ()),
    ("Liam O'Brien", ("Liam OBrien",)),
    ("Grace Mensah", ()),
    ("Ivan Horvat", ()),
]
ORGS = [
    ("Northwind Labs", ("Northwind Labs Inc.",)),
    ("Northwind Logistics", ()),
    ("Apex Health", ("Apex Health Ltd",)),
    ("Apex Health Europe", ()),
    ("Bluefin Analytics", ("Bluefin Analytics GmbH",)),
    ("Cobalt Robotics", ()),
    ("Cobalt Robotics Japan", ()),
    ("Helios Energy", ("Helios Energy plc",)),
    ("Orbital Foods", ()),
    ("Quartz Security", ("Quartz Security LLC",)),
    ("Redwood Bank", ()),
    ("Redwood Capital", ()),
]
CITIES = [
    "Lisbon",
    "Berlin",
    "Toronto",
    "Nairobi",
    "Osaka",
    "Austin",
    "Dublin",
    "Porto",
    "Munich",
    "Seoul",
    "Lyon",
    "Denver",
]
PRODUCT_LINES = [("Atlas", "v"), ("Nimbus", "v"), ("Vega", "release ")]
TITLES = [
    "data engineer",
    "senior data engineer",
    "engineering manager",
    "head of data",
    "product manager",
    "director of research",
    "CTO",
]


def _key(prefix: str, name: str) -> str:
    return prefix + ":" + "".join(c if c.isalnum() else "_" for c in name.lower())


def _date(moment: datetime) -> str:
    return f"{moment.day} {moment:%B %Y}"


@dataclass
class _World:
    rng: random.Random
    entities: dict[str, Entity] = field(default_factory=dict)
    facts: dict[str, Fact] = field(default_factory=dict)
    episodes: list[Episode] = field(default_factory=list)
    state: dict[tuple[str, str], str] = field(default_factory=dict)  # (subject, relation) -> object

    def add(self, prefix: str, name: str, kind: str, variants: tuple[str, ...] = ()) -> str:
        key = _key(prefix, name)
        self.entities[key] = Entity(key, name, kind, (name, *variants))
        return key

    def related(self, subject: str, relation: str, obj: str) -> bool:
        """Whether a fact already says so (either way round): once is news, twice is not."""
        return any(
            f.relation == relation and {f.subject, f.object} == {subject, obj}
            for f in self.facts.values()
        )

    def surface(self, key: str) -> str:
        entity = self.entities[key]
        # Variants are used a third of the time, so merges matter but canonical names lead.
        if len(entity.variants) > 1 and self.rng.random() < 0.33:
            return self.rng.choice(entity.variants[1:])
        return entity.name


def generate(episodes: int = 300, seed: int = 7) -> Corpus:
    rng = random.Random(seed)
    world = _World(rng)
    people = [world.add("person", n, "Person", v) for n, v in PEOPLE]
    orgs = [world.add("org", n, "Organization", v) for n, v in ORGS]
    cities = [world.add("city", n, "Location") for n in CITIES]
    products: dict[str, list[str]] = {}
    for line, sep in PRODUCT_LINES:
        versions = []
        for number in range(1, 6):
            name = f"{line} {number}"
            versions.append(world.add("product", name, "Product", (f"{line} {sep}{number}",)))
        products[line] = versions
    titles = [world.add("title", t, "Title") for t in TITLES]

    moment = START
    drafts: list[Episode] = []
    for index in range(episodes):
        moment += timedelta(days=rng.randint(2, 9), hours=rng.randint(0, 12))
        drafts.append(_episode(world, index, moment, people, orgs, cities, products, titles))
    _close_intervals(world)
    arrival = _arrival_order(drafts, rng)
    corpus = Corpus(world.entities, world.facts, arrival, [], seed)
    corpus.questions = _questions(corpus, rng)
    return corpus


def _episode(
    world: _World,
    index: int,
    moment: datetime,
    people: list[str],
    orgs: list[str],
    cities: list[str],
    products: dict[str, list[str]],
    titles: list[str],
) -> Episode:
    rng = world.rng
    kind = rng.choices(
        ["job", "move", "hq", "upgrade", "title", "partner", "studied"],
        weights=[30, 18, 10, 16, 14, 7, 5],
    )[0]
    when = _date(moment)
    episode = Episode(f"ep{index:04d}", moment, "", [], [])
    parts: list[str] = []

    def fact(subject: str, relation: str, obj: str, text: str) -> None:
        fid = f"f{len(world.facts):05d}"
        world.facts[fid] = Fact(fid, subject, relation, obj, text, moment, episode.id)
        episode.facts.append(fid)
        if relation in FUNCTIONAL:
            world.state[(subject, relation)] = obj

    def name(key: str) -> str:
        surface = world.surface(key)
        episode.mentions.append(Mention(key, surface))
        return surface

    if kind == "job":
        person = rng.choice(people)
        current = world.state.get((person, "WORKS_AT"))
        org = rng.choice([o for o in orgs if o != current])
        who, where = name(person), name(org)
        if current is not None:
            before = name(current)
            parts.append(f"On {when}, {who} left {before} and joined {where}.")
        else:
            parts.append(f"On {when}, {who} joined {where}.")
        fact(person, "WORKS_AT", org, f"{who} works at {where} (since {when}).")
    elif kind == "move":
        person = rng.choice(people)
        current = world.state.get((person, "LIVES_IN"))
        city = rng.choice([c for c in cities if c != current])
        who, there = name(person), name(city)
        parts.append(f"As of {when}, {who} lives in {there}.")
        fact(person, "LIVES_IN", city, f"{who} lives in {there} (since {when}).")
    elif kind == "hq":
        org = rng.choice(orgs)
        current = world.state.get((org, "HEADQUARTERED_IN"))
        city = rng.choice([c for c in cities if c != current])
        company, there = name(org), name(city)
        parts.append(f"{company} moved its headquarters to {there} on {when}.")
        fact(
            org, "HEADQUARTERED_IN", city, f"{company} is headquartered in {there} (since {when})."
        )
    elif kind == "upgrade":
        # Only to a newer version: a restated one is no news, and must not end itself.
        choices = [
            (o, line, v)
            for o in orgs
            for line, versions in products.items()
            for v in _newer(versions, world.state.get((o, "USES:" + line)))
        ]
        org, line, version = rng.choice(choices)
        current = world.state.get((org, "USES:" + line))
        company, product = name(org), name(version)
        if current is not None and current != version:
            parts.append(f"On {when}, {company} upgraded from {name(current)} to {product}.")
        else:
            parts.append(f"On {when}, {company} started using {product}.")
        fact(org, "USES", version, f"{company} runs {product} (since {when}).")
        world.state[(org, "USES:" + line)] = version
    elif kind == "title":
        person = rng.choice(people)
        current = world.state.get((person, "HAS_TITLE"))
        title = rng.choice([t for t in titles if t != current])
        who, role = name(person), name(title)
        parts.append(f"{who} became {role} on {when}.")
        fact(person, "HAS_TITLE", title, f"{who} holds the title {role} (since {when}).")
    elif kind == "partner":
        one, other = rng.choice(
            [
                (a, b)
                for a in orgs
                for b in orgs
                if a != b and not world.related(a, "PARTNERS_WITH", b)
            ]
        )
        a, b = name(one), name(other)
        parts.append(f"On {when}, {a} announced a partnership with {b}.")
        fact(one, "PARTNERS_WITH", other, f"{a} partners with {b} (announced {when}).")
    else:
        person, org = rng.choice(
            [(p, o) for p in people for o in orgs if not world.related(p, "TRAINED_BY", o)]
        )
        who, where = name(person), name(org)
        parts.append(f"On {when}, {who} finished a training course run by {where}.")
        fact(person, "TRAINED_BY", org, f"{who} completed training at {where} ({when}).")
    episode.text = " ".join(parts)
    return episode


def _newer(versions: list[str], current: str | None) -> list[str]:
    return versions if current is None else versions[versions.index(current) + 1 :]


def _close_intervals(world: _World) -> None:
    """Each single-valued fact ends where the next one about its subject begins (in
    valid time; products count per line, so "Atlas" and "Nimbus" versions coexist)."""
    chains: dict[tuple[str, str], list[Fact]] = defaultdict(list)
    for fact in world.facts.values():
        if fact.relation in FUNCTIONAL:
            chains[(fact.subject, _line(world, fact))].append(fact)
    for chain in chains.values():
        chain.sort(key=lambda f: f.valid_from)
        for older, newer in zip(chain, chain[1:], strict=False):
            older.valid_to = newer.valid_from


def _line(world: _World, fact: Fact) -> str:
    if fact.relation != "USES":
        return fact.relation
    return "USES:" + world.entities[fact.object].name.split()[0]


def _arrival_order(drafts: list[Episode], rng: random.Random) -> list[Episode]:
    """Chronological, but one episode in ten arrives 15 to 40 places late."""
    order = list(drafts)
    for episode in rng.sample(drafts, len(drafts) // 10):
        at = order.index(episode)
        order.pop(at)
        late = min(len(order), at + rng.randint(15, 40))
        order.insert(late, episode)
        episode.late = late > at
    return order


def _questions(corpus: Corpus, rng: random.Random) -> list[Question]:
    ask = {
        "WORKS_AT": ("Where does {s} work?", "Where did {s} work on {d}?"),
        "LIVES_IN": ("Where does {s} live?", "Where did {s} live on {d}?"),
        "HEADQUARTERED_IN": ("Where is {s} headquartered?", "Where was {s} headquartered on {d}?"),
        "HAS_TITLE": ("What is {s}'s title?", "What was {s}'s title on {d}?"),
        "USES": ("Which {line} version does {s} run?", "Which {line} version did {s} run on {d}?"),
    }
    questions: list[Question] = []
    for fact in sorted(corpus.facts.values(), key=lambda f: f.id):
        if fact.relation not in ask:
            continue
        subject = corpus.entities[fact.subject].name
        line = corpus.entities[fact.object].name.split()[0]
        now, then = ask[fact.relation]
        if fact.valid_to is None:
            text = now.format(s=subject, line=line)
            questions.append(Question(f"q{len(questions):04d}", text, fact.id, None, (subject,)))
        elif fact.valid_to - fact.valid_from > timedelta(days=4):
            middle = fact.valid_from + (fact.valid_to - fact.valid_from) / 2
            moment = middle.replace(hour=12, minute=0, second=0, microsecond=0)
            text = then.format(s=subject, line=line, d=_date(moment))
            questions.append(Question(f"q{len(questions):04d}", text, fact.id, moment, (subject,)))
    rng.shuffle(questions)
    current = [q for q in questions if q.at is None][:60]
    past = [q for q in questions if q.at is not None][:60]
    return current + past


def summary(corpus: Corpus) -> str:
    late = sum(e.late for e in corpus.episodes)
    variants = sum(len(e.variants) - 1 for e in corpus.entities.values())
    return (
        f"{len(corpus.episodes)} episodes ({late} late), {len(corpus.entities)} entities "
        f"({variants} name variants), {len(corpus.facts)} facts "
        f"({len(corpus.ended_facts())} ended by a later one), {len(corpus.questions)} "
        f"questions ({sum(q.at is not None for q in corpus.questions)} point-in-time)"
    )


if __name__ == "__main__":
    generated = generate()
    print(summary(generated))
    for episode in generated.episodes[:8]:
        print(f"  {episode.reference_time:%Y-%m-%d} {episode.text}")
