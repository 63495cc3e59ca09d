"""The tenant's entity and relation types, and the type of each entity.

A name has one type per tenant, decided by its mentions: each mention gives the most
specific type its episode gave the entity (`mention_type`), and the entity takes the
type most of its mentions give. A broad type (Concept, then the generic Entity) only
where no mention gives a more specific one; a tie goes to the type said first (the
earliest episode time), then to the type's name, so that the order in which documents
came does not decide it. Ingestion applies it as each mention is written (ENTITY_SEEN),
removal, merges and undos after they move mentions (`entity_types_recount`).

A relation type may be single-valued: a subject holds it towards one object at a time
(WORKS_AT, LIVES_IN), so a new fact supersedes the old one by rule, with no LLM call.
Aliases map variant relation names (EMPLOYED_BY) onto the declared one (WORKS_AT).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import record_key
from kgapp.graph.resolution import names
from kgapp.graph.resolution.canonical import relation_name
from kgapp.graph.resolution.names import GENERIC_ENTITY_TYPE
from kgapp.graph.store import TenantStore

NAME_MAX = 80  # characters in a type's, relation's or alias's name, as stored
ENTITY_TYPE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_ ]*")
GENERIC_RELATION = "RELATED_TO"
# Types that give way to any more specific one, the broadest last (the ranks of
# queries.ENTITY_TYPE_WON say the same).
BROAD_ENTITY_TYPES = ("Concept", GENERIC_ENTITY_TYPE)


@dataclass(frozen=True)
class EntityType:
    name: str
    description: str = ""


@dataclass(frozen=True)
class RelationType:
    name: str
    description: str = ""
    single_valued: bool = False
    aliases: tuple[str, ...] = ()


class OntologyRow(TypedDict):
    """An entity type or a relation type as the `ontology` table stores it."""

    kind: str  # entity_type | relation_type
    name: str
    description: str
    single_valued: bool
    aliases: list[str]


class OntologyInvalid(ValueError):
    """An ontology that cannot be used; the message names each problem."""


@dataclass(frozen=True)
class Ontology:
    entity_types: tuple[EntityType, ...]
    relation_types: tuple[RelationType, ...]
    # Why this (the default) stands in for the tenant's stored ontology, which no longer
    # loads; empty when the ontology is the one the tenant has (or the default by choice).
    fallback: str = field(default="", compare=False)
    _relations: dict[str, RelationType] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for relation in self.relation_types:
            self._relations[relation.name] = relation
            for alias in relation.aliases:
                self._relations.setdefault(relation_name(alias), relation)

    def relation(self, name: str) -> str:
        """The declared name for a relation as extracted (aliases folded), UPPER_SNAKE."""
        snake = relation_name(name)
        declared = self._relations.get(snake)
        return declared.name if declared else snake

    def is_single_valued(self, relation: str) -> bool:
        declared = self._relations.get(relation)
        return bool(declared and declared.single_valued)

    def entity_type(self, name: str | None) -> str:
        """The declared type matching `name` case-insensitively, else the generic type."""
        wanted = (name or "").strip().casefold()
        for entity_type in self.entity_types:
            if entity_type.name.casefold() == wanted:
                return entity_type.name
        return GENERIC_ENTITY_TYPE


DEFAULT_ONTOLOGY = Ontology(
    entity_types=(
        EntityType("Person", "A human being, named or referred to by a role."),
        EntityType("Organization", "A company, institution, team, club or government body."),
        EntityType("Location", "A place: city, country, address, venue, region."),
        EntityType("Product", "A product, service, software or model."),
        EntityType("Event", "Something that happened or will happen at a time."),
        EntityType("Project", "A named piece of work, initiative or programme."),
        EntityType("Concept", "An idea, topic, skill, hobby or field."),
        EntityType("Document", "A book, paper, article, painting or other work."),
    ),
    relation_types=(
        RelationType(
            "WORKS_AT",
            "Person is employed by or works for an organization.",
            True,
            ("EMPLOYED_BY", "WORKS_FOR", "JOINED", "EMPLOYEE_OF", "WORK_AT", "WORK_FOR", "JOIN"),
        ),
        RelationType(
            "LIVES_IN",
            "Person resides in a place.",
            True,
            ("RESIDES_IN", "MOVED_TO", "BASED_IN", "LIVES_AT", "LIVE_IN", "MOVE_TO", "RELOCATE_TO"),
        ),
        RelationType("CEO_OF", "Person is the chief executive of an organization.", True),
        RelationType(
            "MARRIED_TO",
            "Person is married to another person.",
            True,
            ("SPOUSE_OF", "MARRY", "HUSBAND_OF", "WIFE_OF"),
        ),
        RelationType("HEADQUARTERED_IN", "Organization's headquarters are in a place.", True),
        RelationType(
            "MEMBER_OF", "Entity belongs to a group or organization.", False, ("BELONG_TO",)
        ),
        RelationType(
            "KNOWS",
            "Person knows another person.",
            False,
            ("FRIEND_OF", "FRIENDS_WITH", "KNOW", "MEET", "BEST_FRIEND_OF"),
        ),
        RelationType(
            "FAMILY_OF",
            "Person is a relative of another person.",
            False,
            tuple(
                f"{kin}_OF"
                for kin in (
                    *("MOTHER", "MOM", "MUM", "FATHER", "DAD", "PARENT", "PARENTS"),
                    *("SISTER", "BROTHER", "SIBLING", "SON", "DAUGHTER", "CHILD", "KID"),
                    *("GRANDMOTHER", "GRANDMA", "GRANDFATHER", "GRANDPA", "AUNT", "UNCLE"),
                    "COUSIN",
                )
            ),
        ),
        RelationType(
            "FOUNDED", "Entity founded an organization or project.", False, ("FOUND", "CO_FOUND")
        ),
        RelationType("OWNS", "Entity owns something.", False, ("OWN",)),
        RelationType(
            "LIKES",
            "Person likes or enjoys something.",
            False,
            ("ENJOYS", "LOVES", "LIKE", "LOVE", "ENJOY"),
        ),
        RelationType(
            "PARTICIPATED_IN",
            "Entity took part in an event or project.",
            False,
            ("ATTENDED", "ATTEND", "PARTICIPATE_IN", "TAKE_PART_IN"),
        ),
        RelationType("LOCATED_IN", "Place or organization lies within a place."),
        RelationType("PART_OF", "Entity is a part of a larger entity."),
        RelationType("CREATED", "Entity created a work or product.", False, ("CREATE",)),
        RelationType("USES", "Entity uses a product or tool.", False, ("USE",)),
        RelationType(
            "STUDIES_AT", "Person studies at an institution.", True, ("STUDY_AT", "STUDENT_AT")
        ),
        RelationType(GENERIC_RELATION, "Any other relation."),
    ),
)


async def ontology_load(store: TenantStore) -> Ontology:
    """The tenant's ontology; the default one until the tenant defines its own. A stored
    one that no longer loads (written before a rule it breaks) never stops reads or
    ingestion: the default stands in, and `fallback` says why."""
    rows = await store.query_one(queries.ONTOLOGY_ALL) or []
    if not rows:
        return DEFAULT_ONTOLOGY
    try:
        stored = ontology_from_rows(rows)
        ontology_check(stored)
    except (OntologyInvalid, KeyError, TypeError) as error:
        reason = f"The tenant's ontology could not be loaded ({error}); the default is in use"
        return replace(DEFAULT_ONTOLOGY, fallback=f"{reason} until a valid one is saved.")
    return stored


# Rows as stored, or as a request gave them: unchecked (a bad one is a KeyError or a
# TypeError here, which `ontology_load` turns into the default's fallback).
def ontology_from_rows(rows: list[OntologyRow]) -> Ontology:
    return Ontology(
        entity_types=tuple(
            EntityType(r["name"], r.get("description") or "")
            for r in rows
            if r["kind"] == "entity_type"
        ),
        relation_types=tuple(
            RelationType(
                relation_name(r["name"]),
                r.get("description") or "",
                bool(r.get("single_valued")),
                tuple(r.get("aliases") or ()),
            )
            for r in rows
            if r["kind"] == "relation_type"
        ),
    )


def ontology_check(ontology: Ontology) -> None:
    """Raises OntologyInvalid naming every problem: names too long once in their stored
    form (a relation name is stored UPPER_SNAKE, with R_ before a leading digit), an
    entity type name that is not a word, and names given twice."""
    problems = []
    for entity_type in ontology.entity_types:
        if not ENTITY_TYPE_NAME.fullmatch(entity_type.name) or len(entity_type.name) > NAME_MAX:
            problems.append(
                f"entity type {entity_type.name[:NAME_MAX]!r} must be a letter then letters,"
                f" digits, spaces or _, at most {NAME_MAX} characters"
            )
    for relation in ontology.relation_types:
        for name in (relation.name, *map(relation_name, relation.aliases)):
            if len(name) > NAME_MAX:
                problems.append(
                    f"relation {name[:20]}... is {len(name)} characters as stored"
                    f" (UPPER_SNAKE); the limit is {NAME_MAX}"
                )
    problems += _repeated("entity type", [t.name for t in ontology.entity_types])
    problems += _repeated("relation", [r.name for r in ontology.relation_types])
    if problems:
        raise OntologyInvalid("; ".join(problems))


def _repeated(kind: str, names: list[str]) -> list[str]:
    return [
        f"{kind} {name!r} is given more than once (relation names compare in UPPER_SNAKE form)"
        for name, count in sorted(Counter(names).items())
        if count > 1
    ]


def ontology_rows(ontology: Ontology) -> list[OntologyRow]:
    entity_types: list[OntologyRow] = [
        {
            "kind": "entity_type",
            "name": t.name,
            "description": t.description,
            "single_valued": False,
            "aliases": [],
        }
        for t in ontology.entity_types
    ]
    relation_types: list[OntologyRow] = [
        {
            "kind": "relation_type",
            "name": r.name,
            "description": r.description,
            "single_valued": r.single_valued,
            "aliases": list(r.aliases),
        }
        for r in ontology.relation_types
    ]
    return entity_types + relation_types


async def ontology_save(store: TenantStore, ontology: Ontology) -> None:
    """Replace the tenant's ontology as a whole, atomically; OntologyInvalid, with
    nothing written, if it would not load again."""
    ontology_check(ontology)
    await store.transaction(queries.ONTOLOGY_REPLACE, {"rows": ontology_rows(ontology)})


def mention_type(types: Sequence[str]) -> str:
    """The type one mention gives its entity, of the types its episode gave it (its own
    names' first): the first of the most specific ones."""
    return min(types, key=_breadth, default=GENERIC_ENTITY_TYPE)


def _breadth(entity_type: str) -> int:
    return BROAD_ENTITY_TYPES.index(entity_type) + 1 if entity_type in BROAD_ENTITY_TYPES else 0


async def entity_types_recount(store: TenantStore, ids: Iterable[RecordID]) -> set[str]:
    """Each entity of `ids` takes the type its mentions give (module docstring), and then
    the match key of its name as that type; returns the keys of those whose type changed.
    Run after the transaction that moved the mentions: an index scan inside it does not
    see them yet (as ENTITY_DEGREE_RECOUNT)."""
    wanted = {record_key(i): i for i in ids}
    if not wanted:
        return set()
    results = await store.query(queries.ENTITY_TYPE_RECOUNT, {"ids": list(wanted.values())})
    before, after = results[0], results[-1]  # rows before the recount, and after it
    was = {record_key(r["id"]): r["entity_type"] for r in before or []}
    batch = queries.Batch()
    changed = set()
    for row in after or []:
        if was.get(record_key(row["id"])) == row["entity_type"]:
            continue
        changed.add(record_key(row["id"]))
        key = names.match_key(row["name"], row["entity_type"]) or None
        batch.add(queries.ENTITY_MATCH_KEY_SET, id=row["id"], key=key)
    if len(batch):
        await store.query(batch.sql, batch.params)
    return changed
