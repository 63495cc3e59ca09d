"""Graph curation in the admin: who may enter, tenant isolation on every URL, the fact
history matching the API, and the review queue's merge and undo end to end."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from kgapp.graph.embeddings import local_embedder
from tenants.models import Role
from tenants.wiring import tenant_graph

pytestmark = pytest.mark.django_db(transaction=True)


def browser_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def add_fact(
    client: Client, slug: str, source: str, target: str, valid_at: str, relation="WORKS_AT"
):
    body = {
        "source": {"name": source, "type": "Person"},
        "relation": relation,
        "target": {"name": target, "type": "Organization"},
        "valid_at": valid_at,
    }
    response = client.post(
        f"/api/v1/t/{slug}/facts", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def curated(make_tenant, member, token_client):
    """Tenant A with Alice's two jobs, tenant B with another story; Carol curates A."""
    a, b = make_tenant(name="A"), make_tenant(name="B")
    api_a = token_client(member(a, Role.EDITOR))
    api_b = token_client(member(b, Role.EDITOR))
    add_fact(api_a, a.slug, "Alice", "Acme Corp", "2024-01-15T00:00:00Z")
    add_fact(api_a, a.slug, "Alice", "Beta Inc", "2024-02-01T00:00:00Z")
    secret = add_fact(api_b, b.slug, "Bob", "Secret Labs", "2024-01-01T00:00:00Z")
    carol = member(a, Role.CURATOR)
    return a, b, api_a, carol, secret


def test_only_curators_and_staff_enter(curated, member, make_user) -> None:
    a, _, _, carol, _ = curated
    assert browser_of(carol).get("/admin/").status_code == 200
    viewer = member(a, Role.VIEWER)
    assert browser_of(viewer).get("/admin/").status_code == 302  # to the admin login
    staff = make_user(staff=True)
    page = browser_of(staff).get("/admin/")
    assert page.status_code == 200 and b"Knowledge graph curation" in page.content


def test_a_curator_of_one_tenant_cannot_reach_another(curated, member) -> None:
    a, b, _, carol, secret = curated
    client = browser_of(carol)
    facts = client.get(f"/admin/graph/{a.slug}/facts/")
    assert facts.status_code == 200 and b"Alice" in facts.content and b"Secret" not in facts.content
    for url in (
        f"/admin/graph/{b.slug}/facts/",
        f"/admin/graph/{b.slug}/dedup/",
        f"/admin/graph/{b.slug}/audit/",
        f"/admin/graph/{b.slug}/facts/{secret['id']}/",
        f"/admin/graph/{b.slug}/entities/entity:x/",
    ):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/admin/graph/{b.slug}/dedup/act/", {"action": "reject"}).status_code == 404
    # B's fact id through A's pages: A has no such fact.
    assert client.get(f"/admin/graph/{a.slug}/facts/{secret['id']}/").status_code == 404
    # A viewer of A who curates elsewhere gets in, but not into A's curation.
    other = member(b, Role.CURATOR)
    from tenants import services

    services.membership_set(tenant=a, user=other, role=Role.VIEWER)
    assert browser_of(other).get(f"/admin/graph/{a.slug}/facts/").status_code == 403
    assert (
        browser_of(other)
        .post(f"/admin/graph/{a.slug}/dedup/act/", {"action": "merge_a"})
        .status_code
        == 403
    )


def test_fact_page_shows_the_same_chain_as_the_api(curated) -> None:
    a, _, api_a, carol, _ = curated
    alice = next(e["id"] for e in api_a.get(f"/api/v1/t/{a.slug}/entities?q=alice").json())
    current = api_a.get(f"/api/v1/t/{a.slug}/entities/{alice}/facts").json()[0]
    history = api_a.get(f"/api/v1/t/{a.slug}/facts/{current['id']}/history").json()
    page = browser_of(carol).get(f"/admin/graph/{a.slug}/facts/{current['id']}/")
    assert page.status_code == 200
    chain = re.search(rb'<ol id="chain">(.*?)</ol>', page.content, re.S).group(1).decode()
    assert re.findall(r"(relates_to:[a-z0-9]+) ·", chain) == [h["id"] for h in history]
    listed = browser_of(carol).get(f"/admin/graph/{a.slug}/facts/?state=expired")
    assert listed.status_code == 200 and b"Acme Corp" in listed.content


def test_review_queue_merge_and_undo(curated, token_client, member) -> None:
    a, _, api_a, carol, _ = curated
    add_fact(api_a, a.slug, "Alice Example", "Gamma LLC", "2024-03-01T00:00:00Z", relation="KNOWS")
    graph = tenant_graph(a)
    for name in ("Alice", "Alice Example"):
        vector = local_embedder().embed([name])[0]
        graph.query(
            "UPDATE entity SET name_embedding = $v WHERE name = $n", {"v": vector, "n": name}
        )
    client = browser_of(carol)
    assert client.post(f"/admin/graph/{a.slug}/dedup/generate/").status_code == 302
    queue = client.get(f"/admin/graph/{a.slug}/dedup/")
    ids = re.findall(rb'name="candidate" value="(dedup_candidate:[^"]+)"', queue.content)
    assert ids, queue.content[-2000:]
    pair = graph.query("SELECT a.name AS a, b.name AS b FROM ONLY $id", {"id": _rid(ids[0])})[0]
    keep = "merge_a" if pair["a"] == "Alice" else "merge_b"
    done = client.post(
        f"/admin/graph/{a.slug}/dedup/act/", {"action": keep, "candidate": [ids[0].decode()]}
    )
    assert done.status_code == 302
    merged = graph.query("SELECT VALUE name FROM entity WHERE merged_into != NONE")[0]
    assert merged == ["Alice Example"]
    log = client.get(f"/admin/graph/{a.slug}/audit/?action=merge")
    entry = re.search(rb"/audit/(audit:[^/]+)/undo/", log.content).group(1).decode()
    assert client.post(f"/admin/graph/{a.slug}/audit/{entry}/undo/").status_code == 302
    assert graph.query("SELECT VALUE name FROM entity WHERE merged_into != NONE")[0] == []
    # The curator's actions are in the log, undo included.
    actions = client.get(f"/admin/graph/{a.slug}/audit/").content
    assert b"undo" in actions and carol.username.encode() in actions


def test_automatic_merges_are_listed_and_undone(curated) -> None:
    a, _, api_a, carol, _ = curated
    add_fact(api_a, a.slug, "Dana", "Beta Inc.", "2024-03-01T00:00:00Z")  # same name as Beta Inc
    graph = tenant_graph(a)
    client = browser_of(carol)
    log = client.get(f"/admin/graph/{a.slug}/audit/?action=auto_merge")
    assert log.status_code == 200 and b"same_name" in log.content and b"resolution" in log.content
    assert b"Acme" not in log.content  # the filter keeps other entries out
    entry = re.search(rb"/audit/(audit:[^/]+)/undo/", log.content).group(1).decode()
    assert client.post(f"/admin/graph/{a.slug}/audit/{entry}/undo/").status_code == 302
    rows = graph.query(
        "SELECT VALUE out.name FROM relates_to WHERE in.name = 'Dana' AND expired_at = NONE"
    )[0]
    assert rows == ["Beta Inc."]
    assert b"undone" in client.get(f"/admin/graph/{a.slug}/audit/?action=auto_merge").content


def _rid(text: bytes):
    from kgapp.graph.records import parse_record_id

    return parse_record_id(text.decode(), "dedup_candidate")


def test_a_curator_corrects_and_invalidates_facts(curated, member) -> None:
    a, _, api_a, carol, _ = curated
    alice = next(e["id"] for e in api_a.get(f"/api/v1/t/{a.slug}/entities?q=alice").json())
    current = api_a.get(f"/api/v1/t/{a.slug}/entities/{alice}/facts").json()[0]
    client = browser_of(carol)
    url = f"/admin/graph/{a.slug}/facts/{current['id']}/act/"
    client.post(url, {"action": "correct", "text": "Alice leads Beta Inc.", "reason": "promoted"})
    now = api_a.get(f"/api/v1/t/{a.slug}/entities/{alice}/facts").json()
    assert [f["fact"] for f in now] == ["Alice leads Beta Inc."]
    history = api_a.get(f"/api/v1/t/{a.slug}/facts/{now[0]['id']}/history").json()
    assert current["id"] in [h["id"] for h in history]
    retry = client.post(url, {"action": "invalidate", "ended_at": "2024-06-01"}, follow=True)
    assert b"already retired" in retry.content
    client.post(
        f"/admin/graph/{a.slug}/facts/{now[0]['id']}/act/",
        {"action": "invalidate", "ended_at": "2024-06-01"},
    )
    assert api_a.get(f"/api/v1/t/{a.slug}/entities/{alice}/facts").json() == []
    # A viewer who curates nowhere is sent to the admin login, and nothing changes.
    viewer = member(a, Role.VIEWER)
    assert browser_of(viewer).post(url, {"action": "correct", "text": "x"}).status_code == 302
    assert api_a.get(f"/api/v1/t/{a.slug}/entities/{alice}/facts").json() == []
    log = client.get(f"/admin/graph/{a.slug}/audit/").content
    assert b"correct" in log and b"invalidate" in log and b"promoted" in log


def test_communities_rebuild_from_the_admin(curated) -> None:
    a, b, api_a, carol, _ = curated
    client = browser_of(carol)
    assert client.post(f"/admin/graph/{a.slug}/communities/rebuild/").status_code == 302
    kinds = [j["kind"] for j in api_a.get(f"/api/v1/t/{a.slug}/jobs").json()]
    assert "communities" in kinds
    assert client.post(f"/admin/graph/{b.slug}/communities/rebuild/").status_code == 404


def test_the_word_filter_finds_facts_with_every_word_in_this_tenant_only(curated) -> None:
    """The filter reads the search index (stems and case folded), keeps the other
    filters, and never shows another tenant's facts with the same words."""
    a, b, api_a, carol, _ = curated
    add_fact(api_a, a.slug, "Bob", "Secret Labs", "2024-03-01T00:00:00Z")
    client = browser_of(carol)

    def shown(**query) -> set[str]:
        page = client.get(f"/admin/graph/{a.slug}/facts/", query)
        assert page.status_code == 200
        return set(
            re.findall(
                r"(Alice|Bob) WORKS_AT (Acme Corp|Beta Inc|Secret Labs)", page.content.decode()
            )
        )

    assert shown(q="alice ACME") == {("Alice", "Acme Corp")}
    assert shown(q="working alice") == {("Alice", "Acme Corp"), ("Alice", "Beta Inc")}
    assert shown(q="secret") == {("Bob", "Secret Labs")}  # A's own Bob, not B's
    assert shown(q="alice secret") == set()
    assert shown(q="alice", relation="KNOWS") == set()
    assert shown(q="...") == shown()  # no words: no word filter
