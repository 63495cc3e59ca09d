"""Tenant namespaces at the root of the SurrealDB server."""

from __future__ import annotations

from typing import Any

from kgapp.graph import queries
from kgapp.graph.store import TenantStore

NAMESPACE_PREFIX = "t_"


def namespace_for(slug: str) -> str:
    """The namespace of a tenant slug (`acme-corp` -> `t_acme_corp`); slugs have no `_`."""
    return queries.check_namespace(NAMESPACE_PREFIX + slug.replace("-", "_"))


async def namespace_define(root: TenantStore, namespace: str, database: str) -> None:
    await root.query(queries.define_namespace(namespace, database))


async def namespace_remove(root: TenantStore, namespace: str) -> None:
    await root.query(queries.remove_namespace(namespace))


async def namespace_names(root: TenantStore) -> list[str]:
    info: dict[str, Any] = await root.query_one(queries.ROOT_INFO) or {}
    return sorted((info.get("namespaces") or {}).keys())
