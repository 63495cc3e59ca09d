"""Starting the local SurrealDB server (surreal/server.mjs) from Python.

Used by `manage.py surreal` and by the test suite. In production the official
`surreal start` server takes its place and none of this runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER_SCRIPT = ROOT / "surreal" / "server.mjs"
ENGINE_PACKAGE = ROOT / "node_modules" / "@surrealdb" / "node"
MIN_NODE_MAJOR = 20


class ServerSetupError(RuntimeError):
    """Node or the npm packages the server needs are missing."""


def check_prerequisites() -> str:
    """The path of `node`, or ServerSetupError saying what to install."""
    node = shutil.which("node")
    if node is None:
        raise ServerSetupError(
            f"Node.js {MIN_NODE_MAJOR}+ is required for the local SurrealDB server and was"
            " not found on PATH; install it (e.g. `apt-get install nodejs npm`)"
        )
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    major = int(version.lstrip("v").split(".")[0] or 0)
    if major < MIN_NODE_MAJOR:
        raise ServerSetupError(f"Node.js {MIN_NODE_MAJOR}+ is required, found {version}")
    if not ENGINE_PACKAGE.is_dir():
        raise ServerSetupError(
            "the npm package @surrealdb/node is not installed; run `npm ci` in " + str(ROOT)
        )
    return node


def command(bind: str, storage: str) -> list[str]:
    return [check_prerequisites(), str(SERVER_SCRIPT), "--bind", bind, "--storage", storage]


@dataclass
class RunningServer:
    process: subprocess.Popen[str]
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def stop(self, timeout: float = 10) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(
    bind: str = "127.0.0.1:0",
    storage: str = "mem://",
    timeout: float = 30,
    log: Path | None = None,
) -> RunningServer:
    """Start the server as a child process and wait until it listens.

    The engine writes debug noise to stderr (SurrealDB 3.0.2 left a `dbg!` in its
    timestamp code); pass `log` to send stderr to a file instead of the terminal.
    """
    stderr = log.open("ab") if log is not None else None
    process = subprocess.Popen(
        command(bind, storage),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env={**os.environ},
    )
    if stderr is not None:
        stderr.close()
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if line.startswith("LISTENING "):
            host, _, port = line.split()[1].rpartition(":")
            return RunningServer(process, host, int(port))
    process.kill()
    raise ServerSetupError(f"the local SurrealDB server did not start (exit {process.poll()})")


def health(url: str, timeout: float = 2) -> dict[str, object] | None:
    """The /health answer of the server behind a ws:// URL, or None if it is down."""
    http_url = url.replace("ws://", "http://", 1).replace("wss://", "https://", 1)
    try:
        with urllib.request.urlopen(http_url.rstrip("/") + "/health", timeout=timeout) as reply:
            return json.loads(reply.read())
    except (OSError, urllib.error.URLError, ValueError):
        return None


def wait_healthy(url: str, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if health(url) is not None:
            return True
        time.sleep(0.2)
    return False
