"""Live updates end to end, through the real web server (kgapp.web.serve), Redis and SurrealDB:

1. latency from issuing a write (through a connection of its own, like a worker's) to
   the explorer's socket receiving it, with the hub reading the change feed only
   (KG_LIVE_SELECT=0: what a write through another cluster node gets) and with LIVE
   SELECT ringing for an immediate read (one node);
2. drops: SurrealDB (rocksdb://, same port) and Redis (the channel layer) restarted in
   turn while one writer commits, the client reconnecting with its versionstamp cursor
   as the explorer does; every change must arrive exactly once.

Everything runs on its own ports and in a temporary folder (its own Redis, never the
shared one).

    .venv/bin/python bench/live_feed.py [--writes 200] [--drop-writes 1000] [--drops 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from surrealdb.data.types.record_id import RecordID  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402
from websockets.exceptions import WebSocketException  # noqa: E402

from kgapp import surreal_server  # noqa: E402
from kgapp.graph import queries  # noqa: E402
from kgapp.graph.errors import GraphError  # noqa: E402
from kgapp.graph.store import Pool, StoreConfig, TenantStore  # noqa: E402

NAMESPACE = "t_demo"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def figures(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"p50 {statistics.median(ordered):6.1f} ms   p95 {p95:6.1f} ms   max {ordered[-1]:6.1f} ms"
    )


class Redis:
    def __init__(self, var: Path):
        self.port = free_port()
        self.log = var / "redis.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        for _ in range(100):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()


class Surreal:
    def __init__(self, var: Path):
        self.bind = f"127.0.0.1:{free_port()}"
        self.storage = f"rocksdb://{var / 'surreal'}"
        self.log = var / "surreal.log"
        self.credentials = surreal_server.Credentials.generate()
        self.server: surreal_server.RunningServer | None = None

    def start(self) -> None:
        self.server = surreal_server.start(
            bind=self.bind, storage=self.storage, log=self.log, credentials=self.credentials
        )

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()

    @property
    def url(self) -> str:
        return f"ws://{self.bind}"


def django_env(var: Path, surreal: Surreal, redis: Redis) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kgapp.settings.test",
        "KG_VAR_DIR": str(var),
        "SURREAL_URL": surreal.url,
        **surreal.credentials.env(),
        "DATABASE_URL": f"sqlite:///{var / 'bench.sqlite3'}",
        "REDIS_URL": f"redis://127.0.0.1:{redis.port}/0",
    }


def prepare(env: dict[str, str]) -> str:
    """Migrate, make the demo tenant and its owner; the owner's session cookie."""
    for command in (["migrate", "--noinput", "-v", "0"], ["bootstrap_demo"]):
        subprocess.run(
            [sys.executable, "manage.py", *command],
            env=env,
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    script = (
        "from django.contrib.auth import get_user_model; from django.test import Client;"
        "c = Client(); c.force_login(get_user_model().objects.get(username='admin'));"
        "print(c.cookies['sessionid'].value)"
    )
    session = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"sessionid={session.splitlines()[-1]}"


def start_web(
    var: Path, env: dict[str, str], live_select: bool
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kgapp.web.serve",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "kgapp.asgi:application",
        ],
        env={**env, "KG_LIVE_SELECT": "1" if live_select else "0"},
        cwd=ROOT,
        stdout=(var / "daphne.log").open("ab"),
        stderr=subprocess.STDOUT,
    )
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=2).close()
            return web, port
        except OSError:
            time.sleep(0.3)
    raise RuntimeError((var / "daphne.log").read_text()[-2000:])


class Explorer:
    """The explorer's socket protocol: remember the highest versionstamp; on any close,
    reconnect with `?since=` it."""

    def __init__(self, port: int, cookie: str):
        self.url = f"ws://127.0.0.1:{port}/ws/t/demo/graph/"
        self.headers = {"Origin": f"http://127.0.0.1:{port}", "Cookie": cookie}
        self.cursor: int | None = None
        self.received: list[tuple[str, float]] = []  # record, when
        self.connects = 0
        self.reloads = 0
        self.ready = asyncio.Event()
        self.closing = False

    async def follow(self) -> None:
        while not self.closing:
            since = f"?since={self.cursor}" if self.cursor is not None else ""
            try:
                async with connect(
                    self.url + since,
                    additional_headers=self.headers,
                    open_timeout=10,
                    max_size=None,
                ) as ws:
                    self.connects += 1
                    async for raw in ws:
                        self.take(json.loads(raw))
            except (OSError, TimeoutError, WebSocketException):
                pass
            if not self.closing:
                await asyncio.sleep(0.3)

    def take(self, message: dict[str, Any]) -> None:
        if message["type"] == "live.ready":
            self.ready.set()
        elif message["type"] == "replay.reload":
            self.reloads += 1
        elif message["type"] == "change" and message["table"] == "entity":
            self.received.append((message["record"], time.perf_counter()))
            stamp = int(message["versionstamp"])
            self.cursor = stamp if self.cursor is None else max(self.cursor, stamp)


async def write(store: TenantStore, key: str) -> None:
    """Create entity:`key`, retrying through outages; a create that reports the record
    as existing had committed before its answer was lost."""
    while True:
        try:
            await store.query(
                queries.ENTITY_CREATE,
                {"id": RecordID("entity", key), "row": {"name": key, "canonical_name": key}},
            )
            return
        except GraphError as error:
            if "already exists" in str(error):
                return
            await asyncio.sleep(0.2)


def writer_store(surreal: Surreal) -> TenantStore:
    config = StoreConfig(
        url=surreal.url,
        username=surreal.credentials.user,
        password=surreal.credentials.password,
        query_timeout=5,
        connect_attempts=1,
    )
    return TenantStore(Pool(config, NAMESPACE))


async def latency(port: int, cookie: str, surreal: Surreal, writes: int, tag: str) -> list[float]:
    explorer = Explorer(port, cookie)
    following = asyncio.create_task(explorer.follow())
    await asyncio.wait_for(explorer.ready.wait(), 30)
    store = writer_store(surreal)
    issued: dict[str, float] = {}
    for i in range(writes):
        key = f"{tag}{i}"
        issued[f"entity:{key}"] = time.perf_counter()
        await write(store, key)
        await asyncio.sleep(random.uniform(0.02, 0.12))  # every phase of the feed's interval
    deadline = time.monotonic() + 10
    while len(explorer.received) < writes and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    explorer.closing = True
    following.cancel()
    got = dict(explorer.received)
    if len(got) != writes:
        raise RuntimeError(f"{writes - len(got)} of {writes} writes never reached the socket")
    return [(got[record] - issued[record]) * 1000 for record in issued]


async def drops(
    port: int, cookie: str, surreal: Surreal, redis: Redis, writes: int, count: int
) -> dict[str, Any]:
    explorer = Explorer(port, cookie)
    following = asyncio.create_task(explorer.follow())
    await asyncio.wait_for(explorer.ready.wait(), 30)
    store = writer_store(surreal)
    every = writes // (count + 1)
    restarts = Counter[str]()
    expected = []
    for i in range(writes):
        if i and i % every == 0 and sum(restarts.values()) < count:
            which = "surrealdb" if sum(restarts.values()) % 2 == 0 else "redis"
            server = surreal if which == "surrealdb" else redis
            await asyncio.to_thread(server.stop)
            await asyncio.sleep(0.3)
            await asyncio.to_thread(server.start)
            restarts[which] += 1
        key = f"drop{i}"
        await write(store, key)
        expected.append(f"entity:{key}")
        await asyncio.sleep(0.005)
    deadline = time.monotonic() + 60
    while len(explorer.received) < writes and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    await asyncio.sleep(1.0)  # anything late or twice
    explorer.closing = True
    following.cancel()
    got = Counter(record for record, _ in explorer.received)
    want = Counter(expected)
    return {
        "writes": writes,
        "restarts": dict(restarts),
        "missed": sum((want - got).values()),
        "twice": sum((got - want).values()),
        "connects": explorer.connects,
        "reloads": explorer.reloads,
    }


def main(writes: int, drop_writes: int, drop_count: int) -> None:
    with tempfile.TemporaryDirectory(prefix="live-feed-") as folder:
        var = Path(folder)
        redis, surreal = Redis(var), Surreal(var)
        redis.start()
        surreal.start()
        env = django_env(var, surreal, redis)
        cookie = prepare(env)
        try:
            for live_select in (False, True):
                web, port = start_web(var, env, live_select)
                try:
                    mode = "feed + LIVE SELECT" if live_select else "feed only (0.2 s)"
                    samples = asyncio.run(
                        latency(port, cookie, surreal, writes, f"l{int(live_select)}_")
                    )
                    print(f"write -> explorer socket, {mode}, {writes} writes: {figures(samples)}")
                    if live_select and drop_writes:
                        result = asyncio.run(
                            drops(port, cookie, surreal, redis, drop_writes, drop_count)
                        )
                        print(f"drops: {json.dumps(result)}")
                finally:
                    web.terminate()
                    web.wait()
        finally:
            surreal.stop()
            redis.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--drop-writes", type=int, default=1000)
    parser.add_argument("--drops", type=int, default=20)
    arguments = parser.parse_args()
    main(arguments.writes, arguments.drop_writes, arguments.drops)
