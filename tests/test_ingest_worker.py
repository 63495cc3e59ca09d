"""Ingestion in real Celery worker processes on the real Redis, with the scripted model:
a worker killed in the middle of a job, the job delivered again to a new worker, and
nothing lost or written twice."""

from __future__ import annotations

import json
import os
import secrets
import signal
import time
from pathlib import Path

import pytest
from django.conf import settings

from kgapp.celery import app as celery_app
from kgapp.graph import jobs
from kgapp.graph.ingest.documents import parse_document
from kgapp.graph.ingest.service import document_submit
from kgapp.graph.records import parse_record_id, to_json
from kgapp.tasks import ingest
from tenants.graph import tenant_graph
from tests.graph.recorded import episode_of
from tests.test_celery_worker import REDIS_TEST_URL, start_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PEOPLE = ["Ada Lovelace", "Bjarne Stroustrup", "Chidi Anagonye", "Dolores Umbridge",
          "Ezra Pound", "Frida Kahlo"]
COMPANIES = ["Analytical Engines", "Bell Labs", "Crossroads Academy", "Daily Prophet",
             "Egoist Press", "Casa Azul"]


def conversation() -> bytes:
    # Messages seven hours apart: each becomes an episode of its own.
    return json.dumps([
        {"speaker": person, "text": f"I work at {company}.", "timestamp": 1_700_000_000 + i * 7 * 3600}
        for i, (person, company) in enumerate(zip(PEOPLE, COMPANIES, strict=True))
    ]).encode()


def slow_extraction(body):
    if body["response_format"]["json_schema"]["name"] == "resolve_graph":
        return {"entities": [], "facts": []}
    speaker, _, text = episode_of(body).partition(": ")
    company = text.removeprefix("I work at ").removesuffix(".")
    time.sleep(0.6)  # slow enough to kill the worker between episodes
    return {
        "entities": [{"name": speaker, "entity_type": "Person", "summary": ""},
                     {"name": company, "entity_type": "Organization", "summary": ""}],
        "facts": [{"source": speaker, "relation": "WORKS_AT", "target": company,
                   "fact": f"{speaker} works at {company}.", "edge_type": "semantic",
                   "confidence": 1.0, "valid_at": None, "invalid_at": None}],
    }


def test_a_killed_worker_loses_and_duplicates_nothing(make_tenant, scripted_llm, tmp_path: Path) -> None:
    scripted_llm.on_chat(slow_extraction)
    tenant = make_tenant()
    graph = tenant_graph(tenant)
    parsed = parse_document("chat.json", conversation(), max_bytes=10**6)
    _, job = graph.run(document_submit, parsed, file_name="chat.json", data=conversation(), uploaded_by="t")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kgapp.settings.test",
        "DATABASE_URL": f"sqlite:///{settings.DATABASES['default']['NAME']}",
        "SURREAL_URL": settings.SURREAL_URL,
        "KG_VAR_DIR": str(tmp_path),
        "REDIS_URL": REDIS_TEST_URL,
        "KG_BROKER_VISIBILITY_TIMEOUT": "2",
        "OPENAI_BASE_URL": scripted_llm.base_url,
        "OPENAI_API_KEY": "test",
        "KG_EMBEDDER": "openai",
    }
    queue = f"test-kill-{secrets.token_hex(4)}"
    first = start_worker(env, queue, tmp_path / "first.log")
    record = parse_record_id(job["id"], "job")
    try:
        with celery_app.connection_for_write(REDIS_TEST_URL) as connection:
            ingest.apply_async((tenant.slug, job["id"]), connection=connection, queue=queue)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            progress = graph.run(jobs.job_get, record).get("progress", 0)
            if progress >= 2:
                break
            time.sleep(0.1)
        assert 2 <= progress < len(PEOPLE), (tmp_path / "first.log").read_text()[-2000:]
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        second = start_worker(env, queue, tmp_path / "second.log")
        try:
            deadline = time.monotonic() + 90
            row = {}
            while time.monotonic() < deadline:
                row = to_json(graph.run(jobs.job_get, record))
                if row["status"] in ("completed", "failed"):
                    break
                time.sleep(0.2)
        finally:
            second.terminate()
            second.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
    assert row["status"] == "completed", (tmp_path / "second.log").read_text()[-3000:]
    assert row["attempts"] == 2
    episodes = graph.query("SELECT count() AS n FROM episode GROUP ALL")[0]
    assert episodes == [{"n": len(PEOPLE)}]
    names = graph.query("SELECT VALUE name FROM entity ORDER BY name")[0]
    assert sorted(names) == sorted(PEOPLE + COMPANIES)
    facts = graph.query("SELECT VALUE [in.name, out.name] FROM relates_to")[0]
    assert sorted(map(tuple, facts)) == sorted(zip(PEOPLE, COMPANIES, strict=True))
    # Episodes written before the kill were not extracted again.
    assert len(scripted_llm.chat_requests("extract_graph")) <= len(PEOPLE) + 1
