"""What several benchmarks share: Django on a scratch folder and database, against a
SurrealDB server the benchmark started, with Celery tasks run in the calling process.
A helper module, not a benchmark: `make bench` skips it."""

from __future__ import annotations

import os
from pathlib import Path

from kgapp import surreal_server


def django_setup(var: Path, server: surreal_server.RunningServer) -> None:
    """Test settings on a scratch folder and database, tasks run in this process."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "REDIS_URL"):
        os.environ.pop(name, None)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="kgapp.settings.test",
        KG_VAR_DIR=str(var),
        KG_SEARCH_DIR=str(var / "search"),
        KG_EMBEDDER="local",
        KG_LOG_LEVEL=os.environ.get("KG_LOG_LEVEL", "WARNING"),
        DATABASE_URL=f"sqlite:///{var / 'bench.sqlite3'}",
        SURREAL_URL=server.url,
        **server.credentials.env(),
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from kgapp.celery import app

    app.conf.task_always_eager = True
