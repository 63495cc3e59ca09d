"""Every moment the API takes, at the ends of the supported range and one microsecond
past them, on every route the OpenAPI schema lists: a route added later is covered
without anyone naming it here.

At either end (0001-01-01T00:00:00Z, 9999-12-31T23:59:59.999999Z, each as a date-time
and, for the first, as a bare date) a route answers what it answers for an ordinary
moment; one microsecond outside, 422 naming the field. Never a 5xx."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tenants.models import Role
from tests.security.openapi import (
    DATE,
    Leaf,
    Moment,
    Operation,
    api_schema,
    example,
    operations,
    with_value,
)

pytestmark = pytest.mark.django_db(transaction=True)

AT_THE_ENDS = ["0001-01-01T00:00:00Z", "0001-01-01", "9999-12-31T23:59:59.999999Z"]
PAST_THE_ENDS = ["0000-12-31T23:59:59.999999Z", "10000-01-01T00:00:00Z"]
MOMENT_OPERATIONS = [op for op in operations(api_schema()) if op.moments()]


def test_the_schema_lists_the_routes_that_take_moments() -> None:
    """The walk finds moments in query parameters and in bodies, nested ones too; if it
    found none, every case below would pass without trying anything."""
    found = {
        f"{op.key} {'.'.join(map(str, m.path))}" for op in MOMENT_OPERATIONS for m in op.moments()
    }
    assert "GET /api/v1/t/{tenant}/graph/diff from" in found
    assert "GET /api/v1/t/{tenant}/graph/diff.csv to" in found
    assert "POST /api/v1/t/{tenant}/facts valid_at" in found
    assert "POST /api/v1/t/{tenant}/search as_of" in found
    assert "POST /api/v1/t/{tenant}/documents reference_time" in found
    assert len(found) >= 15, sorted(found)


@pytest.mark.parametrize("op", MOMENT_OPERATIONS, ids=lambda op: op.key)
def test_moments_at_the_ends_answer_as_ordinary_ones_and_past_them_422(
    op: Operation, make_tenant, member, token_client
) -> None:
    tenant = make_tenant()
    client = token_client(member(tenant, Role.OWNER))
    for moment, choice in itertools.product(op.moments(), _choices(op)):
        ordinary = _send(client, op, tenant.slug, moment, DATE, choice)
        assert ordinary.status_code < 500, (op.key, moment, ordinary.content[:300])
        for value in AT_THE_ENDS:
            answer = _send(client, op, tenant.slug, moment, value, choice)
            assert answer.status_code == ordinary.status_code, (
                op.key,
                moment.path,
                choice,
                value,
                answer.status_code,
                answer.content[:300],
            )
        for value in PAST_THE_ENDS:
            answer = _send(client, op, tenant.slug, moment, value, choice)
            assert answer.status_code == 422, (op.key, moment.path, value, answer.content[:300])
            assert str(moment.path[-1]) in answer.json()["detail"], answer.json()


def _choices(op: Operation) -> list[dict[str, Any]]:
    """The defaults, then each value of each enum query parameter (a diff's two axes)."""
    return [{}] + [{p.name: value} for p in op.query_params() for value in p.schema.get("enum", ())]


_NUMBERS = itertools.count(1)


def _distinct(body: Any, numbers: Iterator[int]) -> Any:
    """The minimal body with each plain text value told apart ("x" -> "x1", "x2"), so that
    a fact's two ends are two entities, and no request repeats an earlier one."""
    if isinstance(body, dict):
        return {key: _distinct(value, numbers) for key, value in body.items()}
    if isinstance(body, list):
        return [_distinct(value, numbers) for value in body]
    return f"{body}{next(numbers)}" if body == "x" else body


def _send(
    client: Client, op: Operation, slug: str, moment: Moment, value: str, choice: dict[str, Any]
) -> Any:
    path_values = {
        p.name: slug if p.name == "tenant" else example(op.components, p.schema)
        for p in op.path_params()
    }
    url = op.url(path_values)
    query = {**op.required_query(), **choice}
    body = _distinct(op.base_body(), _NUMBERS)
    if moment.where == "query":
        query[moment.path[0]] = value
    elif moment.where == "json":
        body = with_value(op, body, Leaf(moment.path, {}), value)
    if op.method == "GET":
        return client.get(url, query)
    if query:
        url += "?" + urlencode(query)
    if moment.where == "multipart":  # an upload: a file of its own, so none is a re-upload
        upload = SimpleUploadedFile(f"{uuid.uuid4().hex}.txt", f"Ada met Grace ({value}).".encode())
        return client.post(url, {moment.path[0]: value, "files": [upload]})
    data = json.dumps(body) if body is not None else None
    return client.generic(op.method, url, data=data or "", content_type="application/json")
