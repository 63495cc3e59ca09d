"""What a tenant's model calls used and cost, month by month."""

from __future__ import annotations

from datetime import UTC, datetime

from django.http import HttpRequest
from ninja import Query, Router

from kgapp.graph import costs
from kgapp.graph.costs import MonthUsage
from kgapp.web.routers.shared import DENIED, graph_in
from kgapp.web.schemas import ErrorOut, MonthUsageOut, UsageFilter

router = Router(tags=["usage"])


@router.get("/t/{tenant}/usage", response={200: list[MonthUsageOut], 422: ErrorOut, **DENIED})
def usage_by_month(
    request: HttpRequest, tenant: str, filters: Query[UsageFilter]
) -> list[MonthUsage]:
    """Jobs, model calls, tokens and cost (USD) in each of the last `months` calendar
    months (UTC), newest first; months without jobs are listed with zeros."""
    return graph_in(request, tenant).run(
        costs.usage_by_month, months=filters.months, now=datetime.now(UTC)
    )
