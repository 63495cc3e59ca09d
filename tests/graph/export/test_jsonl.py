"""A tenant's graph out as JSON lines and back into another namespace, on the real
SurrealDB server: the second export equals the first, and a file cut short, changed, or
loaded into a tenant that is not empty is refused before anything is written."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from kgapp.graph import jobs
from kgapp.graph.curation.merge import merge_entities
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.export.jsonl import TenantMeta, export_lines
from kgapp.graph.export.load import (
    ImportFailed,
    ImportRefused,
    check_export,
    check_target,
    load_export,
)
from kgapp.graph.export.snapshot import export_graph
from kgapp.graph.export.tables import NOT_EXPORTED, TABLES
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.pipeline import ingest_job
from kgapp.graph.retention.policy import RetentionPolicy
from kgapp.graph.store import TenantStore

TEXTS = (
    "Ines Costa works at Harbour Bank in Porto. Ines Costa lives in Porto.",
    "In March 2023 Ines Costa moved to Lisbon. Ines Costa lives in Lisbon.",
    "Rui Alves founded Tide Labs in Faro. Tide Labs hired Ines Costa.",
)
META = TenantMeta(
    slug="a",
    name="A",
    embedding_dim=384,
    retention=RetentionPolicy(mode="drop", facts_ended_days=30),
)


async def built(migrated_store) -> TenantStore:
    store = await migrated_store()
    for month, text in enumerate(TEXTS, start=1):
        job = await jobs.job_create(store, kind="ingest")
        when = datetime(2023, month, 1, tzinfo=UTC)
        episode = EpisodeInput(content=text, source="text", reference_time=when)
        report = await ingest_job(store, job["id"], [episode], embedder=local_embedder(), llm=None)
        assert report.failures == []
    return store


_SAMPLE: list[bytes] = []


async def sample(migrated_store) -> list[bytes]:
    """The export of a built tenant, made once for the tests that only damage it."""
    if not _SAMPLE:
        _SAMPLE.extend(await exported(await built(migrated_store)))
    return list(_SAMPLE)


async def exported(store: TenantStore, meta: TenantMeta = META) -> list[bytes]:
    return [line async for line in export_lines(store, meta)]


def body(lines: list[bytes]) -> list[bytes]:
    """Everything but the header (tenant, date) and the trailer's checksum over both."""
    trailer = json.loads(lines[-1])
    del trailer["sha256"]
    return [*lines[1:-1], json.dumps(trailer).encode()]


async def _progress(done: int) -> None:
    return None


async def loaded(store: TenantStore, lines: list[bytes]) -> int:
    summary = check_export(iter(lines))
    await check_target(store, summary, 384)
    return await load_export(store, iter(lines), _progress)


async def test_an_export_loaded_elsewhere_exports_the_same(migrated_store) -> None:
    source = await built(migrated_store)
    kept = await export_graph(source)
    ines = [e for e in kept["entity"] if e["name"] == "Ines Costa"]
    rui = [e for e in kept["entity"] if e["name"] == "Rui Alves"]
    await merge_entities(source, rui[0]["id"], ines[0]["id"], actor="curator")
    first = await exported(source)

    summary = check_export(iter(first))
    assert summary.slug == "a" and summary.retention == META.retention
    assert summary.counts["relates_to"] > 0 and summary.counts["audit"] > 0
    assert summary.counts["entity"] == len(kept["entity"])

    target = await migrated_store()
    assert await loaded(target, first) == summary.records
    second = await exported(target, TenantMeta("b", "B", 384, META.retention))
    assert body(second) == body(first)
    assert await export_graph(target) == await export_graph(source)


async def test_every_table_is_exported_or_left_out_on_purpose(migrated_store) -> None:
    store = await migrated_store()
    info = (await store.query("INFO FOR DB"))[0]
    names = set(info["tables"])
    assert names == {t.name for t in TABLES} | NOT_EXPORTED


def _changed(lines: list[bytes], number: int, change) -> list[bytes]:
    value = json.loads(lines[number])
    change(value)
    return [*lines[:number], json.dumps(value).encode() + b"\n", *lines[number + 1 :]]


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda lines: lines[:-1], "cut short"),
        (lambda lines: lines[: len(lines) // 2], "cut short"),
        (lambda lines: [*lines[:-1], lines[-1][:20]], "not JSON"),
        (lambda lines: _changed(lines, 3, lambda v: v["data"].update(name="Mallory")), "checksum"),
        (lambda lines: [*lines[:3], *lines[4:]], "checksum"),
        (lambda lines: [*lines, lines[2]], "after its trailer"),
        (lambda lines: lines[1:], "header"),
        (lambda lines: [], "empty"),
    ],
)
async def test_a_damaged_file_is_refused_and_nothing_is_written(
    migrated_store, damage, reason
) -> None:
    lines = await sample(migrated_store)
    target = await migrated_store()
    with pytest.raises(ImportRefused, match=reason):
        await loaded(target, damage(lines))
    assert all(not rows for rows in (await export_graph(target)).values())


async def test_a_tenant_that_is_not_empty_is_refused(migrated_store) -> None:
    source = await built(migrated_store)
    lines = await exported(source)
    with pytest.raises(ImportRefused, match="not empty"):
        await loaded(source, lines)
    with pytest.raises(ImportRefused, match="dimensions"):
        await check_target(await migrated_store(), check_export(iter(lines)), 768)


def _resealed(lines: list[bytes]) -> Iterator[bytes]:
    """The lines with a fresh trailer: a file that passes the checks."""
    digest = hashlib.sha256(b"".join(lines[:-1])).hexdigest()
    trailer = json.loads(lines[-1])
    trailer["sha256"] = digest
    return iter([*lines[:-1], json.dumps(trailer).encode() + b"\n"])


async def test_a_write_the_engine_refuses_clears_what_was_written(migrated_store) -> None:
    lines = await sample(migrated_store)
    # A fact with a confidence of 7.5 passes the file's checks; the engine's own (within
    # [0, 1]) refuses it once the entities before it are written.
    number = next(i for i, raw in enumerate(lines) if b'"table":"relates_to"' in raw)
    bad = list(_resealed(_changed(lines, number, lambda v: v["data"].update(confidence=7.5))))
    summary = check_export(iter(bad))
    target = await migrated_store()
    await check_target(target, summary, 384)
    with pytest.raises(ImportFailed, match="stopped after"):
        await load_export(target, iter(bad), _progress)
    assert all(not rows for rows in (await export_graph(target)).values())
    assert not await target.query_one("SELECT VALUE id FROM episode")


def _job_line(kind: str) -> bytes:
    record = {
        "kind": "record",
        "table": "job",
        "data": {
            "id": {"$record": ["job", "x1"]},
            "kind": kind,
            "status": "queued",
            "params": {"file": "0123abcd.export"},
        },
    }
    return json.dumps(record).encode() + b"\n"


def _record_at(lines: list[bytes], table: str) -> int:
    return next(i for i, raw in enumerate(lines) if f'"table":"{table}"'.encode() in raw)


@pytest.mark.parametrize(
    "craft, reason",
    [
        (lambda lines: [*lines[:-1], _job_line("import"), lines[-1]], "import job"),
        (
            lambda lines: _changed(
                lines,
                _record_at(lines, "entity"),
                lambda v: v["data"].update(id={"$record": ["job", "x"]}),
            ),
            "id of that table",
        ),
        (
            lambda lines: [*lines[:-1], lines[_record_at(lines, "entity")], lines[-1]],
            "after later tables",
        ),
        (
            lambda lines: _changed(
                lines, _record_at(lines, "relates_to"), lambda v: v["data"].pop("in")
            ),
            "needs `in` and `out`",
        ),
        (
            lambda lines: _changed(
                lines, _record_at(lines, "entity"), lambda v: v["data"].update(name={"$evil": 1})
            ),
            "unknown tagged",
        ),
        (lambda lines: _changed(lines, 0, lambda v: v.update(version=2)), "format version 2"),
        (lambda lines: _changed(lines, 0, lambda v: v.update(schema_version=999)), "newer"),
        (
            lambda lines: _changed(lines, 1, lambda v: v["retention"].update(mode="all")),
            "retention",
        ),
    ],
)
async def test_a_crafted_file_with_a_fresh_checksum_is_refused_too(
    migrated_store, craft, reason
) -> None:
    """A file edited and given a checksum that matches: the checks of each line still
    hold, and nothing is written."""
    lines = list(_resealed(craft(await sample(migrated_store))))
    target = await migrated_store()
    with pytest.raises(ImportRefused, match=reason):
        await loaded(target, lines)
    assert all(not rows for rows in (await export_graph(target)).values())


class _InFlight(TenantStore):
    """The target store, counting the INSERTs of each table in flight at once."""

    def __init__(self, store: TenantStore) -> None:
        super().__init__(store._pool)
        self.now: dict[str, int] = {}
        self.most: dict[str, int] = {}

    async def query(self, sql, params=None):
        table = next((t.name for t in TABLES if f"INTO {t.name} " in sql), None)
        if table is None:
            return await super().query(sql, params)
        self.now[table] = self.now.get(table, 0) + 1
        self.most[table] = max(self.most.get(table, 0), self.now[table])
        try:
            return await super().query(sql, params)
        finally:
            self.now[table] -= 1


async def test_mentions_load_one_batch_at_a_time_and_fill_their_view(migrated_store) -> None:
    """SurrealDB keeps `entity_mentions` from the mentions: two batches in flight at once
    conflict on its rows on RocksDB ("Resource busy"), so they go one after another, and
    the view counts every mention loaded."""
    from surrealdb.data.types.record_id import RecordID

    from kgapp.graph import queries

    source = await migrated_store()
    entities = [RecordID("entity", f"e{i}") for i in range(40)]
    await source.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {"id": e, "name": f"Name {i}", "canonical_name": f"name {i}"}
                for i, e in enumerate(entities)
            ]
        },
    )
    when = datetime(2024, 1, 1, tzinfo=UTC)
    await source.query(
        "INSERT INTO episode $rows RETURN NONE",
        {
            "rows": [
                {
                    "id": RecordID("episode", f"p{i}"),
                    "content": f"said {i}",
                    "content_hash": f"h{i}",
                    "source": "message",
                    "valid_at": when,
                }
                for i in range(300)
            ]
        },
    )
    await source.query(
        "INSERT RELATION INTO mentions $rows RETURN NONE",
        {
            "rows": [
                {"in": RecordID("episode", f"p{i}"), "out": entities[(i * j) % 40]}
                for i in range(300)
                for j in (1, 3)
            ]
        },
    )
    counts = "SELECT VALUE [record::id(entity), mentions] FROM entity_mentions"
    target = _InFlight(await migrated_store())
    await loaded(target, await exported(source))
    assert target.most["mentions"] == 1 and target.most["episode"] == 2
    assert sorted(await target.query_one(counts)) == sorted(await source.query_one(counts))
