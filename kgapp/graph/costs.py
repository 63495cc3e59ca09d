"""What model calls cost a tenant: the usage rows jobs store (`llm/usage.py`) added up
per job or document, and per calendar month (UTC) of the jobs' creation.

A row whose model had no price has cost None: totals add up the known costs and name
the unpriced models, so an unknown price never passes for a free call.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from kgapp.graph import queries
from kgapp.graph.store import TenantStore
from kgapp.graph.time import in_utc


def usage_total(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Calls, input and output tokens and cost of usage rows together; `cost_usd` is
    that of the priced rows, `unpriced_models` the models that had no price."""
    total: dict[str, Any] = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    unpriced: set[str] = set()
    for row in rows:
        for key in ("calls", "input_tokens", "output_tokens"):
            total[key] += int(row.get(key) or 0)
        if row.get("cost_usd") is None:
            unpriced.add(str(row.get("model")))
        else:
            total["cost_usd"] += float(row["cost_usd"])
    total["unpriced_models"] = sorted(unpriced)
    return total


def month_starts(now: datetime, months: int) -> list[datetime]:
    """The first instants of the `months` calendar months up to `now`'s, newest first."""
    now = in_utc(now)
    starts = []
    year, month = now.year, now.month
    for _ in range(months):
        starts.append(datetime(year, month, 1, tzinfo=UTC))
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return starts


async def usage_by_month(store: TenantStore, *, months: int, now: datetime) -> list[dict[str, Any]]:
    """The tenant's jobs, calls, tokens and cost in each of the last `months` months
    (`month` as "YYYY-MM"), newest first; months without jobs are there with zeros."""
    starts = month_starts(now, months)
    rows = await store.query_one(queries.JOBS_USAGE_SINCE, {"since": starts[-1]}) or []
    by_month: dict[str, list[dict[str, Any]]] = {f"{s:%Y-%m}": [] for s in starts}
    jobs = dict.fromkeys(by_month, 0)
    for row in rows:
        month = f"{in_utc(row['created_at']):%Y-%m}"
        if month in by_month:
            jobs[month] += 1
            by_month[month].extend(row.get("usage") or [])
    return [
        {"month": month, "jobs": jobs[month], **usage_total(used)}
        for month, used in by_month.items()
    ]
