"""Communities follow ingestion, in a real Celery worker (prefork, two processes, on the
default file broker, no Redis) with the scripted model: a burst of ingest jobs, an
episode and a document, detects once, after the last; a later upload waits for a
running detection, then describes only its new community, with one model call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from harness.recorded import episode_of, works_at
from harness.workers import celery_worker, default_broker_workers
from kgapp.celery import app as celery_app
from kgapp.graph import communities, jobs
from kgapp.graph.documents.parse import parse_document
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.service import document_submit, episode_submit
from kgapp.graph.records import record_key, to_json
from kgapp.tasks import ingest
from tenants.wiring import tenant_graph

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

DEBOUNCE = 2.0


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """Extraction reads "<person> works at <company>."; a community is named after its
    members; resolution merges and ends nothing."""
    task = body["response_format"]["json_schema"]["name"]
    if task == "summarize_community":
        group = body["messages"][-1]["content"].removeprefix("<group>").removesuffix("</group>")
        members = sorted(json.loads(group)["members"])
        return {"name": " & ".join(members), "summary": f"{len(members)} who work together."}
    if task != "extract_graph":
        return {"entities": [], "facts": []}
    person, _, company = episode_of(body).strip().removesuffix(".").partition(" works at ")
    return works_at(person, company)


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = celery_worker("--concurrency=2")
    return subprocess.Popen(
        command,
        env=env,
        cwd=settings.BASE_DIR,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(worker: subprocess.Popen[bytes]) -> None:
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)


def all_jobs(graph) -> list[dict[str, Any]]:
    return to_json(graph.run(jobs.job_list, status=None, limit=100, offset=0))


def detections(graph) -> list[dict[str, Any]]:
    return [job for job in all_jobs(graph) if job["kind"] == "communities"]


def wait_until(check, timeout: float, log: Path) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out; the worker said:\n{log.read_text()[-3000:]}")


def listed(graph) -> dict[str, dict[str, Any]]:
    """The current communities by name: id, summary and member count."""
    return {
        c["name"]: {k: c[k] for k in ("id", "summary", "member_count")}
        for c in to_json(graph.run(communities.communities_list))
    }


def test_a_burst_of_uploads_detects_once_and_unchanged_communities_cost_no_call(
    make_tenant, scripted_llm, tmp_path: Path
) -> None:
    scripted_llm.on_chat(answer)
    tenant = make_tenant()
    graph = tenant_graph(tenant)
    url, options, env = default_broker_workers(tmp_path, scripted_llm.base_url)
    env["KG_COMMUNITY_DEBOUNCE"] = str(DEBOUNCE)
    log = tmp_path / "worker.log"

    def upload_episode(text: str) -> str:
        episode = EpisodeInput(
            content=text, source="text", reference_time=datetime(2024, 1, 1, tzinfo=UTC)
        )
        return record_key(graph.run(episode_submit, episode, created_by="t")[1]["id"])

    def upload_document(name: str, text: str) -> str:
        data = text.encode()
        parsed = parse_document(name, data, max_bytes=10**6)
        return record_key(
            graph.run(document_submit, parsed, file_name=name, data=data, uploaded_by="t")[1]["id"]
        )

    def ingest_all(job_ids: list[str]) -> None:
        with celery_app.connection_for_write(url, transport_options=options) as connection:
            for job_id in job_ids:
                ingest.apply_async((tenant.slug, job_id), connection=connection)
        # Every one of the jobs, found and completed (an all() over none would be true).
        wait_until(
            lambda: (
                sorted(
                    j["id"]
                    for j in all_jobs(graph)
                    if j["id"] in job_ids and j["status"] == "completed"
                )
                == sorted(job_ids)
            ),
            90,
            log,
        )

    worker = start_worker(env, log)
    try:
        # Two uploads at once: each job asks for detection when it ends; one is granted.
        ingest_all(
            [
                upload_episode("Alice works at Acme Corp."),
                upload_document("beta.txt", "Bob works at Beta Inc."),
            ]
        )
        wait_until(lambda: [j for j in detections(graph) if j["status"] == "completed"], 30, log)
        time.sleep(DEBOUNCE + 3)  # long enough for a second request to have been granted
        first = detections(graph)
        assert [(j["created_by"], j["status"]) for j in first] == [("ingestion", "completed")]
        assert first[0]["counts"] == {
            "communities": 2,
            "unchanged": 0,
            "described": 2,
            "llm_calls": 2,
        }
        before = listed(graph)
        assert set(before) == {"Acme Corp & Alice", "Beta Inc & Bob"}
        assert len(scripted_llm.chat_requests("summarize_community")) == 2

        # A later upload about others, while a detection runs (one that may have read
        # the graph too early): the request waits for it to end.
        running = graph.run(jobs.job_create, kind="communities", created_by="t")["id"]
        graph.run(jobs.job_start, running)
        ingest_all([upload_episode("Carol works at Cyan Labs.")])
        time.sleep(DEBOUNCE + 3)
        assert [j["created_by"] for j in detections(graph)] == ["t", "ingestion"]
        graph.run(jobs.job_finish, running, counts={}, timings={})
        # Then the two communities keep their records, names and summaries, and only
        # the new one costs a model call.
        wait_until(
            lambda: (
                len(
                    [
                        j
                        for j in detections(graph)
                        if j["created_by"] == "ingestion" and j["status"] == "completed"
                    ]
                )
                == 2
            ),
            30,
            log,
        )
        second = detections(graph)[0]  # newest first
        assert second["counts"] == {
            "communities": 3,
            "unchanged": 2,
            "described": 1,
            "llm_calls": 1,
        }
        after = listed(graph)
        assert {name: after[name] for name in before} == before
        assert set(after) - set(before) == {"Carol & Cyan Labs"}
        summaries = scripted_llm.chat_requests("summarize_community")
        assert len(summaries) == 3 and "Cyan Labs" in summaries[-1]["messages"][-1]["content"]
    finally:
        stop(worker)
