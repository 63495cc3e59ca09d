"""What model calls cost a tenant: the usage rows jobs store (`llm/usage.py`) added up
per job or document, and per calendar month (UTC) of the jobs' creation.

A row whose model had no price has cost None: totals add up the known costs and name
the unpriced models, so an unknown price never passes for a free call.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TypedDict

from kgapp.graph import queries
from kgapp.graph.llm.usage import UsageRow
from kgapp.graph.store import TenantStore
from kgapp.graph.time import in_utc


class UsageTotal(TypedDict):
    """Usage rows added up: `cost_usd` is that of the priced rows, `unpriced_models` the
    models that had no price."""

    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    unpriced_models: list[str]


class MonthUsage(UsageTotal):
    """What the jobs created in one calendar month (UTC, "YYYY-MM") used."""

    month: str
    jobs: int


def usage_total(rows: Iterable[UsageRow]) -> UsageTotal:
    """Calls, input and output tokens and cost of usage rows together; `cost_usd` is
    that of the priced rows, `unpriced_models` the models that had no price."""
    calls = input_tokens = output_tokens = 0
    cost = 0.0
    unpriced: set[str] = set()
    for row in rows:  # stored rows: a field may be missing or null
        calls += int(row.get("calls") or 0)
        input_tokens += int(row.get("input_tokens") or 0)
        output_tokens += int(row.get("output_tokens") or 0)
        row_cost = row.get("cost_usd")
        if row_cost is None:
            unpriced.add(str(row.get("model")))
        else:
            cost += float(row_cost)
    return {
        "calls": calls,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost_usd": cost,
        "unpriced_models": sorted(unpriced),
    }


def month_starts(now: datetime, months: int) -> list[datetime]:
    """The first instants of the `months` calendar months up to `now`'s, newest first."""
    now = in_utc(now)
    starts = []
    year, month = now.year, now.month
    for _ in range(months):
        starts.append(datetime(year, month, 1, tzinfo=UTC))
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return starts


async def usage_by_month(store: TenantStore, *, months: int, now: datetime) -> list[MonthUsage]:
    """The tenant's jobs, calls, tokens and cost in each of the last `months` months
    (`month` as "YYYY-MM"), newest first; months without jobs are there with zeros."""
    starts = month_starts(now, months)
    rows = await store.query_one(queries.JOBS_USAGE_SINCE, {"since": starts[-1]}) or []
    by_month: dict[str, list[UsageRow]] = {f"{s:%Y-%m}": [] for s in starts}
    jobs = dict.fromkeys(by_month, 0)
    for row in rows:
        month = f"{in_utc(row['created_at']):%Y-%m}"
        if month in by_month:
            jobs[month] += 1
            by_month[month].extend(row.get("usage") or [])
    return [
        MonthUsage(month=month, jobs=jobs[month], **usage_total(used))
        for month, used in by_month.items()
    ]
