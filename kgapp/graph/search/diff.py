"""What differs in the graph between two moments, on one time axis.

On the valid axis both moments are valid times, read as the graph knows them now: what
was true in the world at `from` and at `to`. On the known axis both are system times,
over all valid times: what the graph believed at `from` and at `to`. The rule for each
is kgapp/graph/time.py's (`visible` with `known` = now; `known_at`), as the explorer's
sliders apply it.

A fact is *added* when present at `to` and not at `from`, *ended* when present at
`from` and not at `to`. An ended and an added fact of one lineage (the added one a
revision of the ended one, or the same source, relation and target) are one *changed*
fact, shown before and after, when their statement or validity differ; when nothing
differs, the graph only re-recorded the fact, and it is left out. The diff is
directional: with `from` after `to`, what was added going back in time is listed as
added.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypedDict

from typing_extensions import ReadOnly

from kgapp.graph import queries
from kgapp.graph.records import Fact, FactBase, as_fact, record_key, to_json
from kgapp.graph.store import TenantStore
from kgapp.graph.time import known_at, visible

Axis = Literal["valid", "known"]
AXES: tuple[Axis, ...] = ("valid", "known")
DIFF_LIMIT = 500  # facts listed per kind unless told
DIFF_MAX_LIMIT = 5000
# What makes two versions of a fact differ, in the order the changes are named.
COMPARED = ("fact", "valid_at", "invalid_at")
# The store keeps nanoseconds and Python reads microseconds: the ranges read one
# microsecond wider, and Python decides (docs/surrealdb-notes.md, "Datetimes").
_SLACK = timedelta(microseconds=1)


@dataclass(frozen=True)
class DiffRequest:
    """Two moments on one axis; `limit` facts listed per kind (the totals count all)."""

    from_: datetime
    to: datetime
    axis: Axis = "valid"
    limit: int = DIFF_LIMIT

    def __post_init__(self) -> None:
        if self.axis not in AXES:
            raise ValueError(f"axis is one of {', '.join(AXES)}, not {self.axis!r}")
        if not 1 <= self.limit <= DIFF_MAX_LIMIT:
            raise ValueError(f"limit is between 1 and {DIFF_MAX_LIMIT}")


class DiffFact(FactBase, total=False):
    """A fact as a diff lists it: the names of its ends, None for an entity gone since."""

    source_name: ReadOnly[str | None]
    target_name: ReadOnly[str | None]


@dataclass(frozen=True)
class FactChange:
    """One fact's version at `from` and its version at `to`; `fields`: what differs."""

    before: DiffFact
    after: DiffFact
    fields: tuple[str, ...]


class DiffTotals(TypedDict):
    """How many facts of each kind differ, listed or not."""

    added: int
    ended: int
    changed: int


@dataclass(frozen=True, slots=True)
class DiffResult:
    request: DiffRequest
    added: list[DiffFact]
    ended: list[DiffFact]
    changed: list[FactChange]
    totals: DiffTotals

    @property
    def truncated(self) -> bool:
        totals = self.totals
        return (
            len(self.added) < totals["added"]
            or len(self.ended) < totals["ended"]
            or len(self.changed) < totals["changed"]
        )


async def graph_diff(store: TenantStore, request: DiffRequest) -> DiffResult:
    """Facts added, ended and changed between `request.from_` and `request.to`."""
    now = datetime.now(UTC)
    rows = await _facts_with_a_bound_between(store, request)
    added, ended = [], []
    for fact in rows:
        before = _present(fact, request.from_, request.axis, now)
        after = _present(fact, request.to, request.axis, now)
        if after and not before:
            added.append(fact)
        elif before and not after:
            ended.append(fact)
    changed, added, ended = _pair_versions(added, ended)
    totals: DiffTotals = {"added": len(added), "ended": len(ended), "changed": len(changed)}
    added, ended = _ordered(added)[: request.limit], _ordered(ended)[: request.limit]
    changed = sorted(changed, key=lambda c: _order_key(c.after))[: request.limit]
    versions = [fact for change in changed for fact in (change.before, change.after)]
    names = await _end_names(store, [*added, *ended, *versions])
    return DiffResult(
        request=request,
        added=[_named(fact, names) for fact in added],
        ended=[_named(fact, names) for fact in ended],
        changed=[
            replace(c, before=_named(c.before, names), after=_named(c.after, names))
            for c in changed
        ],
        totals=totals,
    )


async def _facts_with_a_bound_between(store: TenantStore, request: DiffRequest) -> list[Fact]:
    """Every fact whose interval on the axis starts or ends between the two moments:
    only those can be present at one and not the other. Once each."""
    low, high = sorted((request.from_, request.to))
    sql = queries.DIFF_VALID_BOUNDS if request.axis == "valid" else queries.DIFF_KNOWN_BOUNDS
    bounds = {"low": _nudged(low, -_SLACK), "high": _nudged(high, _SLACK)}
    starts, ends = await store.query(sql, bounds)
    unique = {record_key(row["id"]): row for row in (starts or []) + (ends or [])}
    return [as_fact(row) for row in unique.values()]


async def _end_names(store: TenantStore, facts: list[DiffFact]) -> dict[str, str | None]:
    """The names of the listed facts' ends by record key (None for an entity that is
    gone), each entity read once."""
    ends = {record_key(end): end for fact in facts for end in (fact["source"], fact["target"])}
    if not ends:
        return {}
    found = await store.query_one(queries.DIFF_ENTITY_NAMES, {"ids": list(ends.values())})
    return dict(zip(ends, found or [], strict=True))


def _named(fact: DiffFact, names: dict[str, str | None]) -> DiffFact:
    """The fact with the names of its ends (`source_name`, `target_name`)."""
    return {
        **fact,
        "source_name": names[record_key(fact["source"])],
        "target_name": names[record_key(fact["target"])],
    }


def _nudged(moment: datetime, by: timedelta) -> datetime:
    """`moment` moved by `by`, or `moment` itself at the ends of what a datetime holds
    (0001-01-01 and 9999-12-31T23:59:59.999999: nothing lies beyond them to take in)."""
    try:
        return moment + by
    except OverflowError:
        return moment


def _present(fact: Fact, moment: datetime, axis: Axis, now: datetime) -> bool:
    if axis == "valid":
        return visible(fact, moment, now)
    return known_at(fact, moment)


def _pair_versions(
    added: list[Fact], ended: list[Fact]
) -> tuple[list[FactChange], list[Fact], list[Fact]]:
    """Match added facts with the ended facts they are versions of: a revision first
    (`revision_of`), then the same source, relation and target (earliest valid first).
    Returns the changes and the facts left unmatched on each side."""
    open_ended = {record_key(f["id"]): f for f in ended}
    # A revision may be either side: going back in system time, the revision ends.
    revised_by = {
        record_key(revised): key
        for key, f in open_ended.items()
        if (revised := f.get("revision_of")) is not None
    }
    pairs: list[tuple[Fact, Fact]] = []
    unmatched = []
    for fact in _ordered(added):
        revised = fact.get("revision_of")
        key = record_key(revised) if revised else revised_by.get(record_key(fact["id"]))
        before = open_ended.pop(key, None) if key else None
        if before is None:
            unmatched.append(fact)
        else:
            pairs.append((before, fact))
    by_lineage: dict[tuple[str, str, str], list[Fact]] = defaultdict(list)
    for fact in _ordered(open_ended.values()):
        by_lineage[_lineage(fact)].append(fact)
    left_added = []
    for fact in unmatched:
        candidates = by_lineage.get(_lineage(fact))
        if candidates:
            pairs.append((candidates.pop(0), fact))
        else:
            left_added.append(fact)
    changes = [FactChange(b, a, _differences(b, a)) for b, a in pairs]
    left_ended = [f for versions in by_lineage.values() for f in versions]
    return [c for c in changes if c.fields], left_added, left_ended


def _lineage(fact: Fact) -> tuple[str, str, str]:
    return (record_key(fact["source"]), fact["relation"], record_key(fact["target"]))


def _differences(before: Fact, after: Fact) -> tuple[str, ...]:
    return tuple(name for name in COMPARED if before.get(name) != after.get(name))


def _order_key(fact: DiffFact) -> tuple[datetime, str, str]:
    return (fact["valid_at"], fact["relation"], record_key(fact["id"]))


def _ordered(facts: Iterable[Fact]) -> list[Fact]:
    return sorted(facts, key=_order_key)


# --- CSV ------------------------------------------------------------------------------

CSV_COLUMNS = (
    "change", "fact_id", "source", "relation", "target", "fact", "valid_at", "invalid_at",
    "created_at", "expired_at", "changed_fields", "previous_fact_id", "previous_fact",
    "previous_valid_at", "previous_invalid_at",
)  # fmt: skip
# A spreadsheet runs a cell that starts with one of these as a formula.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> str:
    """A value as a CSV cell that no spreadsheet evaluates: text that would start a
    formula gets a leading apostrophe (OWASP's advice on CSV injection)."""
    text = "" if value is None else str(to_json(value))
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def diff_csv(result: DiffResult) -> str:
    """The diff as CSV: one row per fact listed, a changed fact with its earlier version
    in the `previous_*` columns."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for kind, facts in (("added", result.added), ("ended", result.ended)):
        for fact in facts:
            writer.writerow(_csv_row(kind, fact))
    for change in result.changed:
        before = change.before
        previous = (before["id"], before["fact"], before["valid_at"], before.get("invalid_at"))
        writer.writerow(_csv_row("changed", change.after, change.fields, previous))
    return out.getvalue()


def _csv_row(
    kind: str, fact: DiffFact, fields: tuple[str, ...] = (), previous: tuple[Any, ...] = ()
) -> list[str]:
    values = (
        kind, fact["id"], fact.get("source_name") or fact["source"], fact["relation"],
        fact.get("target_name") or fact["target"], fact["fact"], fact["valid_at"],
        fact.get("invalid_at"), fact["created_at"], fact.get("expired_at"), " ".join(fields),
        *(previous or (None,) * 4),
    )  # fmt: skip
    return [csv_cell(v) for v in values]
