"""Restarts, long run (`make restarts`): SurrealDB (its own server on rocksdb://, same
port) and Redis (its own; the broker and the channel layer) are each restarted 5 times
during a 100-episode ingest run by a real Celery worker. The job must finish, and its
graph must equal an uninterrupted run's (a second tenant on the same server), record for
record. The worker is started again when it exits, as `make run` does: on a lost Redis
connection Celery 5.7 / kombu 5.7 now and then stop the worker ("Unrecoverable error:
AttributeError: 'NoneType' object has no attribute 'hostname'", restoring its
unacknowledged messages); the job heartbeat check then queues the job again.

A pytest module run with the suite's fixtures (bench/conftest.py), its own SurrealDB
server in place of the suite's in-memory one; the servers are bench/live_feed.py's:
`.venv/bin/python -m pytest bench/restarts.py -s -q`. Prints its figures.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.faults import EPISODES, conversation, extraction, stop
from bench.live_feed import Redis, Surreal
from harness.workers import (
    default_broker_workers,
    graph_of,
    ingest_in_process,
    start_whole_worker,
    wait_for,
)
from kgapp.celery import app as celery_app
from kgapp.graph.documents.parse import parse_document
from kgapp.graph.errors import GraphUnavailable
from kgapp.graph.ingest.service import document_submit
from kgapp.graph.records import record_key
from kgapp.tasks import ingest
from tenants.wiring import tenant_graph

pytestmark = pytest.mark.django_db(transaction=True)

RESTARTS = int(os.environ.get("KG_RESTARTS", "10"))  # SurrealDB and Redis in turn
EXTRACTION_SECONDS = 0.25  # the scripted model's think time per episode


@pytest.fixture(scope="session")
def surreal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Surreal]:
    """In place of the suite's in-memory server: one on disk that can be restarted."""
    server = Surreal(tmp_path_factory.mktemp("surreal"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[Redis]:
    server = Redis(tmp_path)
    server.start()
    yield server
    server.stop()


def through_outages(call: Callable[[], Any], timeout: float = 120) -> Any:
    """`call()`, again while SurrealDB is away (this process reads the job meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except GraphUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


class Supervised:
    """A whole worker started again 1 s after it exits, as `make run` (bin/supervise.sh)
    does; its logs are worker-0.log, worker-1.log, ..."""

    def __init__(self, env: dict[str, str], folder: Path):
        self.env, self.folder, self.starts = env, folder, 0
        self.process = self.start()

    def start(self) -> subprocess.Popen[bytes]:
        self.process = start_whole_worker(self.env, self.folder / f"worker-{self.starts}.log")
        self.starts += 1
        return self.process

    def keep_alive(self) -> None:
        if self.process.poll() is not None:
            time.sleep(1)
            self.start()

    def logs(self) -> str:
        return "".join((self.folder / f"worker-{n}.log").read_text() for n in range(self.starts))


def test_surrealdb_and_redis_restarted_during_an_ingest(
    make_tenant, scripted_llm, surreal: Surreal, redis: Redis, tmp_path: Path
) -> None:
    scripted_llm.on_chat(lambda body: extraction(body, EXTRACTION_SECONDS))
    tenant, uninterrupted = make_tenant(), make_tenant()
    graph = tenant_graph(tenant)
    parsed = parse_document("chat.json", conversation(), max_bytes=10**7)
    _, job = graph.run(
        document_submit, parsed, file_name="chat.json", data=conversation(), uploaded_by="bench"
    )
    record = job["id"]
    _, _, env = default_broker_workers(tmp_path, scripted_llm.base_url)
    env["REDIS_URL"] = f"redis://127.0.0.1:{redis.port}/0"  # broker and channel layer
    env["KG_BROKER_VISIBILITY_TIMEOUT"] = "30"

    points = [round(EPISODES * (k + 1) / (RESTARTS + 1)) for k in range(RESTARTS)]
    restarted: Counter[str] = Counter()
    restarted_at: list[int] = []
    started = time.monotonic()
    worker = Supervised(env, tmp_path)

    def until(done: Callable[[dict], bool]) -> Callable[[dict], bool]:
        return lambda row: worker.keep_alive() or done(row)

    try:
        with celery_app.connection_for_write(env["REDIS_URL"]) as connection:
            ingest.apply_async((tenant.slug, record_key(job["id"])), connection=connection)
        for number, point in enumerate(points):
            row = through_outages(
                lambda p=point: wait_for(
                    graph,
                    record,
                    until(
                        lambda r: (
                            r.get("progress", 0) >= p or r["status"] in ("completed", "failed")
                        )
                    ),
                    120,
                )
            )
            if row["status"] != "running":
                break
            server = surreal if number % 2 == 0 else redis
            server.stop()
            time.sleep(0.5)
            server.start()
            restarted["surrealdb" if server is surreal else "redis"] += 1
            restarted_at.append(row["progress"])
        row = through_outages(
            lambda: wait_for(
                graph, record, until(lambda r: r["status"] in ("completed", "failed")), 300
            )
        )
    finally:
        stop(worker.process, signal.SIGTERM)
    elapsed = time.monotonic() - started
    extractions = len(scripted_llm.chat_requests("extract_graph"))
    logs = worker.logs()

    scripted_llm.on_chat(extraction)
    baseline = ingest_in_process(uninterrupted, parsed, conversation(), scripted_llm.base_url)
    ours, theirs = graph_of(graph), graph_of(tenant_graph(uninterrupted))
    episodes = ours["episodes"]
    print(
        f"\nrestarts: {dict(restarted)} at episodes {restarted_at} of {EPISODES};"
        f" worker exited {worker.starts - 1} times (restarted as `make run` does;"
        f" {logs.count('Unrecoverable error')} 'Unrecoverable error' in its logs);"
        f" job {row['status']} after {row['attempts']} attempts in {elapsed:.0f} s;"
        f" episodes {len(episodes)} (distinct {len(set(map(str, episodes)))}),"
        f" facts {len(ours['facts'])}, entities {len(ours['entities'])};"
        f" extraction calls {extractions} for {EPISODES} episodes;"
        f" graph equal to the uninterrupted run's: {ours == theirs}"
    )
    assert sum(restarted.values()) == RESTARTS, logs[-3000:]
    assert row["status"] == "completed", logs[-3000:]
    assert baseline["status"] == "completed"
    assert len(episodes) == len(set(map(str, episodes))) == EPISODES  # 0 lost, 0 twice
    assert ours == theirs
