"""CBOR as the SurrealDB SDK speaks it, through cbor2's C codec.

The SDK encodes each request and decodes each response with a pure-Python CBOR codec; a
fact's vector of 384 floats is most of its bytes, and each float went through Python.
`encode` and `decode` give the SDK's own bytes and values (tests/graph/test_wire.py
checks it for any value), several times faster; store.py installs them in the SDK.
"""

from __future__ import annotations

from datetime import UTC
from decimal import Decimal
from typing import Any

import cbor2
from surrealdb.data import cbor as sdk_cbor
from surrealdb.data.types import constants
from surrealdb.data.types.datetime import Datetime
from surrealdb.data.types.duration import Duration
from surrealdb.data.types.range import BoundExcluded, BoundIncluded, Range
from surrealdb.data.types.record_id import RecordID
from surrealdb.data.types.table import Table

# SurrealDB reads CBOR null as NULL and tag 6 as NONE, what an absent value is; the SDK
# sends Python's None as NONE.
_NONE = cbor2.CBORTag(constants.TAG_NONE, None)
_NUMBERS = {float, int, bool}


def decode(data: bytes) -> Any:
    """A response, decoded by cbor2's C decoder with the SDK's own tag decoder."""
    return cbor2.loads(data, tag_hook=_tag)


def _tag(tag: cbor2.CBORTag, immutable: bool = False) -> Any:
    # The SDK's tag decoder reads the tag's number and value only, never the decoder.
    return sdk_cbor.tag_decoder(None, tag)  # type: ignore[arg-type]


def encode(obj: Any) -> bytes:
    """A request, encoded by cbor2's C encoder; a value of a type this does not know
    (a geometry) goes to the SDK's own encoder, whole."""
    try:
        return cbor2.dumps(_surreal(obj), default=_default, timezone=UTC)
    except _Unknown:
        return sdk_cbor.encode(obj)


class _Unknown(Exception):
    pass


def _surreal(value: Any) -> Any:
    """The value with what cbor2 would send otherwise than the SDK tagged as the SDK
    sends it: None as NONE (cbor2: null), a Decimal as a string (cbor2: a fraction)."""
    if value is None:
        return _NONE
    if isinstance(value, Decimal):
        return cbor2.CBORTag(constants.TAG_DECIMAL_STRING, str(value))
    if isinstance(value, dict):
        return {key: _surreal(item) for key, item in value.items()}
    if isinstance(value, list | tuple) and not set(map(type, value)) <= _NUMBERS:
        return [_surreal(item) for item in value]  # else a vector: nothing to change
    return value


def _default(encoder: cbor2.CBOREncoder, value: Any) -> None:
    encoder.encode(_tagged(value))


def _tagged(value: Any) -> cbor2.CBORTag:
    if isinstance(value, RecordID):
        return cbor2.CBORTag(constants.TAG_RECORD_ID, [value.table_name, _surreal(value.id)])
    if isinstance(value, Table):
        return cbor2.CBORTag(constants.TAG_TABLE_NAME, value.table_name)
    if isinstance(value, Datetime):
        return cbor2.CBORTag(constants.TAG_DATETIME, value.dt)
    if isinstance(value, Duration):
        return cbor2.CBORTag(constants.TAG_DURATION, value.get_seconds_and_nano())
    if isinstance(value, BoundIncluded):
        return cbor2.CBORTag(constants.TAG_BOUND_INCLUDED, _surreal(value.value))
    if isinstance(value, BoundExcluded):
        return cbor2.CBORTag(constants.TAG_BOUND_EXCLUDED, _surreal(value.value))
    if isinstance(value, Range):
        return cbor2.CBORTag(constants.TAG_RANGE, [_surreal(value.begin), _surreal(value.end)])
    raise _Unknown(type(value).__name__)
