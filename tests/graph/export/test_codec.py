"""The export's JSON encoding of SurrealDB values: any value the store reads comes back
from JSON as it was, types and all (hypothesis), and what is not a value is refused."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from surrealdb.data.types.record_id import RecordID

from kgapp.graph.export import codec

keys = st.text(min_size=0, max_size=8)  # "$record", "$", "" and the like included
moments = st.datetimes(
    min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31), timezones=st.just(dt.UTC)
)
record_ids = st.builds(
    RecordID,
    st.sampled_from(["entity", "relates_to", "episode"]),
    st.one_of(st.text(min_size=1, max_size=12), st.integers(-(2**63), 2**63 - 1)),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    moments,
    record_ids,
    st.binary(max_size=20),
    st.uuids(),
    st.decimals(allow_nan=False, allow_infinity=False, places=4),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_any_value_comes_back_from_json_as_it_was(value) -> None:
    text = json.dumps(codec.encode(value))
    assert codec.decode(json.loads(text)) == value


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), max_size=64))
def test_a_vector_of_float32_values_comes_back_exactly(vector) -> None:
    encoded = codec.encode(vector, vector=True)
    assert set(encoded) == {"$f32"}
    assert codec.decode(json.loads(json.dumps(encoded))) == vector


def test_a_vector_is_a_quarter_of_its_json_text() -> None:
    vector = np.random.default_rng(7).standard_normal(384).astype("<f4").tolist()
    packed = len(json.dumps(codec.encode(vector, vector=True)))
    assert packed < len(json.dumps(vector)) / 3


@pytest.mark.parametrize(
    "bad",
    [
        {"$record": "entity:x"},
        {"$datetime": "2024-01-01T00:00:00"},  # no time zone
        {"$datetime": 5},
        {"$bytes": "not base64!"},
        {"$f32": "AAA"},
        {"$uuid": "nope"},
        {"$decimal": "one"},
        {"$evil": 1},
        {"$object": [1]},
    ],
)
def test_a_malformed_tagged_value_is_refused(bad) -> None:
    with pytest.raises(codec.CodecError):
        codec.decode(bad)


def test_what_is_not_a_store_value_is_refused() -> None:
    with pytest.raises(codec.CodecError):
        codec.encode(object())
    with pytest.raises(codec.CodecError):
        codec.encode(dt.datetime(2024, 1, 1))  # naive
    assert codec.decode(codec.encode(decimal.Decimal("1.50"))) == decimal.Decimal("1.50")
    assert codec.decode(codec.encode(uuid.UUID(int=5))) == uuid.UUID(int=5)
