"""Worker processes for tests and benchmarks: Celery workers started as `make run` starts
them, a broker without Redis, and reads of a tenant's graph and jobs while they run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.test import override_settings

from kgapp.graph import jobs
from kgapp.graph.ingest.service import document_submit
from kgapp.graph.records import record_key, to_json
from kgapp.settings.base import celery_broker
from kgapp.tasks import ingest
from tenants.wiring import tenant_graph

REDIS_TEST_URL = "redis://127.0.0.1:6379/15"


def celery_worker(*options: str) -> list[str]:
    """The command of a Celery worker of this app, quiet between workers, with `options`."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "kgapp.celery",
        "worker",
        "--loglevel=INFO",
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
        *options,
    ]


def start_worker(env: dict[str, str], queue: str, log: Path) -> subprocess.Popen[bytes]:
    command = celery_worker("--pool=solo", "-Q", queue, "-n", f"{queue}@%h")
    return subprocess.Popen(
        command, env=env, cwd=settings.BASE_DIR, stdout=log.open("wb"), stderr=subprocess.STDOUT
    )


def start_whole_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A worker as `make run` starts one (prefork, with beat), in a process group of its
    own so that the whole of it can be killed at once."""
    command = celery_worker(
        "--beat", "--schedule", str(log.with_suffix(".beat")), "--concurrency=1"
    )
    return subprocess.Popen(
        command,
        env=env,
        cwd=settings.BASE_DIR,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def queued_tasks(folder: Path) -> list[str]:
    return [json.loads(message.read_bytes())["headers"]["task"] for message in folder.glob("*.msg")]


def wait_for(graph, record, done, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    row: dict = {}
    while time.monotonic() < deadline:
        row = to_json(graph.run(jobs.job_get, record))
        if done(row):
            break
        time.sleep(0.1)
    return row


def ingest_in_process(tenant, parsed, data: bytes, llm_url: str) -> dict:
    """The same upload ingested in another tenant in this process, uninterrupted: the
    baseline a disturbed run's graph must equal."""
    _, job = tenant_graph(tenant).run(
        document_submit, parsed, file_name="chat.json", data=data, uploaded_by="t"
    )
    with override_settings(OPENAI_BASE_URL=llm_url, OPENAI_API_KEY="test", EMBEDDER="openai"):
        return ingest.apply(args=(tenant.slug, record_key(job["id"]))).get()


def default_broker_workers(
    tmp_path: Path, llm_url: str, stale_check: float = 1
) -> tuple[str, dict, dict[str, str]]:
    """The default broker (files under the worker's var/), no Redis: a message a worker
    has taken is gone from the queue, acks_late or not. Its URL and options, and the
    environment of workers using it with the scripted model and quick heartbeats."""
    url, options = celery_broker("", tmp_path / "celery")
    for key in ("data_folder_in", "processed_folder", "control_folder"):
        Path(str(options[key])).mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kgapp.settings.test",
        "DATABASE_URL": f"sqlite:///{settings.DATABASES['default']['NAME']}",
        "SURREAL_URL": settings.SURREAL_URL,
        "KG_VAR_DIR": str(tmp_path),
        "OPENAI_BASE_URL": llm_url,
        "OPENAI_API_KEY": "test",
        "KG_EMBEDDER": "openai",
        "KG_JOB_HEARTBEAT_INTERVAL": "0.3",
        "KG_JOB_STALE_AFTER": "1.5",
        "KG_JOB_STALE_CHECK_INTERVAL": str(stale_check),
    }
    env.pop("REDIS_URL", None)
    return url, options, env
