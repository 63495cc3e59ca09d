"""The local SurrealDB server (surreal/server.mjs) as a process: storage, protocol,
sessions, live notifications, credentials, its refusals."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from surrealdb.connections.async_ws import AsyncWsSurrealConnection
from surrealdb.errors import NotAllowedError

from kgapp import surreal_server
from kgapp.graph.store import Connection
from tenants.wiring import tenant_graph

NOT_SIGNED_IN = "Not signed in"


async def signed_in(
    server: surreal_server.RunningServer, connection: AsyncWsSurrealConnection | None = None
) -> AsyncWsSurrealConnection:
    connection = connection or AsyncWsSurrealConnection(server.url)
    credentials = server.credentials
    await connection.signin({"username": credentials.user, "password": credentials.password})
    return connection


def test_rocksdb_data_survives_a_restart(tmp_path: Path) -> None:
    storage = f"rocksdb://{tmp_path / 'db'}"

    async def write(server: surreal_server.RunningServer) -> None:
        connection = await signed_in(server)
        await connection.use("t_durable", "kg")
        await connection.query("CREATE note:keep SET text = $t", {"t": "still here"})
        await connection.close()

    async def read(server: surreal_server.RunningServer) -> list:
        connection = await signed_in(server)
        await connection.use("t_durable", "kg")
        rows = await connection.query("SELECT VALUE text FROM note")
        await connection.close()
        return rows

    first = surreal_server.start(storage=storage)
    try:
        asyncio.run(write(first))
    finally:
        first.stop()
    assert first.process.returncode == 0
    second = surreal_server.start(storage=storage)
    try:
        assert asyncio.run(read(second)) == ["still here"]
    finally:
        second.stop()


async def test_live_select_from_the_python_sdk(surreal) -> None:
    connection = await signed_in(surreal, Connection(surreal.url))
    await connection.use("t_live_probe", "kg")
    await connection.query("DEFINE TABLE IF NOT EXISTS thing SCHEMALESS")
    live_id = await connection.live("thing")
    queue = await connection.subscribe_notifications(str(live_id))
    writer = await signed_in(surreal)
    await writer.use("t_live_probe", "kg")
    await writer.query("CREATE thing:a SET n = 1")
    await writer.query("UPDATE thing:a SET n = 2")
    await writer.query("DELETE thing:a")
    notes = [await asyncio.wait_for(queue.get(), 5) for _ in range(3)]
    # The engine may deliver one connection's notifications out of commit order when
    # busy (seen: CREATE, DELETE, UPDATE); the change feed is what orders (live.py).
    assert sorted(n["action"] for n in notes) == ["CREATE", "DELETE", "UPDATE"]
    assert next(n for n in notes if n["action"] == "UPDATE")["result"]["n"] == 2
    await connection.kill(live_id)
    await writer.query("CREATE thing:b SET n = 3")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(queue.get(), 0.5)
    await writer.query("REMOVE NAMESPACE t_live_probe")
    await writer.close()
    await connection.close()


async def test_two_clients_in_two_namespaces_concurrently(surreal) -> None:
    async def client(namespace: str) -> list:
        connection = await signed_in(surreal)
        await connection.use(namespace, "kg")
        for i in range(50):
            await connection.query("CREATE item SET n = $n, ns = $ns", {"n": i, "ns": namespace})
            await asyncio.sleep(0)
        rows = await connection.query("SELECT VALUE ns FROM item")
        await connection.query(f"REMOVE NAMESPACE {namespace}")
        await connection.close()
        return rows

    a, b = await asyncio.gather(client("t_conc_a"), client("t_conc_b"))
    assert a == ["t_conc_a"] * 50 and b == ["t_conc_b"] * 50


async def test_sessions_cannot_be_borrowed_across_connections(surreal) -> None:
    owner = await signed_in(surreal)
    session = await owner.attach()
    await owner.use("t_sess", "kg", session_id=session)
    thief = await signed_in(surreal)
    response = await thief.query_raw("RETURN 1", session_id=session)
    assert "Session not found" in response["error"]["message"]
    await owner.detach(session)
    await owner.close()
    await thief.close()


def test_health_endpoint(surreal) -> None:
    answer = surreal_server.health(surreal.url)
    assert answer is not None and answer["status"] == "ok"
    assert str(answer["version"]).startswith("surrealdb-3")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--bind", "0.0.0.0:8000"], "loopback only"),
        (["--storage", "tikv://x"], "--storage must start with"),
        (["--nonsense"], "unknown argument"),
    ],
)
def test_refuses_bad_arguments(args: list[str], message: str) -> None:
    node = surreal_server.check_prerequisites()
    result = subprocess.run(
        [node, str(surreal_server.SERVER_SCRIPT), *args], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert message in result.stderr


def test_missing_node_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(surreal_server.ServerSetupError, match="Node.js 20\\+ is required"):
        surreal_server.check_prerequisites()


def test_management_command_reports_missing_packages(tmp_path: Path) -> None:
    # A copy of the project without node_modules: the command must say what to run.
    script = (
        "import kgapp.surreal_server as s, pathlib;"
        f"s.ENGINE_PACKAGE = pathlib.Path({str(tmp_path)!r}) / 'missing';"
        "from django.core.management import call_command;"
        "import django; django.setup(); call_command('surreal', '--storage', 'mem://')"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "DJANGO_SETTINGS_MODULE": "kgapp.settings.test"},
    )
    assert result.returncode != 0
    assert "npm ci" in result.stderr


# --- credentials ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_only_a_signed_in_connection_reads_a_tenant(surreal, make_tenant) -> None:
    from asgiref.sync import sync_to_async

    bravo = await sync_to_async(make_tenant)()
    await tenant_graph(bravo).aquery(
        "CREATE entity CONTENT {name: 'Bravo secret', canonical_name: 'bravo secret'}"
    )
    read = "SELECT VALUE name FROM entity"

    # No sign-in: refused before the engine sees the request.
    stranger = AsyncWsSurrealConnection(surreal.url)
    with pytest.raises(NotAllowedError, match=NOT_SIGNED_IN):
        await stranger.use(bravo.namespace, "kg")
    answer = await stranger.query_raw(f"USE NS {bravo.namespace} DB kg; {read}")
    assert NOT_SIGNED_IN in answer["error"]["message"] and "result" not in answer
    # Wrong password, wrong user, a namespace-level sign-in: refused, and still not in.
    for attempt in (
        {"username": surreal.credentials.user, "password": "guess"},
        {"username": "admin", "password": surreal.credentials.password},
        {"namespace": bravo.namespace, "username": "root", "password": "x"},
    ):
        with pytest.raises(NotAllowedError, match="problem with authentication"):
            await stranger.signin(attempt)
        answer = await stranger.query_raw(f"USE NS {bravo.namespace} DB kg; {read}")
        assert NOT_SIGNED_IN in answer["error"]["message"]
    # An invented token is refused too.
    forged = AsyncWsSurrealConnection(surreal.url)
    with pytest.raises(NotAllowedError):
        await forged.authenticate("aaaa.bbbb.cccc")

    # The credentials work; the token of a live sign-in opens a second connection, and
    # signing out closes the door again.
    member = await signed_in(surreal, stranger)
    await member.use(bravo.namespace, "kg")
    assert await member.query(read) == ["Bravo secret"]
    assert member.token is not None
    await forged.authenticate(member.token)
    await forged.use(bravo.namespace, "kg")
    assert await forged.query(read) == ["Bravo secret"]
    await member.invalidate()
    answer = await member.query_raw(read)
    assert NOT_SIGNED_IN in answer["error"]["message"]
    await member.close()
    await forged.close()


def test_refuses_to_start_without_credentials() -> None:
    node = surreal_server.check_prerequisites()
    env = {k: v for k, v in os.environ.items() if k not in ("SURREAL_USER", "SURREAL_PASS")}
    result = subprocess.run(
        [node, str(surreal_server.SERVER_SCRIPT), "--bind", "127.0.0.1:0", "--storage", "mem://"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert result.returncode == 2
    assert "SURREAL_USER and SURREAL_PASS must be set" in result.stderr


def test_local_credentials_are_made_once_and_private(tmp_path: Path) -> None:
    first = surreal_server.local_credentials(tmp_path)
    path = tmp_path / surreal_server.CREDENTIALS_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(first.password) >= 40 and first.password not in repr(first)
    assert surreal_server.local_credentials(tmp_path) == first
    path.chmod(0o644)
    assert surreal_server.local_credentials(tmp_path) == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert surreal_server.local_credentials(tmp_path / "other") != first
    path.write_text("{")
    with pytest.raises(surreal_server.ServerSetupError, match="remove it"):
        surreal_server.local_credentials(tmp_path)


def _settings_of(env: dict[str, str]) -> dict[str, str]:
    script = (
        "import json, django; django.setup(); from django.conf import settings;"
        "print(json.dumps([settings.SURREAL_USER, settings.SURREAL_PASS]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=settings.BASE_DIR,
        check=True,
    )
    return json.loads(result.stdout.splitlines()[-1])


def test_settings_read_the_file_unless_the_environment_names_credentials(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SURREAL_USER", "SURREAL_PASS")}
    env |= {"DJANGO_SETTINGS_MODULE": "kgapp.settings.dev", "KG_VAR_DIR": str(tmp_path)}
    user, password = _settings_of(env)
    stored = json.loads((tmp_path / surreal_server.CREDENTIALS_FILE).read_text())
    assert [user, password] == [stored["user"], stored["pass"]]
    other = tmp_path / "other"
    env |= {"KG_VAR_DIR": str(other), "SURREAL_USER": "ops", "SURREAL_PASS": "from-env"}
    assert _settings_of(env) == ["ops", "from-env"]
    assert not other.exists() or not (other / surreal_server.CREDENTIALS_FILE).exists()


def test_management_command_runs_the_server_with_the_apps_credentials(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SURREAL_USER", "SURREAL_PASS")}
    env |= {"DJANGO_SETTINGS_MODULE": "kgapp.settings.dev", "KG_VAR_DIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "surreal", "--bind", "127.0.0.1:0", "--storage", "mem://"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("LISTENING "), line
        host, _, port = line.split()[1].rpartition(":")
        server = surreal_server.RunningServer(
            process, host, int(port), surreal_server.local_credentials(tmp_path)
        )

        async def probe() -> list:
            stranger = AsyncWsSurrealConnection(server.url)
            answer = await stranger.query_raw("RETURN 1")
            await stranger.close()
            connection = await signed_in(server)
            rows = await connection.query("RETURN 1")
            await connection.close()
            return [answer.get("error", {}).get("message", ""), rows]

        refused, rows = asyncio.run(probe())
        assert NOT_SIGNED_IN in refused and rows == 1
        # Not on the command line, which every user of the machine can read.
        cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes()
        assert server.credentials.password.encode() not in cmdline
    finally:
        process.terminate()
        process.wait(10)
