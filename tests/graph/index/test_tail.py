"""The tail of the search index (kgapp/graph/index/tail.py): text put since tantivy's
last commit, published for readers without a commit. A reader finds exactly what a
reader of a committed index would, scored by the same BM25; the indexer commits when
the tail is due or a pass finds nothing new; a writer that dies leaves its tail to the
next, which commits it; and a tail is not trusted after the machine restarts."""

from __future__ import annotations

import asyncio
import gc
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries, schema
from kgapp.graph.index import directories, fact_index, indexer, tenant_index
from kgapp.graph.index.text import TextReader, TextWriter
from kgapp.graph.namespaces import namespace_remove
from kgapp.graph.store import Pool, StoreConfig, TenantStore
from tests.conftest import unique_slug
from tests.graph.index.test_search_index import (
    DOCS,
    SCHEMA,
    add_fact,
    at,
    facts_store,
    forget_this_process,
    found,
    ranks_docs_by_the_formula,
)

FIELDS = ("fact", "name")


def open_pair(directory: Path) -> tuple[TextWriter, TextReader]:
    writer = TextWriter(directory / "text", FIELDS, directory)
    return writer, TextReader(directory / "text", FIELDS)


def take_up(reader: TextReader, writer: TextWriter, generation: int) -> None:
    """What a reader does with a manifest after the writer's pass: a published tail, or
    none after a commit."""
    name, size = writer.publish(generation)
    reader.update(True, writer.log.directory / name if name else None, size)


def test_a_tail_alone_ranks_by_the_bm25_formula(tmp_path: Path) -> None:
    writer, reader = open_pair(tmp_path)
    for row, text in enumerate(DOCS):
        writer.put(row, [text, ""], replace=False)
    take_up(reader, writer, 1)
    assert reader.index.searcher().num_docs == 0  # nothing committed: all in the tail
    ranks_docs_by_the_formula(reader)
    assert sorted(reader.matching("acme works", 10).tolist()) == [0]
    writer.close()


def test_the_tail_and_the_commit_rank_as_one_index(tmp_path: Path) -> None:
    """Many documents committed and the last few in the tail: each scores as in one
    committed index of all of them, within 10% (the tail's average length stands for
    the index's), and the best come in the same order."""
    names, firms = ("ann", "bo", "cy", "di", "ed", "flo"), ("acme", "beta", "gamma", "delta")
    verbs = ("works at", "founded", "left", "joined", "advises")
    docs = [f"{n} {v} {f}" for n in names for v in verbs for f in firms]
    docs += ["acme acme founded beta", "beta was founded by ann", "gamma advises flo"]
    everything = TextWriter(tmp_path / "all" / "text", FIELDS, tmp_path / "all")
    for row, text in enumerate(docs):
        everything.put(row, [text, ""], replace=False)
    everything.commit()
    split, merged = open_pair(tmp_path / "split")
    for row, text in enumerate(docs):
        split.put(row, [text, ""], replace=False)
        if row == len(docs) - 6:
            split.commit()
    take_up(merged, split, 1)
    assert merged.tail.live == 5
    whole = TextReader(tmp_path / "all" / "text", FIELDS)
    whole.reload()
    for query in ("acme", "founded beta", "ann beta", "advises flo"):
        rows, scores, _ = merged.search(query, 200)
        want_rows, want_scores, _ = whole.search(query, 200)
        assert sorted(rows.tolist()) == sorted(want_rows.tolist())
        by_row = dict(zip(want_rows.tolist(), want_scores.tolist(), strict=True))
        assert scores.tolist() == pytest.approx([by_row[r] for r in rows.tolist()], rel=0.1)
        assert rows[:5].tolist() == want_rows[:5].tolist()
    for writer in (everything, split):
        writer.close()


def test_committed_documents_the_tail_replaced_do_not_take_the_places_asked_for(
    tmp_path: Path,
) -> None:
    """Twenty rows committed with "alpha", fifteen rewritten in the tail: asked for three,
    a reader still gets three of the five left (asking tantivy again for more)."""
    writer, reader = open_pair(tmp_path)
    for row in range(20):
        writer.put(row, ["alpha", ""], replace=False)
    writer.commit()
    for row in range(15):
        writer.put(row, ["beta", ""], replace=True)
    take_up(reader, writer, 1)
    rows, _, more = reader.search("alpha", 3)
    assert len(rows) == 3 and set(rows.tolist()) <= set(range(15, 20)) and more
    assert sorted(reader.matching("alpha", 10).tolist()) == list(range(15, 20))
    assert sorted(reader.matching("beta", 3).tolist()) == [0, 1, 2]
    writer.close()


WORDS = ("alpha", "beta", "gamma", "delta")
TEXTS = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
STEP = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 5), TEXTS),
    st.tuples(st.just("delete"), st.integers(0, 5), st.just("")),
    st.tuples(st.just("commit"), st.just(0), st.just("")),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(STEP, min_size=1, max_size=25))
def test_a_reader_finds_what_the_writer_put_committed_or_not(tmp_path: Path, steps) -> None:
    """Any puts, replacements, deletes and commits: after each pass, a reader finds each
    word in exactly the rows whose latest text holds it, and each row once."""
    directory = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    writer, reader = open_pair(directory)
    latest: dict[int, str] = {}
    for generation, (action, row, text) in enumerate(steps, start=1):
        if action == "put":
            writer.put(row, [text, ""], replace=row in latest)
            latest[row] = text
        elif action == "delete" and row in latest:
            writer.delete(row)
            del latest[row]
        elif action == "commit" and writer.pending:
            writer.commit()
        take_up(reader, writer, generation)
        for word in WORDS:
            rows, _, more = reader.search(word, 10)
            expected = sorted(r for r, t in latest.items() if word in t.split())
            assert sorted(rows.tolist()) == expected
            assert not more
            assert sorted(reader.matching(word, 10).tolist()) == expected
    writer.close()


# --- the indexer ------------------------------------------------------------------------


@pytest.fixture
def indexer_elsewhere():
    """This machine's indexer lock held, as while `manage.py search_indexer` runs:
    searches here only read what the test's writer publishes."""
    handle = directories.hold_indexer_lock()
    yield
    handle.close()


def on_disk(store) -> directories.Manifest:
    manifest = directories.read_manifest(directories.tenant_dir(store.namespace), store.namespace)
    assert manifest is not None
    return manifest


def tails(store) -> list[str]:
    return sorted(p.name for p in directories.tenant_dir(store.namespace).glob("*/*/tail-*"))


async def changed_since_indexed(migrated_store):
    """A tenant indexed by an indexer's writer (due to commit only after an hour), then
    one fact added and one rewritten, and a pass that published them in the tail."""
    store = await facts_store(migrated_store)
    directory = directories.tenant_dir(store.namespace)
    writer = indexer.TenantWriter(directory, store.namespace, checkpoint_every=3600)
    await writer.run_pass(store)
    assert on_disk(store).synced
    await add_fact(store, "f2", "Ada joined Quantum Labs.", "quantum", at(2024, 6, 1))
    await store.query("UPDATE relates_to:f1 SET fact = 'Ada runs Orbital Labs.';")
    await writer.run_pass(store)
    return store, writer


async def reads_the_latest(store) -> None:
    forget_this_process()
    assert await found(store, "Quantum") == ["Ada joined Quantum Labs."]
    assert await found(store, "Orbital") == ["Ada runs Orbital Labs."]
    assert await found(store, "works") == []


async def test_readers_search_the_published_tail_until_an_idle_pass_commits_it(
    migrated_store, indexer_elsewhere
) -> None:
    store, writer = await changed_since_indexed(migrated_store)
    before = on_disk(store)
    facts = before.table("relates_to")
    assert not before.synced and facts.tail and tails(store) == [facts.tail]
    await reads_the_latest(store)
    await writer.run_pass(store)  # nothing new: commits
    after = on_disk(store)
    assert after.synced and not after.table("relates_to").tail and tails(store) == []
    assert after.table("relates_to").text_commit != facts.text_commit
    index = await tenant_index(store)  # the same reader takes up the commit
    assert not index.facts.text.tail.docs
    assert await found(store, "Quantum") == ["Ada joined Quantum Labs."]
    assert await found(store, "works") == []
    writer.close()


async def test_a_writer_that_dies_leaves_its_tail_to_the_next(
    migrated_store, indexer_elsewhere, monkeypatch
) -> None:
    store, writer = await changed_since_indexed(migrated_store)
    build = on_disk(store).build
    for table in writer.tables.values():  # gone with its process: nothing closed
        table.text._writer = None
    del writer
    gc.collect()
    # The next writer reads the feed from the cursor on, without looking back, as when
    # the tail's changes are older than FEED_LOOKBACK: they come from the tail alone.
    monkeypatch.setattr(indexer, "FEED_LOOKBACK", 0.0)
    following = indexer.TenantWriter(
        directories.tenant_dir(store.namespace), store.namespace, checkpoint_every=3600
    )
    await following.run_pass(store)  # takes the tail into tantivy and commits it
    manifest = on_disk(store)
    assert manifest.synced and manifest.build == build and tails(store) == []
    await reads_the_latest(store)
    following.close()


async def test_a_tail_is_not_trusted_after_the_machine_restarts(
    migrated_store, indexer_elsewhere
) -> None:
    store, writer = await changed_since_indexed(migrated_store)
    writer.close()
    directory = directories.tenant_dir(store.namespace)
    manifest = on_disk(store)
    raw = json.loads((directory / directories.MANIFEST).read_text())
    (directory / directories.MANIFEST).write_text(json.dumps({**raw, "boot": "an earlier boot"}))
    assert not on_disk(store).trusted
    forget_this_process()
    assert await found(store, "Quantum") == []  # readers wait for the rebuild
    following = indexer.TenantWriter(directory, store.namespace, checkpoint_every=3600)
    await following.run_pass(store)
    assert on_disk(store).build != manifest.build and on_disk(store).trusted
    await reads_the_latest(store)
    following.close()


async def test_an_indexer_that_stops_commits_its_tail(migrated_store, store_config) -> None:
    store = await facts_store(migrated_store)
    running = indexer.Indexer(lambda: {store.namespace: store}, checkpoint_every=3600)
    await running.run_once()
    await add_fact(store, "f2", "Ada joined Quantum Labs.", "quantum", at(2024, 6, 1))
    await running.run_once()
    assert not on_disk(store).synced and tails(store)
    running.close()
    assert on_disk(store).synced and tails(store) == []
    forget_this_process()
    assert await found(store, "Quantum") == ["Ada joined Quantum Labs."]


# --- the indexer, as a property ------------------------------------------------------------

INDEX_EXAMPLES = int(os.environ.get("KG_TAIL_EXAMPLES", "8"))
INDEX_STEP = st.tuples(
    st.sampled_from(["write", "write", "delete", "pass", "pass", "idle", "die"]),
    st.integers(0, 3),
    st.sampled_from(WORDS),
)


class IndexScenario:
    """Facts written, rewritten and deleted in a fresh tenant, between the passes of an
    indexer's writer (committing only when idle), which may die and be replaced (reading
    the feed from its cursor only, so a tail it left comes from its file alone)."""

    def __init__(self, config: StoreConfig) -> None:
        self.config = config
        self.texts: dict[str, str] = {}  # the facts in the database
        self.indexed: dict[str, str] = {}  # as of the last pass

    async def run(self, steps: list[tuple[str, int, str]]) -> None:
        namespace = "t_" + unique_slug("tail").replace("-", "_")
        pool = Pool(self.config, namespace)
        store = TenantStore(pool)
        try:
            await schema.migrate(store, schema.load_migrations(SCHEMA), embedding_dim=384)
            await store.query(
                queries.ENTITIES_BULK_INSERT,
                {
                    "rows": [
                        {
                            "id": RecordID("entity", key),
                            "name": key,
                            "canonical_name": key,
                            "entity_type": "Person",
                            "summary": "",
                        }
                        for key in ("ada", "orbital")
                    ]
                },
            )
            directory = directories.tenant_dir(namespace)
            writer = indexer.TenantWriter(directory, namespace, checkpoint_every=3600)
            await writer.run_pass(store)
            for action, number, word in steps:
                writer = await self.step(store, writer, action, f"f{number}", word)
                await self.check(store)
            writer.close()
        finally:
            await pool.close()
            root = TenantStore(Pool(self.config, None))
            await namespace_remove(root, namespace)
            await root._pool.close()

    async def step(self, store, writer, action: str, key: str, word: str):
        if action == "write":
            text = f"Ada {word} {key}."
            if key in self.texts:
                await store.query(f"UPDATE relates_to:{key} SET fact = $text;", {"text": text})
            else:
                await add_fact(store, key, text, "orbital", at(2024, 1, 1))
            self.texts[key] = text
        elif action == "delete" and key in self.texts:
            await store.query(f"DELETE relates_to:{key};")
            del self.texts[key]
        elif action in ("pass", "idle"):
            await writer.run_pass(store)
            if action == "idle":
                await writer.run_pass(store)  # nothing new: commits
                assert on_disk(store).synced
            self.indexed = dict(self.texts)
        elif action == "die":
            for table in writer.tables.values():
                table.text._writer = None
            writer = indexer.TenantWriter(writer.directory, writer.namespace, checkpoint_every=3600)
            lookback, indexer.FEED_LOOKBACK = indexer.FEED_LOOKBACK, 0.0
            try:
                await writer.run_pass(store)
            finally:
                indexer.FEED_LOOKBACK = lookback
            self.indexed = dict(self.texts)
        return writer

    async def check(self, store) -> None:
        """Each word is found in exactly the facts whose text, as of the last pass, holds
        it: by this process's reader, kept across passes."""
        index = await fact_index(store)
        for word in WORDS:
            want = sorted(f"relates_to:{k}" for k, t in self.indexed.items() if word in t)
            assert sorted(index.matching(word, 50)) == want, (word, self.indexed)


def test_any_writes_passes_and_deaths_leave_the_index_finding_the_latest_text(
    store_config, indexer_elsewhere
) -> None:
    @settings(
        max_examples=INDEX_EXAMPLES,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(st.lists(INDEX_STEP, min_size=1, max_size=10))
    @example([("write", 0, "alpha"), ("pass", 0, ""), ("write", 0, "beta"), ("die", 0, "")])
    def check(steps) -> None:
        asyncio.run(IndexScenario(store_config).run(steps))

    check()
