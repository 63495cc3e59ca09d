"""A fact's two time axes drawn as bars on one scale, for the admin's fact page."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypedDict

from kgapp.graph.records import Fact


class Bar(TypedDict):
    """A span drawn on the fact page's time scale, in percent of its width."""

    left: float
    width: float


class Timeline(TypedDict):
    """Both time axes of a fact as bars on one scale (`start` to `end`)."""

    start: str
    end: str
    valid: Bar
    known: Bar


def timeline(row: Fact) -> Timeline:
    """Both time axes as bars on one scale (percentages), for the fact page."""
    now = datetime.now(UTC)
    points = [
        row["valid_at"],
        row["created_at"],
        row.get("invalid_at") or now,
        row.get("expired_at") or now,
    ]
    start, end = min(points), max(max(points), now)
    span = (end - start).total_seconds() or 1.0

    def bar(begin: datetime, finish: datetime | None) -> Bar:
        left = (begin - start).total_seconds() / span * 100
        right = ((finish or now) - start).total_seconds() / span * 100
        return {"left": round(left, 2), "width": round(max(0.5, right - left), 2)}

    return {
        "start": start.isoformat(),
        "end": end.isoformat(),
        "valid": bar(row["valid_at"], row.get("invalid_at")),
        "known": bar(row["created_at"], row.get("expired_at")),
    }
