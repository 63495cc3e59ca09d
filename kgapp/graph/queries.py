"""Every SurrealQL string the application sends, outside the schema migrations.

Values always travel as `$parameters`. The only identifiers ever formatted into a
string are namespace names, which `check_namespace` validates against a strict
pattern first, and table names, which come from the `GRAPH_TABLES` allowlist.
"""

from __future__ import annotations

import re

from kgapp.graph.errors import GraphError

NAMESPACE_PATTERN = re.compile(r"^t_[a-z0-9_]{1,60}$")

# Tables whose rows the edges may name by record id or subscribe to.
GRAPH_TABLES = frozenset(
    {
        "episode",
        "document",
        "entity",
        "alias",
        "relates_to",
        "mentions",
        "occurred_after",
        "saga",
        "has_episode",
        "community",
        "has_member",
        "dedup_candidate",
        "job",
        "audit",
        "ontology",
    }
)
# Tables a browser may watch live (the explorer's view of the graph and its jobs).
LIVE_TABLES = frozenset({"entity", "relates_to", "community", "job"})


def check_namespace(namespace: str) -> str:
    if not NAMESPACE_PATTERN.fullmatch(namespace):
        raise GraphError(f"not a tenant namespace: {namespace!r}")
    return namespace


def check_table(table: str, allowed: frozenset[str] = GRAPH_TABLES) -> str:
    if table not in allowed:
        raise GraphError(f"not an allowed table: {table!r}")
    return table


def in_transaction(sql: str) -> str:
    return f"BEGIN TRANSACTION;\n{sql.rstrip().rstrip(';')};\nCOMMIT TRANSACTION;"


def is_unique_violation(message: str) -> bool:
    return "already contains" in message


def is_rollback_notice(message: str) -> bool:
    return "not executed due to a failed transaction" in message or (
        "transaction" in message and "cancelled" in message
    )


# --- namespaces (root level) ---------------------------------------------------------


def define_namespace(namespace: str, database: str) -> str:
    ns = check_namespace(namespace)
    db = _check_database(database)
    return f"DEFINE NAMESPACE IF NOT EXISTS {ns}; USE NS {ns}; DEFINE DATABASE IF NOT EXISTS {db};"


def remove_namespace(namespace: str) -> str:
    return f"REMOVE NAMESPACE IF EXISTS {check_namespace(namespace)};"


ROOT_INFO = "INFO FOR ROOT;"


def _check_database(database: str) -> str:
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,30}", database):
        raise GraphError(f"not a database name: {database!r}")
    return database


# --- schema migrations ---------------------------------------------------------------

MIGRATION_TABLE = """
DEFINE TABLE IF NOT EXISTS schema_migration SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS name ON schema_migration TYPE string;
DEFINE FIELD IF NOT EXISTS version ON schema_migration TYPE int;
DEFINE FIELD IF NOT EXISTS checksum ON schema_migration TYPE string;
DEFINE FIELD IF NOT EXISTS embedding_dim ON schema_migration TYPE int;
DEFINE FIELD IF NOT EXISTS applied_at ON schema_migration TYPE datetime DEFAULT time::now();
DEFINE INDEX IF NOT EXISTS schema_migration_version ON schema_migration FIELDS version UNIQUE;
"""

MIGRATIONS_APPLIED = """
SELECT name, version, checksum, embedding_dim, applied_at FROM schema_migration
ORDER BY version;
"""

MIGRATION_RECORD = """
CREATE schema_migration CONTENT {
    name: $name, version: $version, checksum: $checksum, embedding_dim: $embedding_dim
};
"""

# --- health and jobs -----------------------------------------------------------------

PING = "RETURN true;"

TABLE_COUNTS = """
RETURN {
    entities: count(SELECT VALUE id FROM entity),
    facts: count(SELECT VALUE id FROM relates_to),
    episodes: count(SELECT VALUE id FROM episode),
    documents: count(SELECT VALUE id FROM document),
    communities: count(SELECT VALUE id FROM community)
};
"""

JOB_CREATE = """
CREATE ONLY job CONTENT {
    kind: $kind, status: 'queued', progress: 0, total: $total,
    counts: {}, timings: {}, created_by: $created_by
};
"""

JOB_GET = "SELECT * FROM ONLY $job;"

JOB_LIST = """
SELECT * FROM job WHERE $status = NONE OR status = $status
ORDER BY created_at DESC LIMIT $limit START $offset;
"""

JOB_START = """
UPDATE ONLY $job SET status = 'running', started_at = time::now(), updated_at = time::now(),
    attempts += 1
WHERE status IN ['queued', 'running'];
"""

JOB_FINISH = """
UPDATE ONLY $job SET status = 'completed', progress = total, finished_at = time::now(),
    updated_at = time::now(), counts = $counts, timings = $timings, error = NONE;
"""

JOB_FAIL = """
UPDATE ONLY $job SET status = 'failed', finished_at = time::now(), updated_at = time::now(),
    error = $error;
"""

# --- live changes --------------------------------------------------------------------


def live_select(table: str) -> str:
    return f"LIVE SELECT * FROM {check_table(table, LIVE_TABLES)};"


KILL_LIVE = "KILL $id;"
