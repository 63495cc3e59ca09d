"""The explorer's socket is fed from the change feed: every committed change reaches it
once, whether or not a LIVE SELECT on this node rings for it, and a client that
reconnects with its versionstamp cursor gets exactly what it missed.

On a SurrealDB cluster a LIVE SELECT never hears the writes of the other nodes. Two
server processes cannot share storage here (rocksdb:// and surrealkv:// lock their
directory; mem:// is private to its process), so the writes go through connections of
their own, like a worker's, and `LIVE_SELECT = False` takes the cluster's case: the hub
then learns of them from the feed alone.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from typing import Any
from urllib.parse import quote

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from surrealdb.data.types.record_id import RecordID

from kgapp.asgi import application
from kgapp.graph.store import Pool, TenantStore
from tenants.wiring import store_config
from tests.web.test_live_socket import ORIGIN, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

Key = tuple[str, str, str | None]  # action, record, the summary an update wrote

CREATE = "CREATE ONLY $id CONTENT {name: $name, canonical_name: $name} RETURN NONE;"
UPDATE = "UPDATE ONLY $id SET summary = $summary RETURN NONE;"
DELETE = "DELETE $id;"
# Two tables in one transaction: one versionstamp, two changes.
JOB_AND_UPDATE = """BEGIN;
CREATE ONLY $job CONTENT {kind: 'probe', status: 'queued', counts: {}, timings: {}} RETURN NONE;
UPDATE ONLY $id SET summary = $summary RETURN NONE;
COMMIT;"""

_serial = itertools.count()


def writer(tenant: Any) -> TenantStore:
    """Connections of their own, outside the web process's runtime (like a worker's, or
    another node's): the hub's live queries are not on them."""
    return TenantStore(Pool(store_config(), tenant.namespace))


async def write_step(store: TenantStore, name: str, step: int) -> list[Key]:
    """One write of a repeating mix of creates, updates, deletes and a two-table
    transaction; what a watcher should see of it."""
    entity = RecordID("entity", name)
    record = f"entity:{name}"
    kind = step % 4
    if kind == 0:
        await store.query(CREATE, {"id": entity, "name": name})
        return [("CREATE", record, None)]
    if kind == 1:
        await store.query(UPDATE, {"id": entity, "summary": f"{name} once"})
        return [("UPDATE", record, f"{name} once")]
    if kind == 2:
        job = RecordID("job", f"{name}_job")
        await store.query(JOB_AND_UPDATE, {"job": job, "id": entity, "summary": f"{name} twice"})
        return [("CREATE", f"job:{name}_job", None), ("UPDATE", record, f"{name} twice")]
    await store.query(DELETE, {"id": entity})
    return [("DELETE", record, None)]


async def write_many(store: TenantStore, steps: int, pause: float = 0.0) -> list[Key]:
    """`steps` writes in groups of four on fresh entities (create, update, job + update,
    delete), one after another."""
    expected: list[Key] = []
    name = f"e{next(_serial)}"
    for step in range(steps):
        if step % 4 == 0:
            name = f"e{next(_serial)}"
        expected += await write_step(store, name, step)
        if pause:
            await asyncio.sleep(pause)
    return expected


def key(message: dict[str, Any]) -> Key:
    summary = message["data"].get("summary") if message["action"] == "UPDATE" else None
    return (message["action"], message["record"], summary)


async def graph_socket(slug: str, headers: list[Any], since: str | None = None) -> Any:
    path = f"/ws/t/{slug}/graph/" + (f"?since={quote(since)}" if since else "")
    socket = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await socket.connect(timeout=15)
    assert connected
    return socket


async def receive_changes(socket: Any, count: int, timeout: float = 15) -> list[dict[str, Any]]:
    """`count` change messages, then proof that no other follows."""
    changes: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while len(changes) < count:
            message = await socket.receive_json_from(timeout=timeout)
            if message["type"] == "change":
                changes.append(message)
    while not await socket.receive_nothing(timeout=0.6):  # > the feed's interval
        assert (await socket.receive_json_from())["type"] != "change"  # one too many
    return changes


async def ready(socket: Any) -> None:
    assert (await socket.receive_json_from(timeout=15))["type"] == "live.ready"


def cursor(changes: list[dict[str, Any]]) -> str:
    return str(max(int(c["versionstamp"]) for c in changes))


def missed_and_twice(received: list[Key], expected: list[Key]) -> tuple[int, int]:
    got, want = Counter(received), Counter(expected)
    return sum((want - got).values()), sum((got - want).values())


@pytest.mark.parametrize("live_select", [True, False], ids=["live-select-and-feed", "feed-only"])
async def test_every_change_reaches_the_explorer_once(
    make_tenant, member, settings, live_select: bool
) -> None:
    settings.LIVE_SELECT = live_select
    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant)
    socket = await graph_socket(tenant.slug, [ORIGIN, await sync_to_async(session_cookie)(user)])
    await ready(socket)

    stores = [writer(tenant) for _ in range(3)]  # three writers at once
    batches = await asyncio.gather(*(write_many(store, 68) for store in stores))
    expected = [change for batch in batches for change in batch]
    assert len(expected) > 200
    changes = await receive_changes(socket, len(expected))
    assert missed_and_twice([key(c) for c in changes], expected) == (0, 0)
    assert all(c["versionstamp"].isdigit() and not c.get("replayed") for c in changes)
    await socket.disconnect()


async def test_a_reconnecting_client_gets_exactly_what_it_missed(make_tenant, member) -> None:
    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant)
    headers = [ORIGIN, await sync_to_async(session_cookie)(user)]
    store = writer(tenant)
    socket = await graph_socket(tenant.slug, headers)
    await ready(socket)
    seen = await receive_changes(socket, len(await write_many(store, 8)))
    await socket.disconnect()

    missed = await write_many(store, 12)  # while away
    socket = await graph_socket(tenant.slug, headers, since=cursor(seen))
    await ready(socket)
    replay = []
    while (message := await socket.receive_json_from(timeout=15))["type"] != "replay.done":
        replay.append(message)
    assert all(m["type"] == "change" and m["replayed"] for m in replay)
    assert missed_and_twice([key(m) for m in replay], missed) == (0, 0)
    assert message["count"] == len(missed)

    after = await write_many(store, 4)  # live again, and nothing of the replay twice
    live = await receive_changes(socket, len(after))
    assert missed_and_twice([key(m) for m in live], after) == (0, 0)
    await socket.disconnect()


async def test_a_client_that_had_no_change_yet_replays_from_its_ready_cursor(
    make_tenant, member
) -> None:
    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant)
    headers = [ORIGIN, await sync_to_async(session_cookie)(user)]
    store = writer(tenant)
    socket = await graph_socket(tenant.slug, headers)
    hello = await socket.receive_json_from(timeout=15)
    assert hello["type"] == "live.ready" and hello["versionstamp"].isdigit()
    await socket.disconnect()
    missed = await write_many(store, 6)
    socket = await graph_socket(tenant.slug, headers, since=hello["versionstamp"])
    await ready(socket)
    replay = []
    while (message := await socket.receive_json_from(timeout=15))["type"] != "replay.done":
        replay.append(message)
    assert missed_and_twice([key(m) for m in replay], missed) == (0, 0)
    await socket.disconnect()


async def test_a_change_in_the_replay_is_not_sent_again_live(make_tenant, member, settings) -> None:
    # Feed only, read every 2 s: changes committed just after a read reach a socket that
    # reconnects before the next one twice, in its replay and from the hub's next read.
    settings.LIVE_SELECT, settings.LIVE_FEED_INTERVAL = False, 2.0
    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant)
    headers = [ORIGIN, await sync_to_async(session_cookie)(user)]
    store = writer(tenant)
    watcher = await graph_socket(tenant.slug, headers)  # keeps the hub and its timing
    await ready(watcher)
    seen = await receive_changes(watcher, len(await write_many(store, 4)), timeout=5)
    missed = await write_many(store, 8)  # just after the hub's read
    socket = await graph_socket(tenant.slug, headers, since=cursor(seen))
    await ready(socket)
    replay = []
    while (message := await socket.receive_json_from(timeout=15))["type"] != "replay.done":
        replay.append(message)
    assert missed_and_twice([key(m) for m in replay], missed) == (0, 0)
    live = await receive_changes(watcher, len(missed), timeout=5)  # the hub's next read
    assert missed_and_twice([key(m) for m in live], missed) == (0, 0)
    assert await socket.receive_nothing(timeout=0.5)  # not twice
    await socket.disconnect()
    await watcher.disconnect()


async def test_no_change_is_lost_across_drops_while_writes_go_on(make_tenant, member) -> None:
    """The short version of bench/live_feed.py: the client drops its socket 5 times while
    one writer commits 160 writes; after each reconnect it replays from its cursor."""
    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant)
    headers = [ORIGIN, await sync_to_async(session_cookie)(user)]
    socket = await graph_socket(tenant.slug, headers)
    await ready(socket)
    writes = asyncio.create_task(write_many(writer(tenant), 160, pause=0.01))
    received: list[dict[str, Any]] = []
    for _ in range(5):
        await asyncio.sleep(0.35)
        while not await socket.receive_nothing(timeout=0.02):  # what reached us so far
            message = await socket.receive_json_from()
            if message["type"] == "change":
                received.append(message)
        await socket.disconnect()
        await asyncio.sleep(0.1)
        socket = await graph_socket(tenant.slug, headers, since=cursor(received))
    expected = await writes
    rest = len(expected) - len(received)
    received += await receive_changes(socket, rest)
    assert missed_and_twice([key(m) for m in received], expected) == (0, 0)
    await socket.disconnect()


async def test_a_socket_that_lost_a_batch_closes_so_that_the_client_replays(
    make_tenant, member
) -> None:
    # A channel layer drops messages to a socket with 100 waiting. The hub numbers its
    # batches; a socket that finds a number missing closes, and the explorer reconnects
    # with its cursor. A batch published again (after a channel-layer error) is ignored.
    from channels.layers import get_channel_layer

    from kgapp.web import live as hubs

    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant)
    socket = await graph_socket(tenant.slug, [ORIGIN, await sync_to_async(session_cookie)(user)])
    await ready(socket)
    group = hubs._hubs[asyncio.get_running_loop()][tenant.namespace].group
    change = {
        "action": "CREATE",
        "table": "job",
        "record": "job:x",
        "data": {},
        "versionstamp": "1",
    }
    batch = {"type": "graph.changes", "changes": [change], "at": None}
    layer = get_channel_layer()
    await layer.group_send(group, {**batch, "seq": 1000})
    assert (await socket.receive_json_from(timeout=5))["record"] == "job:x"
    await layer.group_send(group, {**batch, "seq": 1000})  # again: ignored
    assert await socket.receive_nothing(timeout=0.3)
    await layer.group_send(group, {**batch, "seq": 1002})  # 1001 lost
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4409}


async def test_a_replay_the_store_cannot_give_closes_the_socket_to_come_back(
    make_tenant, member, settings, monkeypatch
) -> None:
    # Kept open, the socket would go live without the changes it missed.
    import socket as sockets

    from kgapp.web import consumers

    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant)
    headers = [ORIGIN, await sync_to_async(session_cookie)(user)]
    with sockets.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    settings.SURREAL_URL, settings.SURREAL_CONNECT_ATTEMPTS = f"ws://127.0.0.1:{closed}", 1
    monkeypatch.setattr(consumers, "READY_TIMEOUT", 1.0)
    socket = await graph_socket(tenant.slug, headers, since="1")
    assert (await socket.receive_json_from(timeout=15))["type"] == "live.unavailable"
    assert (await socket.receive_json_from(timeout=15))["type"] == "live.unavailable"
    assert await socket.receive_output(timeout=15) == {"type": "websocket.close", "code": 4503}
