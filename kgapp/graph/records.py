"""Record ids that come from outside, and records made fit for JSON.

A record id from a URL or a request body is parsed here, checked against the table
allowlist and a plain-key pattern, and then travels as a query parameter; it is never
spliced into SurrealQL.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import uuid
from typing import Any, TypeVar

from surrealdb.data.types.datetime import Datetime
from surrealdb.data.types.duration import Duration
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.errors import InvalidRecordId, NotFound

T = TypeVar("T")

_KEY = re.compile(r"^[A-Za-z0-9_]{1,64}$")


def parse_record_id(text: str, table: str | None = None) -> RecordID:
    """`"entity:abc"` (or `"abc"` when `table` is given) -> RecordID, or InvalidRecordId."""
    if not isinstance(text, str):
        raise InvalidRecordId("a record id is a string like 'entity:abc123'")
    name, sep, key = text.partition(":")
    if not sep:
        if table is None:
            raise InvalidRecordId(f"{text!r} is not a record id like 'entity:abc123'")
        name, key = table, text
    if name not in queries.GRAPH_TABLES or (table is not None and name != table):
        expected = f"a {table} id" if table else "a record id of a graph table"
        raise InvalidRecordId(f"{text!r} is not {expected}")
    if not _KEY.fullmatch(key):
        raise InvalidRecordId(f"{text!r} has a malformed key (letters, digits and _ only)")
    return RecordID(name, key)


def record_key(record: RecordID | str) -> str:
    """The plain 'table:key' text of a record id, as the API shows it."""
    if isinstance(record, RecordID):
        key = record.id.decode() if isinstance(record.id, bytes) else record.id
        return f"{record.table_name}:{key}"
    return str(record)


def to_json(value: Any) -> Any:
    """SDK values (record ids, datetimes, durations, decimals) as JSON-ready values."""
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_json(v) for v in value]
    if isinstance(value, RecordID):
        return record_key(value)
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, Datetime):
        return to_json(value.dt)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, Duration):
        return value.to_string()
    return value


def found(row: T | None, what: str, record: RecordID | str) -> T:
    """`row`, or NotFound("no {what} {record}") when the read found nothing."""
    if row is None or row == []:
        raise NotFound(f"no {what} {record_key(record)}")
    return row
