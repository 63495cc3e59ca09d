"""With DATABASE_URL set, the relational store is the real PostgreSQL on this machine."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import psycopg
import pytest
from django.conf import settings

pytestmark = pytest.mark.slow

ADMIN_URL = os.environ.get("KG_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def postgres_url():
    name = f"kgapp_test_{secrets.token_hex(4)}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def manage(url: str, *args: str) -> str:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kgapp.settings.test",
        "DATABASE_URL": url,
        "SURREAL_URL": settings.SURREAL_URL,
    }
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_migrate_and_provision_on_postgresql(postgres_url: str) -> None:
    manage(postgres_url, "migrate", "--noinput")
    manage(postgres_url, "create_tenant", "pg-probe", "--name", "On Postgres")
    out = manage(
        postgres_url,
        "shell",
        "-c",
        "from django.db import connection; from tenants.models import Tenant;"
        "print(connection.vendor, Tenant.objects.get(slug='pg-probe').namespace)",
    )
    assert out.strip().splitlines()[-1].split() == ["postgresql", "t_pg_probe"]
    manage(postgres_url, "delete_tenant", "pg-probe", "--confirm", "pg-probe")
