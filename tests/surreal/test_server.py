"""The local SurrealDB server (surreal/server.mjs) as a process: storage, protocol,
sessions, live notifications, its refusals."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from surrealdb.connections.async_ws import AsyncWsSurrealConnection

from kgapp import surreal_server
from kgapp.graph.store import Connection


def test_rocksdb_data_survives_a_restart(tmp_path: Path) -> None:
    storage = f"rocksdb://{tmp_path / 'db'}"

    async def write(url: str) -> None:
        connection = AsyncWsSurrealConnection(url)
        await connection.use("t_durable", "kg")
        await connection.query("CREATE note:keep SET text = $t", {"t": "still here"})
        await connection.close()

    async def read(url: str) -> list:
        connection = AsyncWsSurrealConnection(url)
        await connection.use("t_durable", "kg")
        rows = await connection.query("SELECT VALUE text FROM note")
        await connection.close()
        return rows

    first = surreal_server.start(storage=storage)
    try:
        asyncio.run(write(first.url))
    finally:
        first.stop()
    assert first.process.returncode == 0
    second = surreal_server.start(storage=storage)
    try:
        assert asyncio.run(read(second.url)) == ["still here"]
    finally:
        second.stop()


async def test_live_select_from_the_python_sdk(surreal) -> None:
    connection = Connection(surreal.url)
    await connection.use("t_live_probe", "kg")
    await connection.query("DEFINE TABLE IF NOT EXISTS thing SCHEMALESS")
    live_id = await connection.live("thing")
    queue = await connection.subscribe_notifications(str(live_id))
    writer = AsyncWsSurrealConnection(surreal.url)
    await writer.use("t_live_probe", "kg")
    await writer.query("CREATE thing:a SET n = 1")
    await writer.query("UPDATE thing:a SET n = 2")
    await writer.query("DELETE thing:a")
    notes = [await asyncio.wait_for(queue.get(), 5) for _ in range(3)]
    assert [n["action"] for n in notes] == ["CREATE", "UPDATE", "DELETE"]
    assert notes[1]["result"]["n"] == 2
    await connection.kill(live_id)
    await writer.query("CREATE thing:b SET n = 3")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(queue.get(), 0.5)
    await writer.query("REMOVE NAMESPACE t_live_probe")
    await writer.close()
    await connection.close()


async def test_two_clients_in_two_namespaces_concurrently(surreal) -> None:
    async def client(namespace: str) -> list:
        connection = AsyncWsSurrealConnection(surreal.url)
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
    owner = AsyncWsSurrealConnection(surreal.url)
    session = await owner.attach()
    await owner.use("t_sess", "kg", session_id=session)
    thief = AsyncWsSurrealConnection(surreal.url)
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
