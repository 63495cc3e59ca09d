"""Communities through the API: rebuild (editor), list, detail, the search scope, and
tenant isolation on each."""

from __future__ import annotations

import json

import pytest

from tenants.models import Role

pytestmark = pytest.mark.django_db(transaction=True)


def post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def story(client, slug, people, company):
    for person in people:
        body = {
            "source": {"name": person, "type": "Person"},
            "relation": "WORKS_AT",
            "target": {"name": company, "type": "Organization"},
            "valid_at": "2024-01-01T00:00:00Z",
        }
        assert post(client, f"/api/v1/t/{slug}/facts", body).status_code == 201


def test_communities_are_built_listed_searched_and_kept_apart(
    make_tenant, member, token_client, eager
) -> None:
    a, b = make_tenant(), make_tenant()
    editor_a, editor_b = token_client(member(a, Role.EDITOR)), token_client(member(b, Role.EDITOR))
    story(editor_a, a.slug, ["Alice", "Arno", "Ada"], "Acme Corp")
    story(editor_a, a.slug, ["Zoe", "Zack"], "Zenith Labs")
    story(editor_b, b.slug, ["Bob", "Bea"], "Beta Inc")
    queued = post(editor_a, f"/api/v1/t/{a.slug}/communities/rebuild", {})
    assert queued.status_code == 202
    job = editor_a.get(f"/api/v1/t/{a.slug}/jobs/{queued.json()['job_id']}").json()
    assert job["status"] == "completed" and job["counts"]["communities"] == 2
    listed = editor_a.get(f"/api/v1/t/{a.slug}/communities").json()
    assert [c["member_count"] for c in listed] == [4, 3]
    detail = editor_a.get(f"/api/v1/t/{a.slug}/communities/{listed[0]['id']}").json()
    assert {m["name"] for m in detail["members"]} == {"Alice", "Arno", "Ada", "Acme Corp"}
    found = post(
        editor_a, f"/api/v1/t/{a.slug}/search", {"query": "Acme", "scopes": ["communities"]}
    ).json()
    assert [c["id"] for c in found["communities"]] == [listed[0]["id"]]
    # The explorer's graph carries each entity's community (for colouring).
    nodes = editor_a.get(f"/api/v1/t/{a.slug}/graph").json()["nodes"]
    by_name = {n["data"]["label"]: n["data"]["community"] for n in nodes}
    assert by_name["Alice"] == by_name["Acme Corp"] == listed[0]["id"] != by_name["Zoe"]
    # Tenant B has none, and cannot see A's.
    assert editor_b.get(f"/api/v1/t/{b.slug}/communities").json() == []
    assert editor_b.get(f"/api/v1/t/{b.slug}/communities/{listed[0]['id']}").status_code == 404
    assert editor_b.get(f"/api/v1/t/{a.slug}/communities").status_code == 404
    assert (
        post(
            editor_b, f"/api/v1/t/{b.slug}/search", {"query": "Acme", "scopes": ["communities"]}
        ).json()["communities"]
        == []
    )
    viewer = token_client(member(a, Role.VIEWER))
    assert post(viewer, f"/api/v1/t/{a.slug}/communities/rebuild", {}).status_code == 403


def test_communities_are_detected_every_n_episodes(
    make_tenant, member, token_client, eager, settings
) -> None:
    # A stream that never pauses still detects (eager mode: no debounced follow-up, see
    # tests/web/test_communities_follow_ingestion.py for that).
    settings.COMMUNITY_EVERY_EPISODES = 2
    tenant = make_tenant()
    client = token_client(member(tenant, Role.EDITOR))
    base = f"/api/v1/t/{tenant.slug}"
    post(client, f"{base}/episodes", {"content": "Alice works at Acme Corp."})
    assert client.get(f"{base}/communities").json() == []  # one episode: not yet
    post(client, f"{base}/episodes", {"content": "Bob works at Acme Corp."})
    built = client.get(f"{base}/communities").json()
    assert [c["member_count"] for c in built] == [3]
    jobs = client.get(f"{base}/jobs").json()
    assert [j["created_by"] for j in jobs if j["kind"] == "communities"] == ["ingestion"]
    # Episodes that change no community: the count restarts at each rebuild asked for,
    # so two of them ask for one more, and a third for none.
    for text in ("nothing to report today.", "all quiet here.", "no news yet."):
        post(client, f"{base}/episodes", {"content": text})
    jobs = client.get(f"{base}/jobs").json()
    assert [j["created_by"] for j in jobs if j["kind"] == "communities"] == ["ingestion"] * 2
