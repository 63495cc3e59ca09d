"""Retrieval counts: link weight evolution (A-MEM). Each fact a search returns counts one
retrieval, which raises its effective confidence (activation.effective_confidence);
the counts decay over time."""

from __future__ import annotations

from datetime import UTC, datetime

from kgapp.graph import queries
from kgapp.graph.search.model import Hit
from kgapp.graph.store import TenantStore


async def count_retrievals(store: TenantStore, facts: list[Hit]) -> None:
    """Link weight evolution: every fact search returns counts one retrieval."""
    if facts:
        await store.query(queries.FACTS_RETRIEVED, {"ids": [hit.record["id"] for hit in facts]})


async def decay_retrieval_counts(store: TenantStore, *, lambda_: float = 0.01) -> None:
    """count x exp(-lambda x days since the last decay); run periodically."""
    await store.query(queries.RETRIEVAL_DECAY, {"lambda": lambda_, "now": datetime.now(UTC)})
