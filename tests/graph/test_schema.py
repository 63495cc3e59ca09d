"""The migration runner against the real server, with the project's real schema files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kgapp.graph import schema
from kgapp.graph.errors import SchemaError

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schema"


@pytest.fixture
def schema_copy(tmp_path: Path) -> Path:
    for path in SCHEMA_DIR.glob("*.surql"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


async def table_names(store) -> set[str]:
    info = await store.query_one("INFO FOR DB")
    return set(info["tables"])


async def test_applies_from_empty_then_is_a_no_op(raw_namespace, schema_copy: Path) -> None:
    store = await raw_namespace()
    migrations = schema.load_migrations(schema_copy)
    assert len(migrations) >= 2

    everything = frozenset({schema.ISOLATED_HNSW})
    applied = await schema.migrate(store, migrations, embedding_dim=384, capabilities=everything)
    assert applied == [m.name for m in migrations]
    assert {"entity", "relates_to", "episode", "job", "schema_migration"} <= await table_names(
        store
    )
    assert await schema.schema_version(store) == migrations[-1].version

    assert await schema.migrate(store, migrations, embedding_dim=384, capabilities=everything) == []
    rows = await schema.applied_migrations(store)
    assert [row["name"] for row in rows] == [m.name for m in migrations]


async def test_a_file_needing_a_capability_waits_for_it(raw_namespace, schema_copy) -> None:
    store = await raw_namespace()
    migrations = schema.load_migrations(schema_copy)
    optional = [m.name for m in migrations if m.requires]
    assert optional == ["0003_vector_indexes"]
    applied = await schema.migrate(store, migrations, embedding_dim=384, capabilities=frozenset())
    assert optional[0] not in applied and applied
    # Once the server can, the skipped file applies on the next run, and only it.
    later = await schema.migrate(
        store, migrations, embedding_dim=384, capabilities=frozenset({schema.ISOLATED_HNSW})
    )
    assert later == optional


def test_capabilities_follow_the_server_version() -> None:
    assert schema.ISOLATED_HNSW not in schema.capabilities_of("surrealdb-3.0.2")
    assert schema.ISOLATED_HNSW in schema.capabilities_of("surrealdb-3.1.0")


async def test_a_new_file_applies_only_itself(raw_namespace, schema_copy: Path) -> None:
    store = await raw_namespace()
    await schema.migrate(store, schema.load_migrations(schema_copy), embedding_dim=384)
    (schema_copy / "0900_probe.surql").write_text(
        "DEFINE TABLE IF NOT EXISTS probe SCHEMAFULL;\n"
        "DEFINE FIELD IF NOT EXISTS note ON probe TYPE string;\n"
    )
    # Deleting an already-applied file's table proves it is not re-applied.
    await store.query("REMOVE TABLE job")
    applied = await schema.migrate(store, schema.load_migrations(schema_copy), embedding_dim=384)
    assert applied == ["0900_probe"]
    tables = await table_names(store)
    assert "probe" in tables and "job" not in tables


async def test_a_changed_applied_file_is_refused(raw_namespace, schema_copy: Path) -> None:
    store = await raw_namespace()
    await schema.migrate(store, schema.load_migrations(schema_copy), embedding_dim=384)
    first = sorted(schema_copy.glob("*.surql"))[0]
    first.write_text(first.read_text() + "\n-- edited\n")
    with pytest.raises(SchemaError, match="changed after it was applied"):
        await schema.migrate(store, schema.load_migrations(schema_copy), embedding_dim=384)


async def test_a_failing_file_leaves_nothing_behind(raw_namespace, tmp_path: Path) -> None:
    store = await raw_namespace()
    (tmp_path / "0001_ok.surql").write_text("DEFINE TABLE IF NOT EXISTS ok SCHEMALESS;")
    (tmp_path / "0002_bad.surql").write_text(
        "DEFINE TABLE IF NOT EXISTS half SCHEMALESS;\nCREATE half:1;\nTHROW 'deliberate failure';"
    )
    with pytest.raises(SchemaError, match="0002_bad"):
        await schema.migrate(store, schema.load_migrations(tmp_path), embedding_dim=8)
    assert [r["name"] for r in await schema.applied_migrations(store)] == ["0001_ok"]
    assert "half" not in await table_names(store)


async def test_embedding_dimension_reaches_the_vector_index(raw_namespace, schema_copy) -> None:
    store = await raw_namespace()
    await schema.migrate(
        store,
        schema.load_migrations(schema_copy),
        embedding_dim=8,
        capabilities=frozenset({schema.ISOLATED_HNSW}),
    )
    info = await store.query_one("INFO FOR TABLE entity")
    hnsw = [text for text in info["indexes"].values() if "HNSW" in text]
    assert hnsw and all("DIMENSION 8 " in text for text in hnsw)


def test_badly_named_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "1_x.surql").write_text("")
    with pytest.raises(SchemaError, match="NNNN_name"):
        schema.load_migrations(tmp_path)
