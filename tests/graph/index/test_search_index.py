"""The tenant's search index: its analysis and BM25 arithmetic, that it never answers
from a stale copy of the database (new, retired, rewritten, deleted facts and a
namespace made again), that it lasts on disk and belongs to one tenant only, and that
the graph of vectors finds what an exact search finds."""

from __future__ import annotations

import asyncio
import math
import shutil
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries, schema
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.index import cache, directories, fact_index, indexer, micros, tenant_index
from kgapp.graph.index import vectors as nearest_vectors
from kgapp.graph.index.analysis import K1, B, bm25, terms
from kgapp.graph.index.text import TextReader, TextWriter
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
        "cafe",
        "naiv",
        "founder",
        "found",
        "2024",
        "03",
    ]
    assert terms("SELECT * FROM entity; -- @@ 🙂") == ["select", "from", "entiti"]


def expected_bm25(docs: list[str], query: str) -> list[float]:
    """BM25 (k1 1.2, b 0.75, Lucene's idf) computed here from the definition."""
    analysed = [terms(d) for d in docs]
    average = sum(map(len, analysed)) / len(docs)
    scores = []
    for words in analysed:
        total = 0.0
        for term in set(terms(query)):
            having = sum(term in other for other in analysed)
            tf = words.count(term)
            if tf:
                idf = math.log(1 + (len(docs) - having + 0.5) / (having + 0.5))
                total += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(words) / average))
        scores.append(total)
    return scores


DOCS = ["alice works at acme", "bob works at beta", "carol founded acme acme", "dave"]


def test_tantivy_ranks_by_the_bm25_formula(tmp_path: Path) -> None:
    writer = TextWriter(tmp_path, ("fact",), tmp_path)
    for row, text in enumerate(DOCS):
        writer.put(row, [text], replace=False)
    writer.commit()
    writer.close()
    reader = TextReader(tmp_path, ("fact",))
    reader.reload()
    ranks_docs_by_the_formula(reader)


def ranks_docs_by_the_formula(reader: TextReader) -> None:
    """The reader, holding DOCS, scores each by BM25 as computed here."""
    for query in ("acme", "works carol", "Founders of ACME"):
        rows, scores, more = reader.search(query, 10)
        expected = expected_bm25(DOCS, query)
        assert dict(zip(rows.tolist(), scores.tolist(), strict=True)) == pytest.approx(
            {row: score for row, score in enumerate(expected) if score > 0}, rel=1e-4
        )
        assert not more
    assert reader.search("acme", 1)[2]  # one more matches than asked for


def test_few_texts_rank_by_the_same_formula() -> None:
    for query in ("acme", "works carol"):
        assert bm25(DOCS, terms(query)).tolist() == pytest.approx(
            expected_bm25(DOCS, query), rel=1e-4
        )
    assert bm25(DOCS, []).tolist() == [0, 0, 0, 0]


def test_time_columns_are_exact_to_the_microsecond() -> None:
    moment = datetime(2024, 2, 29, 23, 59, 59, 999_999, tzinfo=UTC)
    assert micros(moment + timedelta(microseconds=1)) - micros(moment) == 1
    assert micros(None) == np.iinfo(np.int64).max


async def facts_store(migrated_store) -> TenantStore:
    store = await migrated_store()
    embedder = local_embedder()
    people = [
        {
            "id": RecordID("entity", key),
            "name": name,
            "canonical_name": name.lower(),
            "entity_type": "Person",
            "summary": "",
            "name_embedding": embedder.embed([name])[0],
        }
        for key, name in (("ada", "Ada"), ("orbital", "Orbital Labs"), ("quantum", "Quantum Labs"))
    ]
    await store.query(queries.ENTITIES_BULK_INSERT, {"rows": people})
    await add_fact(store, "f1", "Ada works at Orbital Labs.", "orbital", at(2024, 1, 1))
    return store


async def add_fact(store: TenantStore, key: str, text: str, target: str, valid: datetime) -> None:
    row = {
        "id": RecordID("relates_to", key),
        "in": RecordID("entity", "ada"),
        "out": RecordID("entity", target),
        "relation": "WORKS_AT",
        "fact": text,
        "fact_embedding": local_embedder().embed([text])[0],
        "valid_at": valid,
        "created_at": datetime.now(UTC),
    }
    await store.query(queries.FACTS_BULK_INSERT, {"rows": [row]})


async def found(store: TenantStore, text: str, methods=("bm25",), **moment) -> list[str]:
    request = SearchRequest(
        query=text, scopes=("facts",), methods=methods, moment=Moment.of(**moment)
    )
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
    await store.query(
        "UPDATE relates_to:f1 SET invalid_at = $t, expired_at = time::now();", {"t": at(2024, 6, 1)}
    )
    assert "Ada works at Orbital Labs." not in await found(store, "Orbital")
    assert await found(store, "Orbital", as_of=at(2024, 3, 1), known_at=between) == [
        "Ada works at Orbital Labs."
    ]
    assert await found(store, "Orbital", as_of=at(2024, 3, 1)) == []  # expired, as known now

    # Rewritten text: the old words no longer find it, the new ones do.
    await store.query("UPDATE relates_to:f2 SET fact = 'Ada leads Quantum Labs research.';")
    assert await found(store, "research") == ["Ada leads Quantum Labs research."]
    assert "joined" not in " ".join(await found(store, "joined"))

    # Deleted: never returned, and dead in the index.
    await store.query("DELETE relates_to:f2;")
    assert await found(store, "research Quantum") == []
    index = await fact_index(store)
    assert not index.base_mask()[index.positions["relates_to:f2"]]
    # Created again (an undone merge restores ids): found again, in its old row.
    await add_fact(store, "f2", "Ada rejoined Quantum Labs.", "quantum", at(2024, 7, 1))
    assert await found(store, "rejoined") == ["Ada rejoined Quantum Labs."]
    assert (await fact_index(store)).positions["relates_to:f2"] == index.positions["relates_to:f2"]


async def test_a_namespace_made_again_starts_a_new_copy(migrated_store, store_config) -> None:
    store = await facts_store(migrated_store)
    assert await found(store, "Orbital") == ["Ada works at Orbital Labs."]
    first = (await tenant_index(store)).manifest
    root = TenantStore(Pool(store_config, None))
    try:
        await namespace_remove(root, store.namespace)
        await namespace_define(root, store.namespace, store_config.database)
    finally:
        await root._pool.close()
    await schema.migrate(store, schema.load_migrations(SCHEMA), embedding_dim=384)
    assert await found(store, "Orbital") == []
    again = (await tenant_index(store)).manifest
    assert first is not None and again is not None
    assert (again.epoch, again.build) != (first.epoch, first.build)
    assert (await fact_index(store)).size == 0
    # The old build's files are gone with it.
    assert not (directories.tenant_dir(store.namespace) / first.build).exists()


async def test_relation_filters_apply_before_the_limit(migrated_store) -> None:
    store = await facts_store(migrated_store)
    rows = [
        {
            "id": RecordID("relates_to", f"k{i}"),
            "in": RecordID("entity", "ada"),
            "out": RecordID("entity", "quantum"),
            "relation": "KNOWS",
            "fact": f"Ada knows Orbital researcher number {i}.",
            "valid_at": at(2024, 1, 1),
            "created_at": datetime.now(UTC),
        }
        for i in range(30)
    ]
    await store.query(queries.FACTS_BULK_INSERT, {"rows": rows})
    request = SearchRequest(
        query="Orbital", scopes=("facts",), methods=("bm25",), limit=2, relations=("WORKS_AT",)
    )
    results = await search(store, request, local_embedder())
    assert [h.record["fact"] for h in results.facts] == ["Ada works at Orbital Labs."]


async def test_one_hop_facts_put_those_touching_most_query_entities_first(migrated_store) -> None:
    from kgapp.graph.search.reads import facts_touching

    store = await facts_store(migrated_store)  # f1: Ada -> Orbital Labs
    rows = [
        {
            "id": RecordID("relates_to", key),
            "in": RecordID("entity", source),
            "out": RecordID("entity", target),
            "relation": "KNOWS",
            "fact": text,
            "confidence": confidence,
            "valid_at": at(2024, 1, 1),
            "created_at": datetime.now(UTC),
        }
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
        store,
        [RecordID("entity", "ada"), RecordID("entity", "orbital")],
        Moment.of(),
        limit=10,
        budget=two,
    )
    assert len(budgeted) == 3  # the two that fit, and the next, which the caller cuts


def forget_this_process() -> None:
    """As after a restart: nothing of any index held in memory."""
    cache._readers.clear()
    for writer in indexer._inline.values():
        writer.close()
    indexer._inline.clear()


async def test_the_index_outlives_the_process(migrated_store) -> None:
    store = await facts_store(migrated_store)
    assert await found(store, "Orbital") == ["Ada works at Orbital Labs."]
    build = (await tenant_index(store)).manifest.build
    forget_this_process()
    assert await found(store, "Orbital") == ["Ada works at Orbital Labs."]
    assert (await tenant_index(store)).manifest.build == build  # read, not rebuilt
    # Deleted from the disk: rebuilt from the database on the next search.
    forget_this_process()
    shutil.rmtree(directories.tenant_dir(store.namespace))
    assert await found(store, "Orbital") == ["Ada works at Orbital Labs."]


async def test_passes_close_together_read_the_feed_back_once(migrated_store) -> None:
    """A pass reads back FEED_LOOKBACK seconds for late commits at most every
    SWEEP_EVERY; the passes between read from their cursor and still see every write."""
    store = await facts_store(migrated_store)
    writer = indexer.TenantWriter(directories.tenant_dir(store.namespace), store.namespace)
    await writer.run_pass(store)  # the first builds the index from the records
    assert writer.tail is not None
    read, sweeps = writer.tail.read, []

    async def reading(store, *, sweep=False, first=None):
        sweeps.append(sweep)
        return await read(store, sweep=sweep, first=first)

    writer.tail.read = reading  # type: ignore[method-assign]
    texts = ("Ada met Quantum Labs.", "Ada left Quantum Labs.", "Ada joined Quantum Labs.")
    for number, text in enumerate(texts):
        await add_fact(store, f"f{number + 2}", text, "quantum", at(2024, 2, 1))
        if number == 2:
            writer.swept -= indexer.SWEEP_EVERY  # as after a while without passes
        await writer.run_pass(store)
    writer.close()
    assert sweeps == [True, False, True]
    forget_this_process()
    assert sorted(await found(store, "Quantum")) == [
        "Ada joined Quantum Labs.",
        "Ada left Quantum Labs.",
        "Ada met Quantum Labs.",
    ]


async def test_a_pass_reads_the_state_and_the_feed_in_one_round_trip(migrated_store) -> None:
    store = await facts_store(migrated_store)
    writer = indexer.TenantWriter(directories.tenant_dir(store.namespace), store.namespace)
    await writer.run_pass(store)
    await add_fact(store, "f2", "Ada met Quantum Labs.", "quantum", at(2024, 2, 1))

    class Counting(TenantStore):
        sent = 0

        async def query(self, sql, params=None):
            Counting.sent += 1
            return await super().query(sql, params)

    await writer.run_pass(Counting(store._pool))
    writer.close()
    assert Counting.sent == 1
    forget_this_process()
    assert await found(store, "Quantum") == ["Ada met Quantum Labs."]


async def test_one_tenants_index_is_never_opened_for_another(migrated_store) -> None:
    ours = await facts_store(migrated_store)
    theirs = await migrated_store()
    assert await found(ours, "Orbital") == ["Ada works at Orbital Labs."]
    assert await found(theirs, "Orbital") == []
    forget_this_process()
    # Our index put where theirs lives, as a copy and as a link: refused, and theirs is
    # rebuilt from their own database.
    for place in ("copy", "link"):
        target = directories.tenant_dir(theirs.namespace)
        shutil.rmtree(target, ignore_errors=True)
        if place == "copy":
            shutil.copytree(directories.tenant_dir(ours.namespace), target)
        else:
            target.symlink_to(directories.tenant_dir(ours.namespace), target_is_directory=True)
            target = target.resolve()
        assert (
            directories.read_manifest(directories.tenant_dir(theirs.namespace), theirs.namespace)
            is None
        )
        assert await found(theirs, "Orbital") == []
        assert (await fact_index(theirs)).size == 0
        forget_this_process()
        if place == "link":
            directories.tenant_dir(theirs.namespace).unlink(missing_ok=True)
    assert await found(ours, "Orbital") == ["Ada works at Orbital Labs."]
    with pytest.raises(Exception, match="namespace"):
        directories.tenant_dir("../" + ours.namespace)


async def test_an_indexer_process_keeps_readers_up_to_date(migrated_store, store_config) -> None:
    """With the machine's indexer running, a searching process writes nothing: it reads
    what the indexer commits, and waits for it when it must read its own writes."""
    store = await facts_store(migrated_store)
    started, stop = threading.Event(), None

    def run() -> None:
        nonlocal stop

        async def main() -> None:
            nonlocal stop
            stop = asyncio.Event()
            own = TenantStore(Pool(store_config, store.namespace))
            worker = indexer.Indexer(lambda: {store.namespace: own}, poll=0.05)
            started.set()
            try:
                await worker.run(stop)
            finally:
                await own._pool.close()

        asyncio.run(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(10)
    forget_this_process()
    try:
        for _ in range(200):
            if directories.indexer_running():
                break
            await asyncio.sleep(0.01)
        assert directories.indexer_running()
        await add_fact(store, "f2", "Ada joined Quantum Labs.", "quantum", at(2024, 6, 1))
        deadline = asyncio.get_running_loop().time() + 10
        while await found(store, "Quantum") != ["Ada joined Quantum Labs."]:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
        assert not indexer._inline  # this process wrote nothing
        await add_fact(store, "f3", "Ada visited Orbital Labs.", "orbital", at(2024, 7, 1))
        index = await fact_index(store, fresh=True)
        assert "relates_to:f3" in index.positions
    finally:
        loop_stop = stop
        if loop_stop is not None:
            loop_stop._loop.call_soon_threadsafe(loop_stop.set)  # type: ignore[attr-defined]
        thread.join(10)
    assert not directories.indexer_running()


async def test_the_graph_of_vectors_finds_what_an_exact_search_finds(
    migrated_store, monkeypatch
) -> None:
    monkeypatch.setattr(nearest_vectors, "EXACT_ROWS", 8)
    monkeypatch.setattr(nearest_vectors, "SNAPSHOT_ROWS", 4)
    store = await facts_store(migrated_store)
    cities = [
        "Lisbon",
        "Osaka",
        "Nairobi",
        "Montreal",
        "Krakow",
        "Tbilisi",
        "Auckland",
        "Reykjavik",
        "Hanoi",
        "Bergen",
        "Cusco",
        "Tallinn",
        "Accra",
        "Perth",
    ]
    for i, city in enumerate(cities):
        await add_fact(
            store, f"c{i}", f"Ada moved to {city} in spring.", "orbital", at(2024, 1, 1 + i)
        )
    manifest = (await tenant_index(store)).manifest
    assert manifest.table("relates_to").hnsw  # more than EXACT_ROWS vectors: a graph
    # One more, outside the graph until SNAPSHOT_ROWS pile up: found all the same.
    await add_fact(store, "late", "Ada settled in Valparaiso for good.", "orbital", at(2024, 9, 1))
    index = await fact_index(store)
    assert not index.column("in_hnsw")[index.positions["relates_to:late"]]
    for question in ("living in Valparaiso", "moved to Japan", "Ada works at a lab"):
        vector = local_embedder().embed([question])[0]
        mask = index.visible(datetime.now(UTC), datetime.now(UTC))
        through_graph = index.cosine(vector, mask, 3)
        query = np.asarray(vector, dtype=np.float32)
        scores = np.asarray(index.column("vectors")) @ query
        best = np.argsort(-np.where(mask & index.column("has_vector"), scores, -2))[:3]
        assert [key for key, _ in through_graph] == [index.keys[i] for i in best]
    assert (await found(store, "Valparaiso", methods=("cosine",)))[0] == (
        "Ada settled in Valparaiso for good."
    )
    # Rebuilt from scratch, the graph grows page by page while the pages are read.
    before = index.cosine(vector, mask, 5)
    forget_this_process()
    shutil.rmtree(directories.tenant_dir(store.namespace))
    rebuilt = await fact_index(store)
    assert rebuilt.graph is not None and rebuilt.column("in_hnsw").all()
    after = rebuilt.cosine(vector, rebuilt.visible(datetime.now(UTC), datetime.now(UTC)), 5)
    assert [key for key, _ in after] == [key for key, _ in before]
    assert [score for _, score in after] == pytest.approx([score for _, score in before])
