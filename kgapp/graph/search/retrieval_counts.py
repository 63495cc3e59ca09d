"""Retrieval counts: link weight evolution (A-MEM). Each fact a search returns counts one
retrieval, which raises its effective confidence (activation.effective_confidence);
the counts decay over time."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from kgapp.graph import queries
from kgapp.graph.errors import GraphError
from kgapp.graph.records import Fact
from kgapp.graph.rerun import lost_race, rerun_on_conflict
from kgapp.graph.search.model import Hit
from kgapp.graph.store import TenantStore

log = logging.getLogger(__name__)


async def count_retrievals(store: TenantStore, facts: list[Hit[Fact]]) -> None:
    """Link weight evolution: every fact search returns counts one retrieval. Searches
    that return the same facts at once (on two web servers, say) write the same counters:
    the one that loses the commit is sent again (rerun.py); one that loses every time is
    not counted, and the search answers all the same."""
    if not facts:
        return
    try:
        ids = [hit.record["id"] for hit in facts]
        await rerun_on_conflict(store, queries.FACTS_RETRIEVED, {"ids": ids})
    except GraphError as error:
        if not lost_race(error):
            raise
        log.warning("retrievals of %d facts not counted: %s", len(facts), error)


async def decay_retrieval_counts(store: TenantStore, *, lambda_: float = 0.01) -> None:
    """count x exp(-lambda x days since the last decay); run periodically."""
    await store.query(queries.RETRIEVAL_DECAY, {"lambda": lambda_, "now": datetime.now(UTC)})
