"""Values at the edges: moments at the ends of the supported range (0001-01-01 to
9999-12-31 in UTC, to the microsecond) are stored and read back exactly, and moments
outside it are refused with 422; offsets past every row give an empty page, and offsets
past any row count a tenant can hold are refused, never a 500."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.test import Client

from kgapp.web.schemas import MAX_OFFSET
from tenants.models import Role

pytestmark = pytest.mark.django_db(transaction=True)

KEPT = [
    "0001-01-01T00:00:00Z",
    "0001-01-01T14:00:00.000001+14:00",  # 0001-01-01T00:00:00.000001Z
    "1677-09-21T00:12:43.145224Z",
    "1969-12-31T23:59:59.999999Z",
    "1970-01-01T00:00:00Z",
    "1960-05-01T10:00:00.5+02:00",
    "1900-02-28T23:30:00.25-05:30",
    "2262-04-11T23:47:16.854775Z",
    "2020-01-01T00:00:00.123456000Z",  # zeros past the microsecond lose nothing
    "9999-12-31T09:59:59.999999-14:00",
    "9999-12-31T23:59:59.999999Z",
]
REFUSED = {
    "0001-01-01T00:00:00+14:00": "falls outside",
    "9999-12-31T23:59:59-14:00": "falls outside",
    "2020-01-01T00:00:00.123456789Z": "microsecond",
    "10000-01-01T00:00:00Z": "",
    "2020-02-30T00:00:00Z": "",
}


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


@pytest.fixture
def editor(make_tenant, member, token_client):
    tenant = make_tenant()
    return f"/api/v1/t/{tenant.slug}", token_client(member(tenant, Role.EDITOR))


def post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_moments_at_the_edges_round_trip_exactly(editor) -> None:
    base, client = editor
    for index, text in enumerate(KEPT):
        added = post(
            client,
            f"{base}/facts",
            {
                "source": {"name": "Ada"},
                "relation": "MET",
                "target": {"name": f"Guest {index}"},
                "valid_at": text,
            },
        )
        assert added.status_code == 201, (text, added.content)
        fact = client.get(f"{base}/facts/{added.json()['id']}")
        assert fact.status_code == 200, (text, fact.content)
        assert instant(fact.json()["valid_at"]) == instant(text), text
        history = client.get(f"{base}/facts/{added.json()['id']}/history")
        assert history.status_code == 200, (text, history.content)
        graph = post(client, f"{base}/search", {"query": f"Guest {index}", "as_of": text})
        assert graph.status_code == 200, (text, graph.content)
        seen = client.get(f"{base}/graph", {"as_of": text})
        assert seen.status_code == 200, (text, seen.content)
        assert added.json()["id"] in {e["data"]["id"] for e in seen.json()["edges"]}, text


def test_moments_outside_the_range_are_refused_everywhere(editor) -> None:
    base, client = editor
    for text, reason in REFUSED.items():
        answers = [
            post(
                client,
                f"{base}/facts",
                {
                    "source": {"name": "A"},
                    "relation": "R",
                    "target": {"name": "B"},
                    "valid_at": text,
                },
            ),
            post(
                client,
                f"{base}/facts",
                {
                    "source": {"name": "A"},
                    "relation": "R",
                    "target": {"name": "B"},
                    "invalid_at": text,
                },
            ),
            post(client, f"{base}/episodes", {"content": "A met B.", "reference_time": text}),
            post(client, f"{base}/search", {"query": "A", "as_of": text}),
            post(client, f"{base}/search", {"query": "A", "known_at": text}),
            post(client, f"{base}/query", {"query": "Who met A?", "as_of": text}),
            client.get(f"{base}/graph", {"as_of": text}),
            client.get(f"{base}/graph", {"known_at": text}),
            client.get(f"{base}/communities", {"as_of": text}),
        ]
        for answer in answers:
            assert answer.status_code == 422, (text, answer.request, answer.content)
            assert reason in answer.content.decode(), (text, answer.content)
    assert client.get(f"{base}/").json()["counts"]["facts"] == 0


HUGE = ["99999999999999999999999999", str(2**63), str(2**64), str(MAX_OFFSET + 1)]


def test_offsets_past_the_end_give_empty_pages_and_huge_ones_are_refused(
    make_tenant, member, token_client
) -> None:
    tenant = make_tenant()
    base = f"/api/v1/t/{tenant.slug}"
    client = token_client(member(tenant, Role.EDITOR))
    post(
        client, f"{base}/facts", {"source": {"name": "A"}, "relation": "R", "target": {"name": "B"}}
    )
    post(client, f"{base}/episodes", {"content": "C met D."})  # a job, queued
    for listing in ("jobs", "episodes", "documents"):
        assert len(client.get(f"{base}/{listing}").json()) >= (listing != "documents")
        assert client.get(f"{base}/{listing}", {"offset": MAX_OFFSET}).json() == []
        for offset in HUGE + ["-1"]:
            answer = client.get(f"{base}/{listing}", {"offset": offset})
            assert answer.status_code == 422, (listing, offset, answer.content)
            assert "offset" in answer.content.decode()
    curator = Client()
    curator.force_login(member(tenant, Role.CURATOR))
    for offset in HUGE + ["-1", "x"]:
        page = curator.get(f"/admin/graph/{tenant.slug}/facts/", {"offset": offset})
        assert page.status_code == 200, (offset, page.content[:300])
    first = curator.get(f"/admin/graph/{tenant.slug}/facts/")
    assert b"A R B" in first.content
    assert (
        b"A R B"
        not in curator.get(f"/admin/graph/{tenant.slug}/facts/", {"offset": HUGE[0]}).content
    )


def test_admin_filters_with_moments_out_of_range_are_ignored(make_tenant, member) -> None:
    tenant = make_tenant()
    curator = Client()
    curator.force_login(member(tenant, Role.CURATOR))
    for text in REFUSED:
        for name in ("valid_from", "valid_to", "known_at"):
            page = curator.get(f"/admin/graph/{tenant.slug}/facts/", {name: text})
            assert page.status_code == 200, (name, text)
