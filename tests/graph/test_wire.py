"""Requests encoded by cbor2's C encoder (kgapp/graph/wire.py) are the SDK's own bytes,
for any value, and mean on the real server what the SDK's mean."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from surrealdb.data import cbor as sdk_cbor
from surrealdb.data.types.datetime import Datetime
from surrealdb.data.types.duration import Duration
from surrealdb.data.types.geometry import GeometryPoint
from surrealdb.data.types.range import BoundExcluded, BoundIncluded, Range
from surrealdb.data.types.record_id import RecordID
from surrealdb.data.types.table import Table
from surrealdb.request_message.descriptors import cbor_ws

from kgapp.graph import wire

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.binary(max_size=20),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.datetimes(timezones=st.just(UTC)),
    st.uuids(),
    st.builds(Table, st.text(min_size=1, max_size=8)),
    st.builds(Datetime, st.just("2024-02-29T23:59:59Z")),
    st.builds(Duration.parse, st.integers(0, 10**6), st.integers(0, 10**9 - 1)),
)
record_ids = st.builds(
    RecordID,
    st.text(min_size=1, max_size=8),
    st.one_of(st.text(max_size=8), st.integers(), st.lists(st.one_of(st.none(), st.integers()))),
)
bounds = st.one_of(st.builds(BoundIncluded, scalars), st.builds(BoundExcluded, scalars))
leaves = st.one_of(scalars, record_ids, st.builds(Range, bounds, bounds))
vectors = st.lists(st.floats(width=32, allow_nan=False), max_size=40)
values = st.recursive(
    st.one_of(leaves, vectors),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=8), inner, max_size=5),
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_any_request_encodes_to_the_sdks_own_bytes(value: Any) -> None:
    assert wire.encode(value) == sdk_cbor.encode(value)


def test_a_value_it_does_not_know_goes_to_the_sdks_encoder_whole() -> None:
    value = {"at": GeometryPoint(1.5, 2.5), "gone": None, "vector": [0.25, 1.0]}
    assert wire.encode(value) == sdk_cbor.encode(value)


def test_none_is_sent_as_none_not_null() -> None:
    # SurrealDB reads null as NULL, which an option<...> field refuses.
    assert wire.encode(None) == b"\xc6\xf6"
    assert wire.encode([1.0, None]) == sdk_cbor.encode([1.0, None])
    assert wire.encode({"nan": math.nan, "id": uuid.UUID(int=7), "d": Decimal("1.5")}) == (
        sdk_cbor.encode({"nan": math.nan, "id": uuid.UUID(int=7), "d": Decimal("1.5")})
    )


async def test_requests_mean_on_the_server_what_the_sdks_mean(raw_namespace: Any) -> None:
    assert cbor_ws.encode is wire.encode
    store = await raw_namespace()
    await store.query(
        "DEFINE TABLE thing SCHEMAFULL;"
        " DEFINE FIELD note ON thing TYPE option<string>;"
        " DEFINE FIELD at ON thing TYPE datetime;"
        " DEFINE FIELD vector ON thing TYPE array<float>;"
        " DEFINE FIELD link ON thing TYPE option<record<thing>>;"
    )
    at = datetime(2024, 2, 29, 23, 59, 59, 123456, tzinfo=UTC)
    vector = [0.5, -1.0, 3.25]
    await store.query(
        "CREATE $id CONTENT {note: $note, at: $at, vector: $vector, link: $link}",
        {"id": RecordID("thing", "one"), "note": None, "at": at, "vector": vector, "link": None},
    )
    await store.query(
        "CREATE $id CONTENT {note: 'x', at: $at, vector: [], link: $link}",
        {"id": RecordID("thing", ["two", 2]), "at": at, "link": RecordID("thing", "one")},
    )
    one = await store.query_one("SELECT * FROM ONLY thing:one")
    assert "note" not in one and "link" not in one  # NONE: absent, where NULL is refused
    assert one["at"] == at and one["vector"] == vector
    two = await store.query_one(
        "SELECT VALUE link FROM ONLY $id", {"id": RecordID("thing", ["two", 2])}
    )
    assert two == RecordID("thing", "one")
