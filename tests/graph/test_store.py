"""The store layer against the real SurrealDB server: isolation, parameters, errors."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from kgapp.graph.errors import GraphUnavailable, InvalidRecordId, QueryFailed, UniqueViolation
from kgapp.graph.live import LiveSubscription
from kgapp.graph.records import parse_record_id, to_json
from kgapp.graph.store import Pool, StoreConfig, TenantStore

SETUP = """
DEFINE TABLE IF NOT EXISTS entity SCHEMALESS;
DEFINE ANALYZER IF NOT EXISTS words TOKENIZERS blank, class FILTERS lowercase;
DEFINE INDEX IF NOT EXISTS entity_name ON entity FIELDS name FULLTEXT ANALYZER words BM25;
DEFINE INDEX IF NOT EXISTS entity_key ON entity FIELDS key UNIQUE;
"""


async def test_same_ids_in_two_tenants_never_cross(raw_namespace) -> None:
    a, b = await raw_namespace(), await raw_namespace()
    for store, who in ((a, "alpha"), (b, "beta")):
        await store.query(SETUP)
        await store.query(
            "CREATE entity:alice CONTENT {name: $name, key: 1}", {"name": f"Alice {who}"}
        )
    rows_a = await a.query_one("SELECT name FROM entity")
    rows_b = await b.query_one("SELECT name FROM entity")
    assert rows_a == [{"name": "Alice alpha"}]
    assert rows_b == [{"name": "Alice beta"}]
    found = await a.query_one("SELECT name FROM entity WHERE name @1@ $q", {"q": "beta"})
    assert found == []
    assert await b.query_one("SELECT name FROM entity WHERE name @1@ $q", {"q": "beta"}) == [
        {"name": "Alice beta"}
    ]


async def test_let_parameters_do_not_leak_across_tenants(raw_namespace) -> None:
    a, b = await raw_namespace(), await raw_namespace()
    await a.query("LET $secret = 'tenant-a-only'; RETURN $secret")
    assert await a.query_one("RETURN $secret") in ("tenant-a-only", None)
    assert await b.query_one("RETURN $secret") is None


@pytest.mark.parametrize(
    "value",
    [
        'O\'Brien "quoted"',
        "x; REMOVE TABLE entity; --",
        "⟩; DELETE entity; ⟨",
        "SELECT * FROM entity WHERE true",
        "$name `ident` \\ backslash",
        "emoji 🚀 and zero\u200bwidth",
    ],
)
async def test_hostile_values_are_stored_literally(raw_namespace, value: str) -> None:
    store = await raw_namespace()
    await store.query(SETUP)
    created = await store.query_one("CREATE entity CONTENT {name: $v, key: 1}", {"v": value})
    assert created[0]["name"] == value
    assert await store.query_one("SELECT VALUE name FROM entity") == [value]
    assert await store.query_one("SELECT VALUE name FROM entity WHERE name = $v", {"v": value}) == [
        value
    ]


async def test_failed_statement_raises_typed_error(raw_namespace) -> None:
    store = await raw_namespace()
    with pytest.raises(QueryFailed) as parse_error:
        await store.query("SELEC nonsense")
    assert "Parse error" in str(parse_error.value)
    await store.query(SETUP)
    await store.query("CREATE entity CONTENT {key: 7}")
    with pytest.raises(UniqueViolation):
        await store.query("CREATE entity CONTENT {key: 7}")


async def test_transaction_rolls_back_as_a_whole(raw_namespace) -> None:
    store = await raw_namespace()
    await store.query(SETUP)
    with pytest.raises(UniqueViolation):
        await store.transaction(
            "CREATE entity CONTENT {key: 1, name: 'first'}; CREATE entity CONTENT {key: 1}"
        )
    assert await store.query_one("SELECT * FROM entity") == []


async def test_unreachable_server_is_graph_unavailable() -> None:
    config = StoreConfig(url="ws://127.0.0.1:9", connect_attempts=2, backoff_base=0.01)
    store = TenantStore(Pool(config, "t_nowhere"))
    with pytest.raises(GraphUnavailable, match="unreachable"):
        await store.query("RETURN 1")


@pytest.mark.parametrize("credentials", [{"password": "wrong"}, {"username": None}])
async def test_a_refused_sign_in_is_graph_unavailable_and_says_why(
    store_config: StoreConfig, credentials: dict
) -> None:
    config = dataclasses.replace(store_config, **credentials)
    store = TenantStore(Pool(config, "t_refused_probe"))
    with pytest.raises(GraphUnavailable, match="refused the connection.*SURREAL_USER"):
        await store.query("RETURN 1")


async def test_query_timeout_is_reported(store_config: StoreConfig, raw_namespace) -> None:
    await raw_namespace()
    config = dataclasses.replace(store_config, query_timeout=0.2)
    store = TenantStore(Pool(config, "t_timeout_probe"))
    with pytest.raises(GraphUnavailable, match="did not answer"):
        await store.query("SLEEP 2s")


async def test_live_changes_stay_in_their_namespace(
    store_config: StoreConfig, raw_namespace
) -> None:
    a, b = await raw_namespace(), await raw_namespace()
    for store in (a, b):
        await store.query("DEFINE TABLE IF NOT EXISTS entity SCHEMALESS")
    async with LiveSubscription(store_config, a.namespace, "entity") as changes:
        await b.query("CREATE entity:bob SET name = 'Bob in B'")
        await a.query("CREATE entity:ann SET name = 'Ann in A'")
        await a.query("UPDATE entity:ann SET name = 'Ann renamed'")
        await a.query("DELETE entity:ann")
        stream = aiter(changes)
        seen = [await asyncio.wait_for(anext(stream), 5) for _ in range(3)]
    # Out of commit order at times when the engine is busy: the change feed orders.
    assert sorted((c.action, c.record) for c in seen) == [
        ("CREATE", "entity:ann"),
        ("DELETE", "entity:ann"),
        ("UPDATE", "entity:ann"),
    ]
    assert next(c for c in seen if c.action == "UPDATE").data["name"] == "Ann renamed"


def test_record_ids_from_outside_are_checked() -> None:
    assert to_json(parse_record_id("entity:abc_123")) == "entity:abc_123"
    assert to_json(parse_record_id("k1", "job")) == "job:k1"
    for bad in ["entity", "user:abc", "entity:a b", "entity:⟨x⟩", "entity:abc;DROP", "job:x"]:
        with pytest.raises(InvalidRecordId):
            parse_record_id(bad, "entity" if bad.startswith("job") else None)


async def test_vector_search_stays_in_its_namespace(raw_namespace) -> None:
    """Exact KNN, which the schema uses where HNSW is not isolated per namespace."""
    a, b = await raw_namespace(), await raw_namespace()
    for store in (a, b):
        await store.query("DEFINE TABLE IF NOT EXISTS entity SCHEMALESS")
    await a.query("CREATE entity:one SET v = [1.0, 0.0]; CREATE entity:two SET v = [0.9, 0.1]")
    await b.query("CREATE entity:one SET v = [1.0, 0.0]; CREATE entity:far SET v = [0.0, 1.0]")
    found = await a.query_one(
        "SELECT VALUE id FROM entity WHERE v <|3,COSINE|> $q", {"q": [1.0, 0.0]}
    )
    assert sorted(to_json(found)) == ["entity:one", "entity:two"]


async def test_provisioned_schema_matches_what_the_engine_isolates(raw_namespace) -> None:
    """The local engine (3.0.2) shares HNSW state across namespaces, so provisioning
    must not define HNSW indexes there; a server with the fix gets them."""
    from pathlib import Path

    from kgapp.graph import schema

    store = await raw_namespace()
    migrations = schema.load_migrations(Path(__file__).resolve().parents[2] / "schema")
    await schema.migrate(store, migrations, embedding_dim=4)
    capable = schema.ISOLATED_HNSW in await schema.server_capabilities(store)
    indexes = (await store.query_one("INFO FOR TABLE entity"))["indexes"]
    assert any("HNSW" in text for text in indexes.values()) == capable


async def test_a_failing_job_is_marked_failed_with_its_reason(migrated_store) -> None:
    from kgapp.graph import jobs

    store = await migrated_store(embedding_dim=4)
    job = await jobs.job_create(store, kind="probe")

    async def broken(_store):
        raise ValueError("the input was not what the job expected")

    with pytest.raises(ValueError):
        await jobs.job_run(store, job["id"], broken)
    row = await jobs.job_get(store, job["id"])
    assert row["status"] == "failed"
    assert row["error"] == "ValueError: the input was not what the job expected"


async def test_namespace_removal_survives_writers_in_flight(store_config: StoreConfig) -> None:
    from kgapp.graph.namespaces import namespace_define, namespace_names, namespace_remove

    root = TenantStore(Pool(store_config, None))
    namespace = "t_removal_race"
    await namespace_define(root, namespace, "graph")
    pool = Pool(store_config, namespace)
    store = TenantStore(pool)
    await store.query(SETUP)
    stop = asyncio.Event()
    written = 0

    async def writer(lane: int) -> None:  # a burst of writes, as a job's last updates
        nonlocal written
        for _ in range(30):
            if stop.is_set():
                return
            try:
                await store.query("CREATE entity SET name = $name", {"name": f"w{lane}"})
                written += 1
            except Exception:  # the namespace vanished under it: expected once removed
                return

    writers = [asyncio.create_task(writer(lane)) for lane in range(4)]
    try:
        while written < 40:
            assert not all(w.done() for w in writers), "the writers stopped early"
            await asyncio.sleep(0.01)
        await namespace_remove(root, namespace)  # conflicts with the burst are retried
        assert namespace not in await namespace_names(root)
    finally:
        stop.set()
        await asyncio.gather(*writers)
        await pool.close()
        await namespace_remove(root, namespace)
        await root._pool.close()


async def test_responses_decode_as_the_sdk_decodes_them(raw_namespace) -> None:
    """wire.decode (cbor2's C decoder) gives what the SDK's own decoder gives, for every
    kind of value the graph stores, read back from the real server."""
    from decimal import Decimal

    from surrealdb.connections import async_ws
    from surrealdb.data import cbor as sdk_cbor

    from kgapp.graph import wire

    assert async_ws.decode is wire.decode
    store = await raw_namespace()
    await store.query("DEFINE TABLE IF NOT EXISTS thing SCHEMALESS")
    await store.query(
        "CREATE thing:one SET at = d'2024-02-29T23:59:59.123456Z', gone = NONE, n = 42,"
        " x = 0.1f, big = 9223372036854775807, d = 1.25dec, span = 1h30m, name = 'Zoë ✓',"
        " link = thing:two, vector = [0.5f, -1.0f, 3.25f], nested = {a: [1, {b: NONE}]},"
        " raw = <bytes> 'abc', flag = true"
    )
    seen: list[bytes] = []
    original = async_ws.decode

    def keep(data: bytes):
        seen.append(data)
        return original(data)

    async_ws.decode = keep
    try:
        row = await store.query_one("SELECT * FROM ONLY thing:one")
    finally:
        async_ws.decode = original
    assert row["d"] == Decimal("1.25") and row["link"].table_name == "thing"
    assert seen and all(wire.decode(d) == sdk_cbor.decode(d) for d in seen)
