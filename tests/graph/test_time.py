"""Bi-temporal visibility has one definition, kgapp.graph.time.visible, mirrored once in
SurrealQL (queries.VISIBLE_ROWS), once in JavaScript (frontend/static/js/time.js) and
once over the search index's columns (FactIndex.visible); the four must answer the same
on every case of this table."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kgapp.graph import queries
from kgapp.graph.index import FactIndex
from kgapp.graph.index.directories import TableState
from kgapp.graph.index.facts import FACTS as FACTS_SPEC
from kgapp.graph.index.writer import TableWriter
from kgapp.graph.time import Moment, in_utc, parse_when, visible

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def at(days: float) -> datetime:
    return T0 + timedelta(days=days)


# (valid_at, invalid_at, created_at, expired_at) in days after T0; None: open.
FACTS = [
    (0, None, 0, None),
    (10, None, 10, None),
    (0, 10, 0, None),
    (0, None, 0, 10),
    (5, 15, 2, 12),
    (0, 10, 10, None),
    (10, 10, 0, None),  # empty validity
    (0, None, 7, 7),  # known for no time
]
# (as_of, known_at) in days.
MOMENTS = [(0, 0), (5, 5), (9.999999, 9.999999), (10, 10), (12, 3), (3, 12), (20, 20), (-1, 30)]
CASES = [(fact, moment) for fact in FACTS for moment in MOMENTS]


def fact_row(fact: tuple[float | None, ...]) -> dict[str, datetime]:
    names = ("valid_at", "invalid_at", "created_at", "expired_at")
    return {name: at(days) for name, days in zip(names, fact, strict=True) if days is not None}


def python_answers() -> list[bool]:
    return [visible(fact_row(f), at(a), at(k)) for f, (a, k) in CASES]


def test_the_table_has_both_answers() -> None:
    answers = python_answers()
    assert 20 < sum(answers) < len(answers) - 20


def test_the_edges_of_a_validity_are_closed_then_open() -> None:
    fact = fact_row((0, 10, 0, None))
    assert visible(fact, at(0), at(0))
    assert not visible(fact, at(10), at(10))
    assert not visible(fact, at(-1), at(0))
    assert Moment.of(at(5), at(5)).shows(fact)


async def test_surrealql_agrees_with_python(raw_namespace) -> None:
    store = await raw_namespace()
    surreal = []
    for fact, (as_of, known) in CASES:
        rows = await store.query_one(
            queries.VISIBLE_ROWS,
            {"facts": [fact_row(fact)], "as_of": at(as_of), "known_at": at(known)},
        )
        surreal.append(bool(rows[0]))
    assert surreal == python_answers()


def test_the_search_index_agrees_with_python(tmp_path: Path) -> None:
    """The fact index's columns filter by the same rule (FactIndex.visible)."""
    writer = TableWriter(tmp_path, FACTS_SPEC, TableState())
    for number, fact in enumerate(FACTS):
        writer.put({"id": f"relates_to:f{number}", "fact": "", **fact_row(fact)})
    state = writer.commit(1)
    writer.close()
    index = FactIndex(tmp_path)
    index.update(state)
    masks = {moment: index.visible(at(moment[0]), at(moment[1])) for moment in MOMENTS}
    assert [bool(masks[moment][FACTS.index(f)]) for f, moment in CASES] == python_answers()


def test_javascript_agrees_with_python() -> None:
    def ms(days: float | None) -> float | None:
        return None if days is None else at(days).timestamp() * 1000

    cases = [
        [
            dict(
                zip(("valid_at", "invalid_at", "created_at", "expired_at"), map(ms, f), strict=True)
            ),
            ms(a),
            ms(k),
        ]
        for f, (a, k) in CASES
    ]
    script = (
        "import {visible} from './frontend/static/js/time.js';"
        "const cases = JSON.parse(process.argv[1]);"
        "console.log(JSON.stringify(cases.map(([f, a, k]) => visible(f, a, k))));"
    )
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script, json.dumps(cases)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == python_answers()


def test_one_utc_parser() -> None:
    assert parse_when("2024-05-01T12:00:00+02:00") == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert parse_when("2024-05-01") == datetime(2024, 5, 1, tzinfo=UTC)
    assert parse_when("0001-01-01T00:00:00+01:00") is None  # before year 1 in UTC
    assert parse_when("yesterday") is None
    assert in_utc(datetime(2024, 5, 1)) == datetime(2024, 5, 1, tzinfo=UTC)
