"""A tenant's graph as tests and benchmarks compare it, read through the core's own
reads (kgapp/graph/export/snapshot.py and the episode list): no SurrealQL of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgapp.graph.export.snapshot import export_graph
from kgapp.graph.ingest.service import episode_list
from kgapp.graph.records import Episode, JsonObject, record_key
from kgapp.graph.store import TenantGraph, TenantStore

EPISODES_AT_MOST = 1_000_000  # every episode of a test's or a benchmark's tenant


@dataclass(frozen=True)
class GraphRead:
    """A tenant's graph tables (as export_graph gives them) and its episodes."""

    tables: dict[str, list[JsonObject]]
    episodes: list[Episode]

    def names(self) -> dict[str, str]:
        """Each entity's name by its record key."""
        return {record_key(e["id"]): e["name"] for e in self.tables["entity"]}


async def _read(store: TenantStore) -> GraphRead:
    episodes = await episode_list(store, saga=None, document=None, limit=EPISODES_AT_MOST, offset=0)
    return GraphRead(await export_graph(store), episodes)


def graph_read(graph: TenantGraph) -> GraphRead:
    return graph.run(_read)


def graph_of(graph: TenantGraph) -> dict[str, Any]:
    """Episodes, entities and facts by their record keys: two ingests of the same input
    into two tenants give the same (episode and entity keys come from their content)."""
    read = graph_read(graph)
    facts = [
        [
            record_key(f["in"]),
            f["relation"],
            record_key(f["out"]),
            f["fact"],
            f["valid_at"],
            f.get("invalid_at"),
        ]
        for f in read.tables["relates_to"]
    ]
    return {
        "episodes": sorted(record_key(e["id"]) for e in read.episodes),
        "entities": sorted(
            [record_key(e["id"]), e["name"], e["entity_type"]] for e in read.tables["entity"]
        ),
        "facts": sorted(facts, key=str),
    }


def graph_counts(graph: TenantGraph) -> dict[str, Any]:
    """How many episodes, and the entities (name, type) and facts (end names) held."""
    read = graph_read(graph)
    names = read.names()
    return {
        "episodes": len(read.episodes),
        "entities": sorted((e["name"], e["entity_type"]) for e in read.tables["entity"]),
        "facts": sorted(
            (names[record_key(f["in"])], names[record_key(f["out"])])
            for f in read.tables["relates_to"]
        ),
    }
