"""The demo graph measured against `answer_key.toml`: what bench/demo.py prints and
tests/demo check. Reads a whole-tenant export (`export.snapshot.export_graph`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from surrealdb.data.types.record_id import RecordID

from kgapp.demo.dataset import answer_key
from kgapp.graph import stats
from kgapp.graph.export.snapshot import export_graph
from kgapp.graph.records import Entity, StoredFact, as_entity, as_stored_fact
from kgapp.graph.store import TenantStore
from kgapp.graph.time import visible


@dataclass
class DemoGraph:
    """The exported graph, indexed by name: current entities (not merged), every fact."""

    episodes: int
    entities: dict[str, Entity]  # id -> current entity
    merged: int  # entities merged into another
    aliases: dict[str, set[str]]  # entity id -> its aliases, folded
    facts: list[StoredFact]
    communities: int
    candidates: int
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    @classmethod
    async def read(cls, store: TenantStore) -> DemoGraph:
        """The tenant's whole graph, as it is now."""
        counts = await stats.graph_counts(store)
        exported = await export_graph(store)
        aliases: dict[str, set[str]] = {}
        for row in exported["alias"]:
            aliases.setdefault(str(row["entity"]), set()).add(row["name"].casefold())
        entities = [as_entity(row) for row in exported["entity"]]
        return cls(
            episodes=counts["episodes"],
            entities={str(e["id"]): e for e in entities if not e.get("merged_into")},
            merged=sum(1 for e in entities if e.get("merged_into")),
            aliases=aliases,
            facts=[as_stored_fact(row) for row in exported["relates_to"]],
            communities=len(exported["community"]),
            candidates=len(exported["dedup_candidate"]),
        )

    def named(self, name: str) -> list[str]:
        """Ids of current entities called `name` (case folded), by name or alias."""
        wanted = name.casefold()
        return [
            key
            for key, entity in self.entities.items()
            if entity["name"].casefold() == wanted or wanted in self.aliases.get(key, ())
        ]

    def name_of(self, record: RecordID | str) -> str:
        entity = self.entities.get(str(record))
        return entity["name"] if entity else ""

    def is_current(self, fact: StoredFact) -> bool:
        """True now, as the graph knows it now (kgapp/graph/time.py's rule)."""
        return visible(fact, self.now, self.now)

    def facts_between(self, source: str, relation: str, target: str) -> list[StoredFact]:
        sources, targets = set(self.named(source)), set(self.named(target))
        return [
            f
            for f in self.facts
            if f["relation"] == relation and str(f["in"]) in sources and str(f["out"]) in targets
        ]


@dataclass(frozen=True)
class DemoScore:
    expected_entities: tuple[int, int]
    missing_entities: list[str]
    junk: list[str]
    facts_found: tuple[int, int]
    missing_facts: list[str]
    dates_right: tuple[int, int]
    apart: tuple[int, int]
    aliases_merged: tuple[int, int]
    supersessions: tuple[int, int]


def demo_score(graph: DemoGraph) -> DemoScore:
    key = answer_key()
    expected = [name for names in key["entities"].values() for name in names]
    missing = [name for name in expected if not graph.named(name)]
    junk_names = {name.casefold() for name in key["junk"]}
    junk = sorted(e["name"] for e in graph.entities.values() if e["name"].casefold() in junk_names)
    found, missing_facts, dated, dated_right = 0, [], 0, 0
    for source, relation, target, when in key["facts"]:
        rows = graph.facts_between(source, relation, target)
        if not rows:
            missing_facts.append(f"{source} {relation} {target}")
            continue
        found += 1
        if when:
            dated += 1
            dated_right += any(r["valid_at"].strftime("%Y-%m") == when for r in rows)
    return DemoScore(
        expected_entities=(len(expected) - len(missing), len(expected)),
        missing_entities=missing,
        junk=junk,
        facts_found=(found, len(key["facts"])),
        missing_facts=missing_facts,
        dates_right=(dated_right, dated),
        apart=_apart(graph, key["apart"]),
        aliases_merged=_aliases(graph, key["aliases"]),
        supersessions=_supersessions(graph, key["supersessions"]["chains"]),
    )


def _apart(graph: DemoGraph, pairs: list[list[str]]) -> tuple[int, int]:
    kept = 0
    for a, b in pairs:
        ids_a, ids_b = set(graph.named(a)), set(graph.named(b))
        kept += bool(ids_a and ids_b and not ids_a & ids_b)
    return kept, len(pairs)


def _aliases(graph: DemoGraph, aliases: dict[str, list[str]]) -> tuple[int, int]:
    merged, total = 0, 0
    for name, others in aliases.items():
        owners = set(graph.named(name))
        for other in others:
            total += 1
            merged += bool(owners) and set(graph.named(other)) == owners
    return merged, total


def _supersessions(graph: DemoGraph, chains: list[list[str]]) -> tuple[int, int]:
    """A chain holds when the old fact is ended (a retired row superseded by another, or
    a revision with invalid_at) and the new one is current."""
    held = 0
    for source, relation, old, new in chains:
        ended = any(
            f.get("invalid_at") is not None or f.get("superseded_by") is not None
            for f in graph.facts_between(source, relation, old)
        )
        current = any(graph.is_current(f) for f in graph.facts_between(source, relation, new))
        held += ended and current
    return held, len(chains)
