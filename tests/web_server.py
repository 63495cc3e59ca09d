"""The product's web server (kgapp.web.serve, as `make run` starts it) in a process of its
own, on the test database and the test SurrealDB server, for tests that talk to it over
real sockets (tests/browser, tests/web/test_slow_clients.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

SERVER = ["-m", "kgapp.web.serve"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_env(var_dir: Path, **overrides: str) -> dict[str, str]:
    """The test process's environment for the server: ingestion tasks run in the web
    process (eager), live changes come from SurrealDB through its hub."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kgapp.settings.test",
        "DATABASE_URL": f"sqlite:///{settings.DATABASES['default']['NAME']}",
        "SURREAL_URL": settings.SURREAL_URL,
        "KG_VAR_DIR": str(var_dir),
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        **overrides,
    }
    env.pop("REDIS_URL", None)
    return env


@contextmanager
def serving(env: dict[str, str], log: Path) -> Iterator[str]:
    """The server on a free port until the block ends; yields its URL once /api/v1/health
    answers. Its output goes to `log`, whose tail is raised if it does not start."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, *SERVER, "-b", "127.0.0.1", "-p", str(port), "kgapp.asgi:application"],
        env=env,
        cwd=settings.BASE_DIR,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/v1/health", timeout=2).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError(
                    f"the web server did not start:\n{log.read_text()[-3000:]}"
                ) from None
            time.sleep(0.3)
    try:
        yield url
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
