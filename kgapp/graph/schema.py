"""Schema migrations: `schema/NNNN_name.surql`, applied in order per tenant namespace.

Each file applies inside one transaction together with the `schema_migration` row
that records it, so a file is either wholly applied and recorded or not at all.
A file changed after it was applied is an error, never silently re-run.

A file may declare `-- requires: <capability>` in its header: it is applied only on a
server that has the capability, is retried on every later run until then, and may
therefore apply after files with higher versions (only index files use this).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypedDict

from kgapp.graph import queries
from kgapp.graph.errors import QueryFailed, SchemaError, UniqueViolation
from kgapp.graph.store import TenantStore

FILE_PATTERN = re.compile(r"^(\d{4})_([a-z0-9_]+)\.surql$")
REQUIRES_PATTERN = re.compile(r"^--\s*requires:\s*([a-z0-9_, ]+)$", re.M)
# Engine capabilities a migration may require.
ISOLATED_HNSW = "isolated_hnsw"
# The first release assumed to carry the per-namespace HNSW fix (SurrealDB PR #7077).
HNSW_ISOLATION_SINCE = (3, 1, 0)
DIMENSION_PLACEHOLDER = "{{EMBEDDING_DIM}}"
MAX_EMBEDDING_DIM = 8192


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    text: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def requires(self) -> frozenset[str]:
        names = ",".join(REQUIRES_PATTERN.findall(self.text))
        return frozenset(name.strip() for name in names.split(",") if name.strip())

    def render(self, embedding_dim: int) -> str:
        if not 1 <= embedding_dim <= MAX_EMBEDDING_DIM:
            raise SchemaError(f"embedding dimension out of range: {embedding_dim}")
        return self.text.replace(DIMENSION_PLACEHOLDER, str(int(embedding_dim)))


def load_migrations(directory: Path) -> list[Migration]:
    """Every migration file of `directory`, ordered by version; versions must be unique."""
    migrations: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.surql")):
        match = FILE_PATTERN.match(path.name)
        if match is None:
            raise SchemaError(f"{path.name}: migration files are named NNNN_name.surql")
        version = int(match.group(1))
        if version in migrations:
            raise SchemaError(f"{path.name}: version {version} is used twice")
        migrations[version] = Migration(version, path.stem, path.read_text(encoding="utf-8"))
    return [migrations[version] for version in sorted(migrations)]


class AppliedMigration(TypedDict):
    """A migration as schema_migration records it (queries.MIGRATIONS_APPLIED)."""

    name: str
    version: int
    checksum: str
    embedding_dim: int | None
    applied_at: datetime


async def applied_migrations(store: TenantStore) -> list[AppliedMigration]:
    await store.query(queries.MIGRATION_TABLE)
    rows = await store.query_one(queries.MIGRATIONS_APPLIED)
    return list(rows or [])


def capabilities_of(version: str) -> frozenset[str]:
    """What a server of `version` (e.g. "surrealdb-3.0.2") can do that migrations need."""
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:3])
    found = set()
    if numbers >= HNSW_ISOLATION_SINCE:
        found.add(ISOLATED_HNSW)
    return frozenset(found)


async def server_capabilities(store: TenantStore) -> frozenset[str]:
    return capabilities_of(await store.server_version())


async def migrate(
    store: TenantStore,
    migrations: list[Migration],
    *,
    embedding_dim: int,
    capabilities: frozenset[str] | None = None,
) -> list[str]:
    """Apply the pending migrations in order; returns the names applied (empty: no-op).

    `capabilities` defaults to what the connected server reports.
    """
    if capabilities is None:
        capabilities = await server_capabilities(store)
    applied = {row["version"]: row for row in await applied_migrations(store)}
    done: list[str] = []
    for migration in migrations:
        row = applied.get(migration.version)
        if row is not None:
            if row["checksum"] != migration.checksum:
                raise SchemaError(
                    f"{migration.name} changed after it was applied; add a new migration instead"
                )
            continue
        if not migration.requires <= capabilities:
            continue
        params = {
            "name": migration.name,
            "version": migration.version,
            "checksum": migration.checksum,
            "embedding_dim": embedding_dim,
        }
        sql = migration.render(embedding_dim) + "\n" + queries.MIGRATION_RECORD
        try:
            await store.transaction(sql, params)
        except UniqueViolation:
            # Another process applied this very file a moment ago: same outcome.
            continue
        except QueryFailed as error:
            raise SchemaError(f"{migration.name} failed to apply: {error}") from error
        done.append(migration.name)
    return done


async def schema_version(store: TenantStore) -> int:
    rows = await applied_migrations(store)
    return max((row["version"] for row in rows), default=0)
