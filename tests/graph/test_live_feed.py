"""Reading a namespace's change feed (kgapp/graph/live.py): whole entries across pages,
late commits given once, and replays after a versionstamp, on the real SurrealDB."""

from __future__ import annotations

import asyncio

import pytest

from kgapp.graph import live

TABLES = frozenset({"a", "b"})
SCHEMA = """
DEFINE TABLE a SCHEMALESS CHANGEFEED 1d INCLUDE ORIGINAL;
DEFINE TABLE b SCHEMALESS CHANGEFEED 1d INCLUDE ORIGINAL;
DEFINE TABLE quiet SCHEMALESS;
"""
BOTH = "BEGIN; CREATE a SET n = $n; CREATE b SET n = $n; COMMIT;"


async def feed_start(store) -> int:
    """The versionstamp after the schema's own entries."""
    read = await live.read_feed(store, 0, TABLES)
    return read.entries[-1].versionstamp + 1


async def test_a_page_never_splits_a_transaction(raw_namespace) -> None:
    # LIMIT counts one key per table per versionstamp: 2 definitions + 1 + 2 * 498 keys
    # end the first page in the middle of the 499th two-table transaction.
    store = await raw_namespace()
    await store.query(SCHEMA)
    await store.query("CREATE a SET n = -1")
    for n in range(600):
        await store.query(BOTH, {"n": n})
    read = await live.read_feed(store, 0, TABLES)
    tagged = [(c.table, c.data["n"]) for e in read.entries for c in e.changes]
    assert sorted(tagged) == sorted(
        [("a", -1)] + [(table, n) for n in range(600) for table in ("a", "b")]
    )
    stamps = [e.versionstamp for e in read.entries]
    assert stamps == sorted(set(stamps))  # each versionstamp once, in order
    assert not read.more


async def test_changes_carry_action_table_and_versionstamp(raw_namespace) -> None:
    store = await raw_namespace()
    await store.query(SCHEMA)
    start = await feed_start(store)
    await store.query(
        "CREATE a:1 SET n = 1, v_embedding = [0.1]; UPDATE a:1 SET n = 2; DELETE a:1;"
        "CREATE quiet:1 SET n = 3;"
    )
    changes = await live.changes_since(store, start - 1, TABLES)
    assert [(c.action, c.record, c.data.get("n")) for c in changes] == [
        ("CREATE", "a:1", 1),
        ("UPDATE", "a:1", 2),
        ("DELETE", "a:1", None),
    ]
    assert "v_embedding" not in changes[0].data  # vectors are not sent to watchers
    stamps = [c.versionstamp for c in changes]
    assert stamps == sorted(stamps) and len(set(stamps)) == 3
    # A replay after a versionstamp starts right after it.
    assert [c.data.get("n") for c in await live.changes_since(store, stamps[0], TABLES)] == [
        2,
        None,
    ]
    assert await live.changes_since(store, stamps[-1], TABLES) == []


async def test_a_replay_over_its_budget_asks_for_a_reload(raw_namespace) -> None:
    store = await raw_namespace()
    await store.query(SCHEMA)
    start = await feed_start(store)
    for n in range(6):
        await store.query("CREATE a SET n = $n", {"n": n})
    assert len(await live.changes_since(store, start - 1, TABLES, most=6)) == 6
    with pytest.raises(live.ReplayTooLong):
        await live.changes_since(store, start - 1, TABLES, most=5)


async def test_tail_gives_each_change_once_and_a_late_commit_on_the_sweep(raw_namespace) -> None:
    store = await raw_namespace()
    await store.query(SCHEMA)
    tail = live.FeedTail(await live.server_now(store), lookback=60, tables=TABLES)
    assert await tail.read(store) == []
    await store.query("CREATE a SET n = 1; CREATE b SET n = 2;")
    assert [c.data["n"] for c in await tail.read(store)] == [1, 2]
    assert await tail.read(store, sweep=True) == []  # read again from the floor: nothing new

    # A commit that became visible after a later versionstamp had been read: the cursor
    # is past it, so only the sweep, which reads back `lookback` seconds, finds it.
    await store.query("CREATE a SET n = 3")
    late = (await live.read_feed(store, tail.cursor, TABLES)).entries[-1].versionstamp
    tail.cursor = late + 1
    assert await tail.read(store) == []
    assert [c.data["n"] for c in await tail.read(store, sweep=True)] == [3]
    assert await tail.read(store, sweep=True) == []


async def test_tail_under_concurrent_writers_gives_every_commit_exactly_once(
    raw_namespace,
) -> None:
    store = await raw_namespace()
    await store.query(SCHEMA)
    tail = live.FeedTail(await live.server_now(store), lookback=1.0, tables=TABLES)
    given: list[tuple[str, int]] = []
    writing = True

    async def follow() -> None:
        sweeps = 0
        while writing:
            sweeps += 1
            given.extend(
                (c.table, c.data["n"]) for c in await tail.read(store, sweep=sweeps % 3 == 0)
            )

    async def write(worker: int) -> None:
        for i in range(60):
            await store.query(BOTH, {"n": worker * 1000 + i})

    follower = asyncio.create_task(follow())
    await asyncio.gather(*(write(w) for w in range(4)))
    await asyncio.sleep(0.1)
    writing = False
    await follower
    given.extend((c.table, c.data["n"]) for c in await tail.read(store, sweep=True))
    expected = [(t, w * 1000 + i) for w in range(4) for i in range(60) for t in ("a", "b")]
    assert sorted(given) == sorted(expected)  # 0 missed, 0 twice
