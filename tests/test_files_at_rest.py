"""Local data at rest is the service user's only: a fresh var/ is made 0700 with files
0600, by Django's processes and by the SurrealDB server they start; an existing var/
that others could enter is tightened at the first start."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings

from kgapp import surreal_server
from tests.web_server import free_port


def manage(var_dir: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "kgapp.settings.dev", "KG_VAR_DIR": str(var_dir)}
    for name in ("DATABASE_URL", "SURREAL_USER", "SURREAL_PASS", "SURREAL_URL", "KG_SEARCH_DIR"):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env={**env, **extra},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def open_to_others(root: Path) -> list[str]:
    """Every path under `root` (itself included) that group or others may use at all."""
    paths = [
        root,
        *(Path(top, name) for top, dirs, files in os.walk(root) for name in dirs + files),
    ]
    return [
        f"{oct(stat.S_IMODE(path.lstat().st_mode))} {path.relative_to(root)}"
        for path in paths
        if not path.is_symlink() and stat.S_IMODE(path.lstat().st_mode) & 0o077
    ]


def test_a_fresh_var_and_everything_the_product_writes_in_it_are_private(tmp_path: Path) -> None:
    var = tmp_path / "var"
    manage(var, "migrate", "--noinput")
    assert (var / "kgapp.sqlite3").is_file()
    assert (var / "surreal-credentials.json").is_file()
    assert stat.S_IMODE(var.stat().st_mode) == 0o700
    assert open_to_others(var) == []


def test_the_surreal_server_writes_its_files_private(tmp_path: Path) -> None:
    """`manage.py surreal` becomes the server: its storage (RocksDB, whose files hold the
    tenants' text) is made with the settings' umask."""
    var = tmp_path / "var"
    bind = f"127.0.0.1:{free_port()}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kgapp.settings.dev",
        "KG_VAR_DIR": str(var),
        "SURREAL_BIND": bind,
    }
    for name in ("SURREAL_USER", "SURREAL_PASS", "SURREAL_STORAGE"):
        env.pop(name, None)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "surreal"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        assert surreal_server.wait_healthy(f"ws://{bind}", timeout=60)
        deadline = time.monotonic() + 10
        while not list((var / "surreal").glob("*")) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(20)
    assert list((var / "surreal").glob("*")), "the server wrote no storage files"
    assert open_to_others(var) == []


def test_an_existing_var_that_others_can_read_is_tightened_at_start(tmp_path: Path) -> None:
    var = tmp_path / "var"
    (var / "surreal").mkdir(parents=True)
    (var / "surreal" / "000012.log").write_text("tenant B's text")
    (var / "kgapp.sqlite3").write_bytes(b"")
    (var / "run.sh").write_text("#!/bin/sh\n")
    (var / "run.sh").chmod(0o755)
    for path in (var, var / "surreal"):
        path.chmod(0o755)
    for path in (var / "surreal" / "000012.log", var / "kgapp.sqlite3"):
        path.chmod(0o644)
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    outside.chmod(0o755)
    (var / "elsewhere").symlink_to(outside)  # a link is left alone, and not followed
    assert len(open_to_others(var)) == 5
    manage(var, "check")
    assert open_to_others(var) == []
    assert stat.S_IMODE((var / "run.sh").stat().st_mode) == 0o700  # the owner keeps theirs
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755  # the link's target untouched
