"""Faults, long run (`make faults`): the whole Celery worker (pool and beat) is SIGKILLed
at 20 points of a 100-episode ingest on the default (filesystem) broker; after each kill
a new worker starts, the job heartbeat check queues the job again, and the ingest goes on
from where it stopped. Afterwards the graph must equal an uninterrupted run's, record for
record, with no episode lost or written twice.

A pytest module run with the suite's fixtures (bench/conftest.py: real SurrealDB server,
the scripted model): `.venv/bin/python -m pytest bench/faults.py -s -q`.

The suite runs the one-kill version (tests/test_ingest_worker.py). Prints its figures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.graph import graph_of
from harness.recorded import extraction
from harness.workers import (
    default_broker_workers,
    ingest_in_process,
    start_whole_worker,
    wait_for,
)
from kgapp.celery import app as celery_app
from kgapp.graph.documents.parse import parse_document
from kgapp.graph.ingest.service import document_submit
from kgapp.graph.records import record_key, to_json
from kgapp.tasks import ingest
from tenants.wiring import tenant_graph

pytestmark = pytest.mark.django_db(transaction=True)

EPISODES = 100
KILLS = int(os.environ.get("KG_FAULT_KILLS", "20"))
EXTRACTION_SECONDS = 0.25  # the scripted model's think time per episode

PEOPLE = [f"Person {chr(65 + i // 26)}{chr(65 + i % 26)} Quill" for i in range(EPISODES)]
PLACES = [f"Harbour {chr(65 + i // 26)}{chr(65 + i % 26)} Works" for i in range(EPISODES)]


def conversation() -> bytes:
    # Messages seven hours apart: each becomes an episode of its own.
    return json.dumps(
        [
            {
                "speaker": person,
                "text": f"I work at {place}.",
                "timestamp": 1_700_000_000 + i * 7 * 3600,
            }
            for i, (person, place) in enumerate(zip(PEOPLE, PLACES, strict=True))
        ]
    ).encode()


def stop(worker: subprocess.Popen[bytes] | None, sig: int) -> None:
    if worker is None or worker.poll() is not None:
        return
    os.killpg(worker.pid, sig)
    try:
        worker.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)


def test_twenty_whole_worker_kills_lose_and_duplicate_nothing(
    make_tenant, scripted_llm, tmp_path: Path
) -> None:
    scripted_llm.on_chat(lambda body: extraction(body, EXTRACTION_SECONDS))
    tenant, uninterrupted = make_tenant(), make_tenant()
    graph = tenant_graph(tenant)
    parsed = parse_document("chat.json", conversation(), max_bytes=10**7)
    _, job = graph.run(
        document_submit, parsed, file_name="chat.json", data=conversation(), uploaded_by="bench"
    )
    record = job["id"]
    # Beat every 5 s: the filesystem broker delivers about one message a second, and a
    # faster beat would queue the requeued job behind its own checks. A new worker also
    # checks as it starts.
    url, options, env = default_broker_workers(tmp_path, scripted_llm.base_url, stale_check=5)
    with celery_app.connection_for_write(url, transport_options=options) as connection:
        ingest.apply_async((tenant.slug, record_key(job["id"])), connection=connection)

    # Kill points: spread over the ingest, each at least one episode after the last.
    points = [round(EPISODES * (k + 1) / (KILLS + 1)) for k in range(KILLS)]
    killed_at: list[int] = []
    started = time.monotonic()
    worker = None
    try:
        for number, point in enumerate(points):
            worker = start_whole_worker(env, tmp_path / f"worker-{number}.log")
            row = wait_for(
                graph,
                record,
                lambda r, p=point: (
                    r.get("progress", 0) >= p or r["status"] in ("completed", "failed")
                ),
                120,
            )
            if row["status"] != "running":
                break
            stop(worker, signal.SIGKILL)
            killed_at.append(row["progress"])
            time.sleep(0.5)
        worker = start_whole_worker(env, tmp_path / "worker-last.log")
        row = wait_for(graph, record, lambda r: r["status"] in ("completed", "failed"), 300)
    finally:
        stop(worker, signal.SIGTERM)
    elapsed = time.monotonic() - started
    extractions = len(scripted_llm.chat_requests("extract_graph"))

    scripted_llm.on_chat(extraction)
    baseline = ingest_in_process(uninterrupted, parsed, conversation(), scripted_llm.base_url)
    ours, theirs = graph_of(graph), graph_of(tenant_graph(uninterrupted))
    episodes = ours["episodes"]
    print(
        f"\nfaults: {len(killed_at)} whole-worker SIGKILLs at episodes {killed_at} of"
        f" {EPISODES}; job {row['status']} after {row['attempts']} attempts in"
        f" {elapsed:.0f} s; episodes {len(episodes)} (distinct {len(set(map(str, episodes)))}),"
        f" facts {len(ours['facts'])}, entities {len(ours['entities'])};"
        f" extraction calls {extractions} for {EPISODES} episodes;"
        f" graph equal to the uninterrupted run's: {ours == theirs}"
    )
    assert len(killed_at) == KILLS, killed_at
    assert row["status"] == "completed" and row["attempts"] == KILLS + 1, row
    assert baseline["status"] == "completed"
    assert len(episodes) == len(set(map(str, episodes))) == EPISODES  # 0 lost, 0 twice
    assert ours == theirs
    assert to_json(row)["progress"] == EPISODES
