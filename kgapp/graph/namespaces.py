"""Tenant namespaces at the root of the SurrealDB server."""

from __future__ import annotations

import asyncio

from kgapp.graph import queries
from kgapp.graph.errors import UniqueViolation
from kgapp.graph.records import JsonObject
from kgapp.graph.store import TenantStore

NAMESPACE_PREFIX = "t_"


def namespace_for(slug: str) -> str:
    """The namespace of a tenant slug (`acme-corp` -> `t_acme_corp`); slugs have no `_`."""
    return queries.check_namespace(NAMESPACE_PREFIX + slug.replace("-", "_"))


async def namespace_define(root: TenantStore, namespace: str, database: str) -> None:
    await root.query(queries.define_namespace(namespace, database))


async def namespace_remove(root: TenantStore, namespace: str, *, attempts: int = 8) -> None:
    """Drop a namespace and everything in it.

    Removal touches every key of the namespace, so it conflicts with any write still in
    flight there (a live query being killed, a job's last progress update); it retries.
    """
    for attempt in range(attempts):
        try:
            await root.query(queries.remove_namespace(namespace))
            return
        except UniqueViolation:
            if attempt == attempts - 1:
                raise
            await asyncio.sleep(min(1.0, 0.05 * 2**attempt))


async def namespace_names(root: TenantStore) -> list[str]:
    info: JsonObject = await root.query_one(queries.ROOT_INFO) or {}
    return sorted((info.get("namespaces") or {}).keys())
