"""GET graph/diff and graph/diff.csv: a supersession seen on both axes, the CSV download,
bad input answered with 422 and a message, and who may read it."""

from __future__ import annotations

import csv
import io
import json
import time
from datetime import UTC, datetime
from urllib.parse import urlencode

import pytest
from django.test import Client

from tenants.models import Role

pytestmark = pytest.mark.django_db(transaction=True)

ROSA = {"name": "Rosa Diaz", "type": "Person"}
HELIOS = "Rosa Diaz works at Helios Labs."
NOVA = "Rosa Diaz works at Nova Systems."
HOSTILE = "=cmd|' /C calc'!A0 Rosa Diaz knows Eve."


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def add_fact(client: Client, base: str, target: str, text: str, valid_at: str, relation="WORKS_AT"):
    body = {
        "source": ROSA,
        "relation": relation,
        "target": {"name": target, "type": "Organization"},
        "fact": text,
        "valid_at": valid_at,
    }
    response = client.post(f"{base}/facts", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content


@pytest.fixture
def rosa(make_tenant, member, token_client):
    """Rosa at Helios (2022), then at Nova (from May 2024, learned a second later);
    the system time between the two."""
    tenant = make_tenant()
    editor = token_client(member(tenant, Role.EDITOR))
    base = f"/api/v1/t/{tenant.slug}"
    add_fact(editor, base, "Helios Labs", HELIOS, "2022-01-10T00:00:00Z")
    time.sleep(0.05)
    between = datetime.now(UTC)
    time.sleep(0.05)
    add_fact(editor, base, "Nova Systems", NOVA, "2024-05-01T00:00:00Z")
    add_fact(editor, base, "Eve Ltd", HOSTILE, "2024-06-01T00:00:00Z", relation="KNOWS")
    return tenant, base, between


def get(client: Client, base: str, path: str = "/graph/diff", **params):
    return client.get(f"{base}{path}?{urlencode(params)}")


def test_the_valid_axis_shows_the_move(rosa, member, token_client) -> None:
    tenant, base, _ = rosa
    reader = token_client(member(tenant, Role.VIEWER))  # reading is enough
    response = get(reader, base, **{"from": "2023-01-01T00:00:00Z", "to": "2024-05-15T00:00:00Z"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["axis"] == "valid"
    assert (body["from"], body["to"]) == ("2023-01-01T00:00:00Z", "2024-05-15T00:00:00Z")
    assert [f["fact"] for f in body["ended"]] == [HELIOS]
    assert [(f["fact"], f["source_name"], f["target_name"]) for f in body["added"]] == [
        (NOVA, "Rosa Diaz", "Nova Systems")
    ]
    assert body["ended"][0]["invalid_at"] == "2024-05-01T00:00:00Z"
    assert body["totals"] == {"added": 1, "ended": 1, "changed": 0} and body["truncated"] is False
    # Backwards, the same facts the other way round.
    back = get(reader, base, **{"from": "2024-05-15T00:00:00Z", "to": "2023-01-01"}).json()
    assert [f["fact"] for f in back["added"]] == [HELIOS] and [
        f["fact"] for f in back["ended"]
    ] == [NOVA]


def test_the_known_axis_shows_the_revision_as_a_change(rosa, member, token_client) -> None:
    tenant, base, between = rosa
    reader = token_client(member(tenant, Role.VIEWER))
    body = get(
        reader, base, **{"from": iso(between), "to": iso(datetime.now(UTC)), "axis": "known"}
    ).json()
    assert sorted(f["fact"] for f in body["added"]) == sorted([NOVA, HOSTILE])
    assert body["ended"] == []
    [change] = body["changed"]
    assert change["fields"] == ["invalid_at"]
    assert change["before"]["fact"] == change["after"]["fact"] == HELIOS
    assert change["before"]["invalid_at"] is None
    assert change["after"]["invalid_at"] == "2024-05-01T00:00:00Z"
    assert change["after"]["revision_of"] == change["before"]["id"]
    limited = get(
        reader,
        base,
        **{"from": iso(between), "to": iso(datetime.now(UTC)), "axis": "known", "limit": 1},
    ).json()
    assert len(limited["added"]) == 1 and limited["totals"]["added"] == 2 and limited["truncated"]
    same = get(reader, base, **{"from": iso(between), "to": iso(between), "axis": "known"}).json()
    assert same["totals"] == {"added": 0, "ended": 0, "changed": 0}


def test_the_csv_download(rosa, member, token_client) -> None:
    tenant, base, between = rosa
    reader = token_client(member(tenant, Role.VIEWER))
    response = get(
        reader,
        base,
        "/graph/diff.csv",
        **{"from": iso(between), "to": iso(datetime.now(UTC)), "axis": "known"},
    )
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == f'attachment; filename="diff-{tenant.slug}-known.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert sorted(r["change"] for r in rows) == ["added", "added", "changed"]
    by_fact = {r["fact"]: r for r in rows}
    assert by_fact["'" + HOSTILE]["change"] == "added"  # a formula, neutralised
    assert by_fact[NOVA]["source"] == "Rosa Diaz" and by_fact[NOVA]["target"] == "Nova Systems"
    assert by_fact[HELIOS]["changed_fields"] == "invalid_at"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"to": "2024-01-01T00:00:00Z"}, "from: Field required"),
        ({"from": "2024-01-01T00:00:00Z"}, "to: Field required"),
        ({"from": "last tuesday", "to": "2024-01-01"}, "from: Input should be a valid datetime"),
        ({"from": "2024-13-01", "to": "2024-01-01"}, "from: Input should be a valid datetime"),
        (
            {"from": "2024-01-01", "to": "2024-01-01", "axis": "sideways"},
            "axis: Input should be 'valid' or 'known'",
        ),
        (
            {"from": "2024-01-01", "to": "2024-01-01", "limit": 0},
            "limit: Input should be greater than or equal to 1",
        ),
        (
            {"from": "2024-01-01T00:00:00.0000001Z", "to": "2024-01-01"},
            "from: moments are kept to the microsecond",
        ),
    ],
)
def test_bad_input_is_a_422_that_says_what_to_fix(
    rosa, member, token_client, params, message
) -> None:
    tenant, base, _ = rosa
    reader = token_client(member(tenant, Role.VIEWER))
    for path in ("/graph/diff", "/graph/diff.csv"):
        response = get(reader, base, path, **params)
        assert response.status_code == 422, response.content
        assert message in response.json()["detail"]


def test_only_members_read_the_diff(rosa, make_tenant, member, token_client) -> None:
    tenant, base, _ = rosa
    params = {"from": "2000-01-01T00:00:00Z", "to": "2099-01-01T00:00:00Z"}
    other = make_tenant()
    outsider = token_client(member(other, Role.OWNER))
    for path in ("/graph/diff", "/graph/diff.csv"):
        # A member of another tenant: no such tenant, as far as they can tell.
        refused = get(outsider, base, path, **params)
        assert refused.status_code == 404 and "Rosa" not in refused.content.decode()
        # Nobody: asked to log in.
        anonymous = get(Client(), base, path, **params)
        assert anonymous.status_code == 401 and "Rosa" not in anonymous.content.decode()
        # Their own tenant's diff holds none of this tenant's facts.
        own = get(outsider, f"/api/v1/t/{other.slug}", path, **params)
        assert own.status_code == 200 and "Rosa" not in own.content.decode()
