"""The clients of a cluster (tests/cluster.py) and what they are checked against: the
uploads (conversations whose every message is one episode with one scripted fact), the
explorer's socket as a browser drives it (reconnecting to a surviving web server with its
cursor), a search probe that asks every live web server for each fact until all of them
find it, and the truths: the tenant's change feed as SurrealDB recorded it, and the
search index a machine's indexer left on disk.

Used by tests/test_cluster.py and bench/cluster_sim.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import tantivy
from django.contrib.auth import get_user_model
from django.test import Client
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

from harness.cluster import Cluster
from harness.graph import graph_read
from kgapp.graph import jobs, live
from kgapp.graph.index.cache import TenantIndex
from kgapp.graph.records import parse_record_id, record_key, to_json
from tenants import services
from tenants.models import Role

# --- the uploads and the scripted model -------------------------------------------------


def word(n: int) -> str:
    """A made-up word of letters only (the index splits letters from digits), one per
    fact: a search for it finds that fact and no other."""
    letters = ""
    for _ in range(3):
        n, rest = divmod(n, 26)
        letters += chr(97 + rest)
    return "zq" + letters


@dataclass(frozen=True)
class Upload:
    name: str
    words: tuple[str, ...]  # one per message, episode and fact

    def people(self) -> list[str]:
        return [f"Wren {w.title()}" for w in self.words]

    def places(self) -> list[str]:
        return [f"Harbour {w.title()} Works" for w in self.words]

    def data(self) -> bytes:
        # Messages seven hours apart: each becomes an episode of its own.
        return json.dumps(
            [
                {
                    "speaker": person,
                    "text": f"I work at {place}.",
                    "timestamp": 1_700_000_000 + i * 7 * 3600,
                }
                for i, (person, place) in enumerate(zip(self.people(), self.places(), strict=True))
            ]
        ).encode()


def uploads(sizes: list[int], first: int = 0) -> list[Upload]:
    made, n = [], first
    for number, size in enumerate(sizes):
        made.append(Upload(f"chat-{first + number}.json", tuple(word(n + i) for i in range(size))))
        n += size
    return made


async def upload(client: httpx.AsyncClient, url: str, slug: str, item: Upload) -> str:
    """POST the file to one web server; its job id."""
    answer = await client.post(
        f"{url}/api/v1/t/{slug}/documents",
        files={"files": (item.name, item.data(), "application/json")},
    )
    assert answer.status_code == 202, answer.text
    return str(answer.json()[0]["job_id"])


# --- the explorer's socket ----------------------------------------------------------------

Seen = tuple[int, str, str, str]  # versionstamp, table, record, action


@dataclass
class Follower:
    """The explorer's socket protocol, as bench/live_feed.py drives it: keep the highest
    versionstamp had; when the socket closes, open it again with `?since=` that, on its
    own web server or, when that one is gone, on the first that answers."""

    name: str
    home: str  # the machine whose web server it opens first
    urls: Callable[[], dict[str, str]]  # the web servers alive, by machine
    slug: str
    cookie: str
    on_change: Callable[[dict[str, Any]], None] = lambda change: None
    first: int | None = None  # the cursor live.ready gave the first time
    cursor: int | None = None
    received: list[Seen] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)  # the machine of each connection
    replays: list[tuple[float, int]] = field(default_factory=list)  # when, how many
    reloads: int = 0
    closing: bool = False

    def __post_init__(self) -> None:
        self.ready = asyncio.Event()

    async def follow(self) -> None:
        while not self.closing:
            urls = self.urls()
            for machine in sorted(urls, key=lambda m: m != self.home):
                await self._connect(machine, urls[machine])
                if self.closing:
                    return
            await asyncio.sleep(0.2)

    async def _connect(self, machine: str, url: str) -> None:
        since = f"?since={self.cursor}" if self.cursor is not None else ""
        socket_url = url.replace("http://", "ws://") + f"/ws/t/{self.slug}/graph/{since}"
        headers = {"Origin": url, "Cookie": self.cookie}
        with contextlib.suppress(OSError, TimeoutError, WebSocketException):
            async with connect(
                socket_url, additional_headers=headers, open_timeout=10, max_size=None
            ) as ws:
                self.servers.append(machine)
                async for raw in ws:
                    self._take(json.loads(raw))

    def _take(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "live.ready" and self.cursor is None and message.get("versionstamp"):
            self.first = self.cursor = int(message["versionstamp"])
            self.ready.set()
        elif kind == "replay.done":
            self.replays.append((time.time(), int(message["count"])))
        elif kind == "replay.reload":
            self.reloads += 1
        elif kind == "change":
            stamp = int(message["versionstamp"])
            self.received.append((stamp, message["table"], message["record"], message["action"]))
            self.cursor = stamp if self.cursor is None else max(self.cursor, stamp)
            self.on_change(message)

    def compare(self, feed: list[Seen]) -> dict[str, int]:
        """What it got against what the feed recorded after its first cursor."""
        assert self.first is not None
        want = Counter(seen for seen in feed if seen[0] > self.first)
        got = Counter(self.received)
        return {
            "expected": sum(want.values()),
            "got": sum(got.values()),
            "missing": sum((want - got).values()),
            "extra": sum((got - want).values()),
            "twice": sum(n - 1 for n in got.values() if n > 1),
        }


async def feed_truth(graph: Any, since: int) -> list[Seen]:
    """Every change of the live tables the change feed recorded after `since`."""
    found: list[Seen] = []
    cursor: live.Cursor = since + 1
    while True:
        read = await graph.arun(live.read_feed, cursor)
        found += [
            (c.versionstamp, c.table, c.record, c.action)
            for entry in read.entries
            for c in entry.changes
        ]
        cursor = read.cursor
        if not read.more:
            return found


# --- searches on every web server ---------------------------------------------------------


@dataclass
class SearchProbe:
    """Asks each live web server, over and over and each at its own pace, for every
    expected fact it has not found yet (a BM25 search of the facts' own words), and notes
    when each server first found each fact (the moment its answer came: an upper bound)
    and when the last of the servers then serving did. A server that (re)starts counts
    once it has answered a first search, whose time is kept apart (`first_answers`): the
    first search of a process loads the search code and opens the index."""

    urls: Callable[[], dict[str, str]]
    slug: str
    token: str
    pending: dict[str, float] = field(default_factory=dict)  # word -> when expected
    seen: dict[str, dict[str, float]] = field(default_factory=dict)  # word -> machine -> when
    agreed: dict[str, float] = field(default_factory=dict)  # word -> when all live had it
    records: dict[str, str] = field(default_factory=dict)  # word -> fact record
    requests: dict[str, list[float]] = field(default_factory=dict)  # machine -> seconds each
    errors: Counter[str] = field(default_factory=Counter)
    answering: set[str] = field(default_factory=set)  # machines serving since they appeared
    first_answers: list[float] = field(default_factory=list)  # s from its return to answering
    stopping: bool = False

    def expect(self, words: tuple[str, ...]) -> None:
        for w in words:
            self.pending.setdefault(w, time.time())

    async def run(self) -> None:
        async with httpx.AsyncClient(
            headers={"Authorization": f"Bearer {self.token}"}, timeout=10
        ) as client:
            await asyncio.gather(*(self._poll(client, machine) for machine in self.urls()))

    async def _poll(self, client: httpx.AsyncClient, machine: str) -> None:
        down, back = False, None  # back: when it came back after it was down
        while not self.stopping:
            if machine not in self.urls():  # down: polled again once it is back
                self.answering.discard(machine)
                down = True
                await asyncio.sleep(0.1)
                continue
            if down:
                down, back = False, time.time()
            asked = [w for w in self.pending if machine not in self.seen.get(w, {})][:100]
            if asked or machine not in self.answering:
                began = time.time()
                try:
                    found = await self._search(client, self.urls()[machine], asked or ["warm"])
                except (httpx.HTTPError, KeyError) as error:
                    self.errors[f"{machine}: {_kind(error)}"] += 1
                else:
                    now = time.time()
                    self.requests.setdefault(machine, []).append(now - began)
                    if machine not in self.answering:
                        self.answering.add(machine)
                        if back is not None:
                            self.first_answers.append(now - back)
                            back = None
                    for w, record in found.items():
                        self.records[w] = record
                        self.seen.setdefault(w, {})[machine] = now
            self._agree()
            await asyncio.sleep(0.03)

    def _agree(self) -> None:
        alive = set(self.urls()) & self.answering
        for w in list(self.pending):
            if alive and alive <= set(self.seen.get(w, {})):
                self.agreed[w] = max(self.seen[w][m] for m in alive)
                del self.pending[w]

    async def _search(self, client: httpx.AsyncClient, url: str, asked: list[str]) -> dict:
        answer = await client.post(
            f"{url}/api/v1/t/{self.slug}/search",
            json={"query": " ".join(asked), "scopes": ["facts"], "methods": ["bm25"], "limit": 100},
        )
        answer.raise_for_status()
        wanted = set(asked)
        found = {}
        for hit in answer.json()["facts"]:
            for w in wanted & set(hit["fact"].lower().replace(".", "").split()):
                found[w] = hit["id"]
        return found

    def refusals(self) -> dict[str, int]:
        """The searches a web server answered with an error status (not those cut short
        by a web server's death)."""
        return {key: n for key, n in self.errors.items() if "status" in key}

    def lags(self, commits: dict[str, float]) -> dict[str, float]:
        """Seconds from each fact's commit to the moment every live server found it."""
        return {
            w: self.agreed[w] - commits[r]
            for w, r in self.records.items()
            if w in self.agreed and r in commits
        }


def _kind(error: Exception) -> str:
    if isinstance(error, httpx.HTTPStatusError):
        return f"status {error.response.status_code}"
    return type(error).__name__


def commit_times(feed: list[Seen]) -> dict[str, float]:
    """When each fact was committed: its creation's versionstamp is the server's clock in
    milliseconds, shifted left 16 bits (kgapp/graph/live.py)."""
    return {
        record: (stamp >> 16) / 1000
        for stamp, table, record, action in feed
        if table == "relates_to" and action == "CREATE"
    }


# --- the graph and a machine's index ------------------------------------------------------


def index_matches_graph(graph: Any, search_dir: Path, namespace: str) -> dict[str, Any]:
    """The live rows of the machine's fact and entity indexes against the graph's
    records: what is missing from the index, what it has that the graph does not, and
    live rows whose text tantivy does not hold (no search by words finds them) or holds
    twice."""
    index = TenantIndex(search_dir / namespace, namespace)
    index.refresh()
    tables = graph_read(graph).tables
    facts = {record_key(f["id"]) for f in tables["relates_to"]}
    entities = {record_key(e["id"]) for e in tables["entity"] if e.get("merged_into") is None}
    differences: dict[str, Any] = {}
    for name, table, records in (
        ("facts", index.facts, facts),
        ("entities", index.entities, entities),
    ):
        alive = [row for row, live_row in enumerate(table.column("alive")) if live_row]
        indexed = {table.keys[row] for row in alive}
        texts = Counter(_text_rows(table))
        differences[name] = {
            "missing": sorted(records - indexed),
            "extra": sorted(indexed - records),
            "without_text": sorted(table.keys[row] for row in alive if not texts[row]),
            "text_twice": sorted(table.keys[row] for row in alive if texts[row] > 1),
        }
    return differences


def _text_rows(table: Any) -> list[int]:
    """The row of every document in the table's tantivy index."""
    searcher = table.text.index.searcher()
    hits = searcher.search(tantivy.Query.all_query(), max(1, searcher.num_docs)).hits
    return [int(row) for row in searcher.fast_field_values("row", [a for _, a in hits])]


# --- the user, uploading, waiting ---------------------------------------------------------


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def cluster_user(tenant) -> tuple[str, str]:
    """An editor of the tenant: an API token, and a session cookie for the sockets."""
    user = get_user_model().objects.create_user(f"cluster-{tenant.slug}", password="pw")
    services.membership_set(tenant=tenant, user=user, role=Role.EDITOR)
    _, token = services.token_create(user=user, name="cluster")
    return token, session_cookie(user)


async def send(
    client: httpx.AsyncClient, cluster: Cluster, slug: str, items: list[Upload], probe: SearchProbe
) -> list[str]:
    """Each upload to the two web servers in turn; their facts become expected."""
    urls = [url for _, url in sorted(cluster.web_urls().items())]
    ids = []
    for n, item in enumerate(items):
        probe.expect(item.words)
        ids.append(await upload(client, urls[n % len(urls)], slug, item))
    return ids


async def warm(client: httpx.AsyncClient, cluster: Cluster, slug: str) -> None:
    """A first search loads the search code and opens the index in each web process:
    done before anything is timed, as any serving process has."""
    for url in cluster.web_urls().values():
        answer = await client.post(
            f"{url}/api/v1/t/{slug}/search", json={"query": "warm", "methods": ["bm25"]}
        )
        assert answer.status_code == 200, answer.text


async def wait_jobs(graph: Any, ids: list[str], timeout: float) -> dict[str, dict[str, Any]]:
    """The jobs' rows once every one has ended (or as they are at the deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = {i: to_json(await graph.arun(jobs.job_get, parse_record_id(i, "job"))) for i in ids}
        ended = all(row["status"] in ("completed", "failed") for row in rows.values())
        if ended or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def watching(
    cluster: Cluster, slug: str, token: str, cookie: str
) -> AsyncIterator[tuple[list[Follower], SearchProbe]]:
    """Two explorer sockets on each machine's web server and a search probe, running and
    connected for the block; stopped at its end."""
    probe = SearchProbe(cluster.web_urls, slug, token)
    followers = [
        Follower(f"{m}{n}", m, cluster.web_urls, slug, cookie)
        for m in sorted(cluster.machines)
        for n in (1, 2)
    ]
    tasks = [asyncio.create_task(f.follow()) for f in followers]
    tasks.append(asyncio.create_task(probe.run()))
    try:
        async with asyncio.timeout(30):
            await asyncio.gather(*(f.ready.wait() for f in followers))
        yield followers, probe
    finally:
        for follower in followers:
            follower.closing = True
        probe.stopping = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def settled_feed(graph: Any, followers: list[Follower], timeout: float) -> list[Seen]:
    """The change feed since the sockets connected, once every socket has all of it and
    a moment more has passed for anything late or sent twice to arrive."""
    since = min(f.first for f in followers if f.first is not None)
    feed = await feed_truth(graph, since)
    await until(lambda: all(f.compare(feed)["missing"] == 0 for f in followers), timeout)
    await asyncio.sleep(1.0)
    return await feed_truth(graph, since)


async def until(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]
