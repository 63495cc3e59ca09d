"""Several processes standing for several machines, against one SurrealDB server and the
real Redis: machine A and machine B each run a web server (kgapp.web.serve), a Celery
worker and a search indexer (`manage.py search_indexer`) with an index directory of its
own; one beat process serves both. Every process is in a process group of its own, so
that a test can SIGKILL one as a machine losing it would, and its output goes to a log
under the cluster's folder, whose tails `Cluster.tails()` gives for assertion messages.

What the machines share, as a deployment's would: SurrealDB (graphs, job records, the
uploaded documents themselves: a text's text, a conversation's messages, a PDF's bytes,
so no upload is read from disk by the worker), Redis (broker, channel layer, cache) and
the Django database (here the test's SQLite file, as PostgreSQL would be). What each
keeps to itself: KG_VAR_DIR and KG_SEARCH_DIR. A tenant import (KG_IMPORT_DIR) and the
retention archives are files under KG_VAR_DIR that web and worker both reach, so a real
cluster puts those on a shared volume; nothing here uses them.

Used by tests/test_cluster.py and the long run bench/cluster_sim.py (`make cluster-sim`).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis
from django.conf import settings

from harness.workers import celery_worker

REDIS_CLUSTER_URL = "redis://127.0.0.1:6379/14"  # the suite's own database, flushed
MACHINES = ("a", "b")
START_TIMEOUT = 120.0  # seconds for every process to be up, on a busy 2-core machine
# Quick job heartbeats, as tests/test_ingest_worker.py's: a job whose worker died is
# queued again 1.5-2.5 s after its last beat.
HEARTBEAT_ENV = {
    "KG_JOB_HEARTBEAT_INTERVAL": "0.3",
    "KG_JOB_STALE_AFTER": "1.5",
    "KG_JOB_STALE_CHECK_INTERVAL": "1",
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Proc:
    """One process of the cluster: how to start it, its log, whether it is up."""

    name: str
    command: list[str]
    env: dict[str, str]
    log: Path
    up: Callable[[Proc], bool]
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    ready: bool = False  # seen up since its last start
    ready_at: float = 0.0  # when it was first seen up (time.time())

    def start(self) -> None:
        self.starts += 1
        self.ready = False
        with self.log.open("ab") as out:
            out.write(f"\n=== start {self.starts} at {time.time():.3f}\n".encode())
            self.process = subprocess.Popen(
                self.command,
                env=self.env,
                cwd=settings.BASE_DIR,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def is_up(self) -> bool:
        if not self.ready and self.alive and self.up(self):
            self.ready, self.ready_at = True, time.time()
        return self.ready and self.alive

    def kill(self) -> float:
        """SIGKILL the whole process group, as a crash would; the moment it was sent."""
        assert self.process is not None
        killed, self.ready = time.time(), False
        _signal_group(self.process, signal.SIGKILL)
        self.process.wait(10)
        return killed

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        _signal_group(self.process, signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            _signal_group(self.process, signal.SIGKILL)
            self.process.wait(10)

    def text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, chars: int = 2500) -> str:
        return f"--- {self.name} ({self.log.name}) ---\n{self.text()[-chars:]}"


def _signal_group(process: subprocess.Popen[bytes], number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, number)


def _log_says(pattern: str) -> Callable[[Proc], bool]:
    """Up once the log of its current start shows `pattern`."""
    compiled = re.compile(pattern)

    def check(proc: Proc) -> bool:
        return bool(compiled.search(proc.text().rpartition("=== start ")[2]))

    return check


def _answers_health(url: str) -> Callable[[Proc], bool]:
    def check(proc: Proc) -> bool:
        try:
            urllib.request.urlopen(f"{url}/api/v1/health", timeout=2).close()
        except OSError:
            return False
        return True

    return check


@dataclass
class Machine:
    name: str
    var_dir: Path
    search_dir: Path
    url: str
    web: Proc
    worker: Proc
    indexer: Proc

    @property
    def procs(self) -> list[Proc]:
        return [self.web, self.worker, self.indexer]


@dataclass
class Cluster:
    """`with Cluster(folder, llm_url) as cluster:` every process started and up; all of
    them stopped (SIGTERM, then SIGKILL) when the block ends, however it ends."""

    root: Path
    llm_url: str
    redis_url: str = REDIS_CLUSTER_URL
    extra_env: dict[str, str] = field(default_factory=dict)
    machines: dict[str, Machine] = field(default_factory=dict)
    beat: Proc | None = None

    def __enter__(self) -> Cluster:
        redis.Redis.from_url(self.redis_url).flushdb()
        base = self._base_env()
        for name in MACHINES:
            self.machines[name] = self._machine(name, base)
        self.beat = Proc(
            "beat",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "kgapp.celery",
                "beat",
                "--loglevel=INFO",
                "--schedule",
                str(self.root / "beat-schedule"),
            ],
            {**base, "KG_VAR_DIR": str(self.root / "beat")},
            self.root / "beat.log",
            _log_says(r"beat: Starting"),
        )
        try:
            for proc in self.procs:
                proc.start()
            self.wait_up(self.procs)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.stop()
        redis.Redis.from_url(self.redis_url).flushdb()

    @property
    def procs(self) -> list[Proc]:
        found = [proc for machine in self.machines.values() for proc in machine.procs]
        return found + ([self.beat] if self.beat else [])

    def wait_up(self, procs: list[Proc], timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        waiting = list(procs)
        while waiting:
            waiting = [proc for proc in waiting if not proc.is_up()]
            dead = [proc for proc in waiting if not proc.alive]
            if dead or (waiting and time.monotonic() > deadline):
                late = ", ".join(proc.name for proc in waiting)
                raise RuntimeError(f"not up: {late}\n" + "\n".join(p.tail() for p in waiting))
            time.sleep(0.2)

    def restart(self, proc: Proc) -> None:
        """Start a killed process again (as `make run`'s supervisor does) and wait for it."""
        proc.start()
        self.wait_up([proc])

    def web_urls(self) -> dict[str, str]:
        """The web servers that are up (started and serving), by machine."""
        return {name: m.url for name, m in self.machines.items() if m.web.ready and m.web.alive}

    def tails(self, chars: int = 2500) -> str:
        return "\n".join(proc.tail(chars) for proc in self.procs)

    def _base_env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": "kgapp.settings.test",
            "DATABASE_URL": f"sqlite:///{settings.DATABASES['default']['NAME']}",
            "SURREAL_URL": settings.SURREAL_URL,
            "REDIS_URL": self.redis_url,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "OPENAI_BASE_URL": self.llm_url,
            "OPENAI_API_KEY": "test",
            "KG_EMBEDDER": "openai",
            # Communities would follow each ingest with model calls of their own; the
            # properties shown here are about ingestion, live changes and search.
            "KG_COMMUNITY_DEBOUNCE": "-1",
            "KG_COMMUNITY_EVERY_EPISODES": "0",
            **HEARTBEAT_ENV,
            **self.extra_env,
        }
        return env

    def _machine(self, name: str, base: dict[str, str]) -> Machine:
        var_dir, search_dir = self.root / name / "var", self.root / name / "search"
        var_dir.mkdir(parents=True, exist_ok=True)
        search_dir.mkdir(parents=True, exist_ok=True)
        env = {**base, "KG_VAR_DIR": str(var_dir), "KG_SEARCH_DIR": str(search_dir)}
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        web = Proc(
            f"web-{name}",
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
            env,
            self.root / f"web-{name}.log",
            _answers_health(url),
        )
        worker = Proc(
            f"worker-{name}",
            celery_worker("--pool=solo", "-n", f"worker-{name}@%h"),
            env,
            self.root / f"worker-{name}.log",
            _log_says(r"worker-\w@\S+ ready\."),
        )
        indexer = Proc(
            f"indexer-{name}",
            [sys.executable, "manage.py", "search_indexer", "--poll", "0.2"],
            env,
            self.root / f"indexer-{name}.log",
            _log_says(r"search indexer: "),
        )
        return Machine(name, var_dir, search_dir, url, web, worker, indexer)


def ingests_done(worker: Proc) -> int:
    """How many ingest tasks the worker's log says it finished (every start counted)."""
    return len(re.findall(r"Task kgapp\.ingest\[[^\]]+\] succeeded", worker.text()))
