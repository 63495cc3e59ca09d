"""A statement that lost a write conflict, sent again.

Of two transactions that write the same record at once, SurrealDB fails the later
commit: "Transaction conflict: Write conflict, retry the transaction. This transaction
can be retried" (the store raises it as UniqueViolation). A statement sent on its own is
one transaction, so the one that lost changed nothing and may simply be sent again.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from kgapp.graph.errors import GraphError
from kgapp.graph.store import Params, TenantStore

ATTEMPTS = 6


def lost_race(error: GraphError) -> bool:
    """Whether `error` is a write conflict that running the transaction again resolves."""
    return "can be retried" in str(error)


async def rerun_on_conflict(
    store: TenantStore, sql: str, params: Params, *, attempts: int = ATTEMPTS
) -> Any:
    """The result of one statement, sent again while it loses a write conflict (up to
    `attempts` times in all, a few milliseconds apart, growing, jittered)."""
    attempt = 1
    while True:
        try:
            return await store.query_one(sql, params)
        except GraphError as error:
            if attempt >= attempts or not lost_race(error):
                raise
        await asyncio.sleep(random.uniform(0.5, 1.0) * 0.01 * 2 ** (attempt - 1))
        attempt += 1
