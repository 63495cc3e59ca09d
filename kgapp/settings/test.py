"""The test suite: its own var/ folder, a file SQLite database (worker processes
started by tests open the same file), fast password hashing."""

import os

from kgapp.settings import env, files
from kgapp.settings.base import *  # noqa: F403

VAR_DIR = env.path("KG_VAR_DIR", BASE_DIR / "var" / "test")  # noqa: F405
files.keep_private(VAR_DIR)

DEBUG = False
SECRET_KEY = "test-secret-key"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
if not env.text("DATABASE_URL"):
    DATABASES = {
        "default": {
            **database(f"sqlite:///{VAR_DIR / 'kgapp.sqlite3'}"),  # noqa: F405
            # Per process: two test runs at once must not share (and corrupt) one file.
            "TEST": {"NAME": str(VAR_DIR / f"test-db-{os.getpid()}.sqlite3")},
        }
    }
SURREAL_QUERY_TIMEOUT = 10.0
SURREAL_CONNECT_ATTEMPTS = 2
CELERY_BROKER_URL, CELERY_BROKER_TRANSPORT_OPTIONS = celery_broker(  # noqa: F405
    REDIS_URL,
    VAR_DIR / "celery",  # noqa: F405
)
CACHES = {**CACHES, "coordination": coordination_cache(REDIS_URL, VAR_DIR)}  # noqa: F405
# Communities follow ingestion a second after a burst (workers the tests start).
COMMUNITY_DEBOUNCE = env.number("KG_COMMUNITY_DEBOUNCE", 1.0)
STATIC_ROOT = VAR_DIR / "static"
RETENTION_ARCHIVE_DIR = env.path("KG_RETENTION_ARCHIVE_DIR", VAR_DIR / "retention")
IMPORT_DIR = env.path("KG_IMPORT_DIR", VAR_DIR / "imports")
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Rate limits are off unless a test sets them (tests/web/test_rate_limits.py): suites that
# send many requests as one user would otherwise meet them.
RATE_LIMITS = {}
# Tests load the demo data themselves (tests/demo), not as bootstrap_demo's side effect.
DEMO_DATA = False
