"""The other copies of the bi-temporal rule, held to tests/graph/test_time.py's table:
the admin's fact filters (queries.ADMIN_FACT_ROWS: its system-time filter is
kgapp.graph.time.known_at, its states split facts as the rule does at the present
moment) and the demo score's current facts (kgapp.demo.score)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kgapp.demo.score import DemoGraph
from kgapp.graph import queries
from kgapp.graph.time import known_at, visible
from tests.graph.test_time import CASES, FACTS, MOMENTS, at, fact_row

NONE_OF_THE_OTHERS = {"relation": None, "entity": None, "valid_from": None, "valid_to": None}
STATES = ("current", "invalidated", "expired")
# The filters read the server's clock; here each of the table's moments stands for it.
FILTER_ROWS_AT = queries.ADMIN_FACT_ROWS.replace("time::now()", "$now")


def admin_state(fact: dict[str, datetime], now: datetime) -> str:
    """The admin's fact states: retired from the graph, ended in the world by `now`, or
    current."""
    if fact.get("expired_at") is not None:
        return "expired"
    if fact.get("invalid_at") is not None and fact["invalid_at"] <= now:
        return "invalidated"
    return "current"


async def passed(store: Any, **params: Any) -> list[bool]:
    rows = [fact_row(f) for f in FACTS]
    answer = await store.query_one(FILTER_ROWS_AT, {"facts": rows, **NONE_OF_THE_OTHERS, **params})
    return [bool(a) for a in answer]


def test_the_filters_read_the_clock_where_the_test_says() -> None:
    assert "time::now()" in queries.ADMIN_FACT_ROWS and "$now" not in queries.ADMIN_FACT_ROWS


def test_the_states_split_facts_as_the_rule_does_now() -> None:
    """At a moment the graph could be at (nothing created or retired after it), a fact is
    `expired` exactly when the graph no longer knows it, and every fact visible then is
    `current`."""
    for fact, (as_of, _) in CASES:
        row, now = fact_row(fact), at(as_of)
        if row["created_at"] > now or row.get("expired_at", now) > now:
            continue
        assert (admin_state(row, now) == "expired") == (not known_at(row, now))
        if visible(row, now, now):
            assert admin_state(row, now) == "current"


async def test_the_admin_filters_agree_with_the_rule(raw_namespace) -> None:
    store = await raw_namespace()
    seen: set[bool] = set()
    for _, known in MOMENTS:
        answers = await passed(store, known_at=at(known), state=None, now=at(0))
        assert answers == [known_at(fact_row(f), at(known)) for f in FACTS]
        seen.update(answers)
    for as_of, _ in MOMENTS:
        for state in STATES:
            answers = await passed(store, known_at=None, state=state, now=at(as_of))
            assert answers == [admin_state(fact_row(f), at(as_of)) == state for f in FACTS]
            seen.update(answers)
    assert seen == {True, False}
    assert await passed(store, known_at=None, state=None, now=at(0)) == [True] * len(FACTS)


def test_the_demo_score_agrees_with_the_rule() -> None:
    graph = DemoGraph(
        episodes=0, entities={}, merged=0, aliases={}, facts=[], communities=0, candidates=0
    )
    for fact, (as_of, _) in CASES:
        row: Any = fact_row(fact)
        graph.now = at(as_of)
        assert graph.is_current(row) == visible(row, graph.now, graph.now)
