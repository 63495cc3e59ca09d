"""The graph at a moment as GraphML (Gephi, networkx, yEd) or CSV (spreadsheets).

The graph at (as_of, known_at) is what the explorer draws there: the facts true at
`as_of` as the graph knew them at `known_at` (`queries._VISIBLE`), and the entities they
join. Both formats stream: the facts' ids and ends are read once, then entities and
facts a page at a time.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import AsyncIterator, Iterable
from typing import Any, TypedDict
from xml.sax.saxutils import escape, quoteattr

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import Entity, Fact, record_key, to_json
from kgapp.graph.search.diff import csv_cell
from kgapp.graph.store import TenantStore
from kgapp.graph.time import Moment

PAGE = 1000
# Characters XML 1.0 does not allow in a document, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

NODE_KEYS = (("name", "string"), ("entity_type", "string"), ("summary", "string"))
EDGE_KEYS = (
    ("relation", "string"), ("fact", "string"), ("edge_type", "string"),
    ("confidence", "double"), ("valid_at", "string"), ("invalid_at", "string"),
    ("created_at", "string"), ("expired_at", "string"),
)  # fmt: skip
ENTITY_COLUMNS = ("entity_id", "name", "entity_type", "summary", "facts_here")
FACT_COLUMNS = (
    "fact_id", "source_id", "source", "relation", "target_id", "target", "fact",
    "edge_type", "confidence", "valid_at", "invalid_at", "created_at", "expired_at",
)  # fmt: skip


# A visible fact's id and ends (queries.MOMENT_FACT_ENDS); `in` is a Python keyword.
_FactEnds = TypedDict("_FactEnds", {"id": RecordID, "in": RecordID, "out": RecordID})


class _Visible:
    """The visible facts' ids in order, and how many of them each entity joins."""

    def __init__(self, rows: list[_FactEnds]) -> None:
        self.facts = [row["id"] for row in rows]
        self.degree: dict[str, int] = {}
        self.entities: list[RecordID] = []
        for row in rows:
            for end in (row["in"], row["out"]):
                key = record_key(end)
                if key not in self.degree:
                    self.entities.append(end)
                self.degree[key] = self.degree.get(key, 0) + 1


async def _visible(store: TenantStore, moment: Moment) -> _Visible:
    return _Visible(await store.query_one(queries.MOMENT_FACT_ENDS, moment.params()) or [])


async def _entity_pages(store: TenantStore, ids: list[RecordID]) -> AsyncIterator[list[Entity]]:
    """The entities of `ids` (queries.MOMENT_ENTITY_ROWS), a page at a time."""
    for first in range(0, len(ids), PAGE):
        page = {"ids": ids[first : first + PAGE]}
        yield await store.query_one(queries.MOMENT_ENTITY_ROWS, page) or []


async def _fact_pages(store: TenantStore, ids: list[RecordID]) -> AsyncIterator[list[Fact]]:
    """The facts of `ids` with their ends (queries.MOMENT_FACT_ROWS), a page at a time."""
    for first in range(0, len(ids), PAGE):
        page = {"ids": ids[first : first + PAGE]}
        yield await store.query_one(queries.MOMENT_FACT_ROWS, page) or []


def _text(value: Any) -> str:
    return "" if value is None else _NOT_XML.sub("\ufffd", str(to_json(value)))


def _data(key: str, value: Any) -> str:
    if value is None or value == "":
        return ""
    return f'<data key="{key}">{escape(_text(value))}</data>'


async def graphml(store: TenantStore, moment: Moment) -> AsyncIterator[str]:
    """The graph at `moment` as a GraphML document, in pieces."""
    visible = await _visible(store, moment)
    yield _graphml_head(moment)
    async for rows in _entity_pages(store, visible.entities):
        yield "".join(
            f"<node id={quoteattr(_text(record_key(row['id'])))}>"
            + "".join(_data(f"n_{key}", row.get(key)) for key, _ in NODE_KEYS)
            + "</node>\n"
            for row in rows
        )
    async for facts in _fact_pages(store, visible.facts):
        yield "".join(_edge(row) for row in facts)
    yield "</graph>\n</graphml>\n"


def _graphml_head(moment: Moment) -> str:
    keys = [
        f'<key id="n_{name}" for="node" attr.name="{name}" attr.type="{kind}"/>'
        for name, kind in NODE_KEYS
    ] + [
        f'<key id="e_{name}" for="edge" attr.name="{name}" attr.type="{kind}"/>'
        for name, kind in EDGE_KEYS
    ]
    when = f"as of {_text(moment.as_of)}, as known at {_text(moment.known_at)}"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
        + "\n".join(keys)
        + f'\n<graph id="G" edgedefault="directed"><desc>{escape(when)}</desc>\n'
    )


def _edge(row: Fact) -> str:
    ends = (
        f"id={quoteattr(_text(record_key(row['id'])))}"
        f" source={quoteattr(_text(record_key(row['source'])))}"
        f" target={quoteattr(_text(record_key(row['target'])))}"
    )
    data = "".join(_data(f"e_{key}", row.get(key)) for key, _ in EDGE_KEYS)
    return f"<edge {ends}>{data}</edge>\n"


def _csv(rows: Iterable[Iterable[Any]]) -> str:
    out = io.StringIO()
    csv.writer(out).writerows([csv_cell(value) for value in row] for row in rows)
    return out.getvalue()


async def entities_csv(store: TenantStore, moment: Moment) -> AsyncIterator[str]:
    """The entities the facts at `moment` join, one row each."""
    visible = await _visible(store, moment)
    yield _csv([ENTITY_COLUMNS])
    async for rows in _entity_pages(store, visible.entities):
        yield _csv(
            (row["id"], row.get("name"), row.get("entity_type"), row.get("summary"),
             visible.degree.get(record_key(row["id"]), 0))
            for row in rows
        )  # fmt: skip


async def facts_csv(store: TenantStore, moment: Moment) -> AsyncIterator[str]:
    """The facts at `moment`, one row each, with their ends' names."""
    visible = await _visible(store, moment)
    names: dict[str, str] = {}
    yield _csv([FACT_COLUMNS])
    async for rows in _entity_pages(store, visible.entities):
        names.update((record_key(row["id"]), row.get("name") or "") for row in rows)
    async for facts in _fact_pages(store, visible.facts):
        yield _csv(_fact_row(row, names) for row in facts)


def _fact_row(row: Fact, names: dict[str, str]) -> tuple[Any, ...]:
    source, target = record_key(row["source"]), record_key(row["target"])
    return (
        row["id"], source, names.get(source, ""), row["relation"], target,
        names.get(target, ""), row["fact"], row.get("edge_type"), row.get("confidence"),
        row["valid_at"], row.get("invalid_at"), row["created_at"], row.get("expired_at"),
    )  # fmt: skip
