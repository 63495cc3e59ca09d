"""The graph at a moment as GraphML and CSV: networkx and the csv module read back
exactly the facts visible there (counted here from the whole graph), with the entities
they join; text that XML or a spreadsheet would choke on arrives intact or defused."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import networkx as nx

from kgapp.graph.export.moment import FACT_COLUMNS, entities_csv, facts_csv, graphml
from kgapp.graph.export.snapshot import export_graph
from kgapp.graph.records import record_key
from kgapp.graph.time import Moment
from tests.graph.export.test_jsonl import built

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def visible(fact: dict, moment: Moment) -> bool:
    """Counted here, not with the code under test."""
    return (
        fact["valid_at"] <= moment.as_of
        and (fact.get("invalid_at") is None or fact["invalid_at"] > moment.as_of)
        and fact["created_at"] <= moment.known_at
        and (fact.get("expired_at") is None or fact["expired_at"] > moment.known_at)
    )


def edges_of(graph: nx.DiGraph) -> list[tuple[str, str, str, dict]]:
    """(source, target, fact id, data): networkx reads a file with parallel edges as a
    multigraph keyed by edge id, and one without as a graph with the id among the data."""
    if graph.is_multigraph():
        return list(graph.edges(keys=True, data=True))
    return [(s, t, data["id"], data) for s, t, data in graph.edges(data=True)]


async def text_of(stream) -> str:
    return "".join([piece async for piece in stream])


async def test_networkx_reads_the_graph_at_each_moment(migrated_store) -> None:
    store = await built(migrated_store)
    facts = (await export_graph(store))["relates_to"]
    names = {record_key(e["id"]): e["name"] for e in (await export_graph(store))["entity"]}
    moments = [Moment(NOW, NOW), Moment(datetime(2023, 2, 15, tzinfo=UTC), NOW)]
    seen = []
    for moment in moments:
        expected = {record_key(f["id"]): f for f in facts if visible(f, moment)}
        graph = nx.read_graphml(io.StringIO(await text_of(graphml(store, moment))))
        assert sorted(key for _, _, key, _ in edges_of(graph)) == sorted(expected)
        for source, target, key, data in edges_of(graph):
            fact = expected[key]
            assert (source, target) == (record_key(fact["in"]), record_key(fact["out"]))
            assert data["fact"] == fact["fact"] and data["relation"] == fact["relation"]
        ends = {record_key(f[end]) for f in expected.values() for end in ("in", "out")}
        assert set(graph.nodes) == ends
        assert all(graph.nodes[n]["name"] == names[n] for n in graph.nodes)
        seen.append(set(expected))
    assert seen[0] != seen[1]  # the two moments show different graphs


async def test_the_csv_files_hold_the_same_graph_and_no_formulas(migrated_store) -> None:
    store = await built(migrated_store)
    moment = Moment(NOW, NOW)
    (entity,) = await store.query_one("SELECT VALUE id FROM entity WHERE name = 'Rui Alves'")
    await store.query("UPDATE $id SET name = $name", {"id": entity, "name": "=HYPERLINK(1)\x01"})
    facts = list(csv.DictReader(io.StringIO(await text_of(facts_csv(store, moment)))))
    entities = list(csv.DictReader(io.StringIO(await text_of(entities_csv(store, moment)))))
    exported = [f for f in (await export_graph(store))["relates_to"] if visible(f, moment)]
    assert sorted(row["fact_id"] for row in facts) == sorted(record_key(f["id"]) for f in exported)
    joined = {row["source_id"] for row in facts} | {row["target_id"] for row in facts}
    assert {row["entity_id"] for row in entities} == joined
    rui = next(row for row in entities if row["entity_id"] == record_key(entity))
    assert rui["name"] == "'=HYPERLINK(1)\x01"
    assert int(rui["facts_here"]) == sum(
        record_key(entity) in (r["source_id"], r["target_id"]) for r in facts
    )
    graph = nx.read_graphml(io.StringIO(await text_of(graphml(store, moment))))
    assert graph.nodes[record_key(entity)]["name"] == "=HYPERLINK(1)\ufffd"


async def test_an_empty_moment_is_an_empty_graph(migrated_store) -> None:
    store = await built(migrated_store)
    before = Moment(datetime(2000, 1, 1, tzinfo=UTC), NOW)
    graph = nx.read_graphml(io.StringIO(await text_of(graphml(store, before))))
    assert graph.number_of_nodes() == graph.number_of_edges() == 0
    rows = list(csv.reader(io.StringIO(await text_of(facts_csv(store, before)))))
    assert rows == [list(FACT_COLUMNS)]
