"""SurrealDB values as JSON, and back, without losing their types.

JSON has no record ids, datetimes, bytes or uuids, so each travels as a one-key object
whose key starts with `$`. Vectors (embeddings) travel as little-endian float32 in
base64: a 384-float vector is 2 KB instead of about 8, and float32 is what the local
model makes, so nothing it computed is lost. An object of the data whose keys start
with `$` is wrapped in `{"$object": ...}` so it is never read as one of these.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import uuid
from typing import Any

import numpy as np
from surrealdb.data.types.datetime import Datetime
from surrealdb.data.types.duration import Duration
from surrealdb.data.types.record_id import RecordID

from kgapp.graph.errors import GraphError

_TAGS = ("$record", "$datetime", "$bytes", "$uuid", "$decimal", "$duration", "$f32", "$object")


class CodecError(GraphError):
    """A value in an export that is not what the format allows."""


def encode(value: Any, *, vector: bool = False) -> Any:
    """A value as the store reads it -> JSON-ready. `vector`: a list of floats (or of
    lists of floats) that is an embedding."""
    if vector and isinstance(value, list):
        if value and isinstance(value[0], list):
            return [encode(item, vector=True) for item in value]
        packed = np.asarray(value, dtype="<f4").tobytes()
        return {"$f32": base64.b64encode(packed).decode("ascii")}
    if isinstance(value, dict):
        plain = {str(key): encode(item) for key, item in value.items()}
        return {"$object": plain} if any(key.startswith("$") for key in plain) else plain
    if isinstance(value, list | tuple):
        return [encode(item) for item in value]
    return _encode_scalar(value)


def _encode_scalar(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, RecordID):
        return {"$record": [value.table_name, encode(value.id)]}
    if isinstance(value, Datetime):
        value = value.dt
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise CodecError("a datetime without a time zone cannot be exported")
        return {"$datetime": value.astimezone(dt.UTC).isoformat()}
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, uuid.UUID):
        return {"$uuid": str(value)}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, Duration):
        return {"$duration": value.to_string()}
    raise CodecError(f"cannot export a value of type {type(value).__name__}")


def decode(value: Any) -> Any:
    """The inverse of `encode`: JSON -> values the SDK writes with their types."""
    if isinstance(value, list):
        return [decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (key, inner), *_ = value.items()
        if key in _TAGS:
            return _decode_tag(key, inner)
    if any(key.startswith("$") for key in value):
        raise CodecError(f"unknown tagged value {sorted(value)[:3]}")
    return {key: decode(item) for key, item in value.items()}


def _decode_tag(tag: str, inner: Any) -> Any:
    try:
        if tag == "$object":
            if not isinstance(inner, dict):
                raise CodecError("$object holds an object")
            return {key: decode(item) for key, item in inner.items()}
        if tag == "$record":
            table, key = inner
            if not isinstance(table, str):
                raise CodecError("a record id's table is a string")
            return RecordID(table, decode(key))
        if tag == "$f32":
            raw = base64.b64decode(inner, validate=True)
            return np.frombuffer(raw, dtype="<f4").astype(float).tolist()
        return _decode_text(tag, inner)
    except (TypeError, ValueError, decimal.InvalidOperation) as error:
        raise CodecError(f"a malformed {tag} value: {error}") from None


def _decode_text(tag: str, inner: Any) -> Any:
    if not isinstance(inner, str):
        raise CodecError(f"{tag} holds a string")
    if tag == "$datetime":
        moment = dt.datetime.fromisoformat(inner)
        if moment.tzinfo is None:
            raise CodecError(f"the datetime {inner!r} has no time zone")
        return moment
    if tag == "$bytes":
        return base64.b64decode(inner, validate=True)
    if tag == "$uuid":
        return uuid.UUID(inner)
    if tag == "$decimal":
        return decimal.Decimal(inner)
    return Duration.parse(inner)
