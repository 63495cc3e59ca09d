"""Starting the local SurrealDB server (surreal/server.mjs) from Python.

Used by `manage.py surreal` and by the test suite. In production the official
`surreal start` server takes its place and none of this runs.

The server admits only connections that sign in as root with its credentials. For the
local server they are generated at first use and kept in `var/surreal-credentials.json`
(mode 600): the app reads the same file unless SURREAL_USER / SURREAL_PASS are set.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER_SCRIPT = ROOT / "surreal" / "server.mjs"
ENGINE_PACKAGE = ROOT / "node_modules" / "@surrealdb" / "node"
MIN_NODE_MAJOR = 20
CREDENTIALS_FILE = "surreal-credentials.json"


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


@dataclass(frozen=True)
class Credentials:
    """Root credentials of a server. Handed to it in its environment, never argv (which
    every user of the machine can read)."""

    user: str
    password: str = field(repr=False)

    @classmethod
    def generate(cls) -> Credentials:
        return cls("root", secrets.token_urlsafe(32))

    def env(self) -> dict[str, str]:
        return {"SURREAL_USER": self.user, "SURREAL_PASS": self.password}


def local_credentials(var_dir: Path) -> Credentials:
    """The local server's credentials from `var_dir`/surreal-credentials.json, generated
    there (mode 600) on first use. Processes starting at once agree on one file."""
    path = var_dir / CREDENTIALS_FILE
    if not path.exists():
        var_dir.mkdir(parents=True, exist_ok=True)
        fresh = Credentials.generate()
        draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            json.dump({"user": fresh.user, "pass": fresh.password}, out)
        try:
            # A link never replaces an existing file: the first process to get here wins.
            with contextlib.suppress(FileExistsError):
                os.link(draft, path)
        finally:
            draft.unlink()
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        return Credentials(str(stored["user"]), str(stored["pass"]))
    except (ValueError, KeyError, TypeError) as error:
        raise ServerSetupError(
            f"{path} is not valid ({error}); remove it (the local server and the app"
            " must then be restarted) to generate new credentials"
        ) from error


@dataclass
class RunningServer:
    process: subprocess.Popen[str]
    host: str
    port: int
    credentials: Credentials

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
    credentials: Credentials | None = None,
) -> RunningServer:
    """Start the server as a child process and wait until it listens.

    It admits `credentials` (new random ones when None: see `RunningServer.credentials`).
    The engine writes debug noise to stderr (SurrealDB 3.0.2 left a `dbg!` in its
    timestamp code); pass `log` to send stderr to a file instead of the terminal.
    """
    credentials = credentials or Credentials.generate()
    stderr = log.open("ab") if log is not None else None
    process = subprocess.Popen(
        command(bind, storage),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env={**os.environ, **credentials.env()},
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
            return RunningServer(process, host, int(port), credentials)
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
