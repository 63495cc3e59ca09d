"""The in-process search index: its BM25 arithmetic, its analysis, and that it never
answers from a stale copy of the database (new, retired, rewritten, deleted facts and
a namespace made again)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries, schema
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.index import K1, B, Postings, fact_index, micros
from kgapp.graph.index.analyzer import terms
from kgapp.graph.namespaces import namespace_define, namespace_remove
from kgapp.graph.search.hybrid import search
from kgapp.graph.search.model import SearchRequest
from kgapp.graph.store import Pool, TenantStore
from kgapp.graph.time import Moment

SCHEMA = Path(__file__).resolve().parents[3] / "schema"


def at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def test_analysis_folds_case_accents_and_stems() -> None:
    assert terms("Café NAÏVE founders, founded 2024-03!") == [
        "cafe", "naiv", "founder", "found", "2024", "03"
    ]
    assert terms("SELECT * FROM entity; -- @@ 🙂") == ["select", "from", "entiti"]


def test_bm25_matches_the_formula() -> None:
    docs = ["alice works at acme", "bob works at beta", "carol founded acme acme", "dave"]
    postings = Postings()
    for row, text in enumerate(docs):
        postings.add(row, text)
    scores = postings.scores(terms("acme"), len(docs))
    lengths = [len(d.split()) for d in docs]
    average = sum(lengths) / len(docs)
    idf = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))
    for row, tf in ((0, 1), (2, 2)):
        expected = idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * lengths[row] / average))
        assert scores[row] == pytest.approx(expected, rel=1e-5)
    assert scores[1] == scores[3] == 0
    # A rare term outweighs a common one.
    both = postings.scores(terms("works carol"), len(docs))
    assert both[2] > both[0] > 0


def test_time_columns_are_exact_to_the_microsecond() -> None:
    moment = datetime(2024, 2, 29, 23, 59, 59, 999_999, tzinfo=UTC)
    assert micros(moment + timedelta(microseconds=1)) - micros(moment) == 1
    assert micros(None) == np.iinfo(np.int64).max


async def facts_store(migrated_store) -> TenantStore:
    store = await migrated_store()
    embedder = local_embedder()
    people = [
        {"id": RecordID("entity", key), "name": name, "canonical_name": name.lower(),
         "entity_type": "Person", "summary": "", "name_embedding": embedder.embed([name])[0]}
        for key, name in (("ada", "Ada"), ("orbital", "Orbital Labs"), ("quantum", "Quantum Labs"))
    ]
    await store.query(queries.ENTITIES_BULK_INSERT, {"rows": people})
    await add_fact(store, "f1", "Ada works at Orbital Labs.", "orbital", at(2024, 1, 1))
    return store


async def add_fact(store: TenantStore, key: str, text: str, target: str, valid: datetime) -> None:
    row = {"id": RecordID("relates_to", key), "in": RecordID("entity", "ada"),
           "out": RecordID("entity", target), "relation": "WORKS_AT", "fact": text,
           "fact_embedding": local_embedder().embed([text])[0], "valid_at": valid,
           "created_at": datetime.now(UTC)}
    await store.query(queries.FACTS_BULK_INSERT, {"rows": [row]})


async def found(store: TenantStore, text: str, methods=("bm25",), **moment) -> list[str]:
    request = SearchRequest(query=text, scopes=("facts",), methods=methods,
                            moment=Moment.of(**moment))
    results = await search(store, request, local_embedder())
    return [hit.record["fact"] for hit in results.facts]


async def test_search_sees_every_write_since_the_last_search(migrated_store) -> None:
    store = await facts_store(migrated_store)
    assert await found(store, "Orbital") == ["Ada works at Orbital Labs."]
    await add_fact(store, "f2", "Ada joined Quantum Labs.", "quantum", at(2024, 6, 1))
    assert await found(store, "Quantum") == ["Ada joined Quantum Labs."]
    assert (await found(store, "joined Quantum", methods=("cosine",)))[0] == (
        "Ada joined Quantum Labs."
    )

    # Retired: gone from current search, still there as of before, as known before.
    between = datetime.now(UTC)
    await store.query("UPDATE relates_to:f1 SET invalid_at = $t, expired_at = time::now();",
                      {"t": at(2024, 6, 1)})
    assert "Ada works at Orbital Labs." not in await found(store, "Orbital")
    assert await found(store, "Orbital", as_of=at(2024, 3, 1), known_at=between) == [
        "Ada works at Orbital Labs."
    ]
    assert await found(store, "Orbital", as_of=at(2024, 3, 1)) == []  # expired, as known now

    # Rewritten text: the old words no longer find it, the new ones do.
    await store.query("UPDATE relates_to:f2 SET fact = 'Ada leads Quantum Labs research.';")
    assert await found(store, "research") == ["Ada leads Quantum Labs research."]
    assert "joined" not in " ".join(await found(store, "joined"))

    # Deleted: never returned, and forgotten by the index.
    await store.query("DELETE relates_to:f2;")
    assert await found(store, "research Quantum") == []
    index = await fact_index(store)
    assert "relates_to:f2" not in index.positions


async def test_a_namespace_made_again_starts_a_new_copy(migrated_store, store_config) -> None:
    store = await facts_store(migrated_store)
    assert await found(store, "Orbital") == ["Ada works at Orbital Labs."]
    first = (await fact_index(store)).epoch
    root = TenantStore(Pool(store_config, None))
    try:
        await namespace_remove(root, store.namespace)
        await namespace_define(root, store.namespace, store_config.database)
    finally:
        await root._pool.close()
    await schema.migrate(store, schema.load_migrations(SCHEMA), embedding_dim=384)
    assert await found(store, "Orbital") == []
    assert (await fact_index(store)).epoch != first
    assert len((await fact_index(store)).keys) == 0


async def test_relation_filters_apply_before_the_limit(migrated_store) -> None:
    store = await facts_store(migrated_store)
    rows = [
        {"id": RecordID("relates_to", f"k{i}"), "in": RecordID("entity", "ada"),
         "out": RecordID("entity", "quantum"), "relation": "KNOWS",
         "fact": f"Ada knows Orbital researcher number {i}.", "valid_at": at(2024, 1, 1),
         "created_at": datetime.now(UTC)}
        for i in range(30)
    ]
    await store.query(queries.FACTS_BULK_INSERT, {"rows": rows})
    request = SearchRequest(query="Orbital", scopes=("facts",), methods=("bm25",), limit=2,
                            relations=("WORKS_AT",))
    results = await search(store, request, local_embedder())
    assert [h.record["fact"] for h in results.facts] == ["Ada works at Orbital Labs."]


async def test_one_hop_facts_put_those_touching_most_query_entities_first(migrated_store) -> None:
    from kgapp.graph.search.reads import facts_touching

    store = await facts_store(migrated_store)  # f1: Ada -> Orbital Labs
    rows = [
        {"id": RecordID("relates_to", key), "in": RecordID("entity", source),
         "out": RecordID("entity", target), "relation": "KNOWS", "fact": text,
         "confidence": confidence, "valid_at": at(2024, 1, 1), "created_at": datetime.now(UTC)}
        for key, source, target, text, confidence in (
            ("q1", "quantum", "orbital", "Quantum Labs partners with Orbital Labs.", 0.9),
            ("q2", "quantum", "ada", "Quantum Labs hired Ada.", 0.6),
            ("q3", "quantum", "orbital", "Quantum Labs sued Orbital Labs.", 0.99),
        )
    ]
    await store.query(queries.FACTS_BULK_INSERT, {"rows": rows})
    facts = await facts_touching(
        store, [RecordID("entity", "ada"), RecordID("entity", "orbital")], Moment.of(), limit=10
    )
    assert [f["fact"] for f in facts] == [
        "Ada works at Orbital Labs.",  # touches both: first
        "Quantum Labs sued Orbital Labs.",  # then by confidence
        "Quantum Labs partners with Orbital Labs.",
        "Quantum Labs hired Ada.",
    ]
    limited = await facts_touching(store, [RecordID("entity", "ada")], Moment.of(), limit=1)
    assert [f["fact"] for f in limited] == ["Ada works at Orbital Labs."]
    # A token budget reads only what could fit: the words of the first two facts here.
    two = len(terms("Ada works at Orbital Labs.")) + len(terms("Quantum Labs sued Orbital Labs."))
    budgeted = await facts_touching(
        store, [RecordID("entity", "ada"), RecordID("entity", "orbital")], Moment.of(),
        limit=10, budget=two,
    )
    assert len(budgeted) == 3  # the two that fit, and the next, which the caller cuts
