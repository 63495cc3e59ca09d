"""The ingestion API end to end (offline extractor, tasks run in-process), and its
refusals: every bad input gets a 4xx with a message and stores nothing."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tenants.models import Role
from tenants.wiring import tenant_graph

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def editor(make_tenant, member, token_client):
    tenant = make_tenant()
    return tenant, token_client(member(tenant, Role.EDITOR))


def post_json(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_provenance_of_an_entity_stays_in_its_tenant(
    make_tenant, member, token_client, eager
) -> None:
    bases = []
    for company in ("Acme Corp", "Zeta Labs"):
        tenant = make_tenant()
        client = token_client(member(tenant, Role.EDITOR))
        base = f"/api/v1/t/{tenant.slug}"
        post_json(client, f"{base}/episodes", {"content": f"Alice works at {company}."})
        bases.append((client, base))
    (client_a, base_a), (client_b, base_b) = bases
    alice_b = next(e["id"] for e in client_b.get(f"{base_b}/entities?q=alice").json())
    # Same key in both tenants (keys derive from names): through A it is A's Alice.
    through_a = client_a.get(f"{base_a}/entities/{alice_b}/episodes").json()
    assert [p["content"] for p in through_a] == ["Alice works at Acme Corp."]
    assert (
        client_a.get(
            f"/api/v1/t/{base_b.rsplit('/', 1)[1]}/entities/{alice_b}/episodes"
        ).status_code
        == 404
    )  # not a member: no such tenant


def test_episodes_become_facts_through_the_api(editor, eager) -> None:
    tenant, client = editor
    base = f"/api/v1/t/{tenant.slug}"
    first = post_json(
        client,
        f"{base}/episodes",
        {"content": "Alice works at Acme Corp.", "reference_time": "2024-01-15T00:00:00Z"},
    )
    assert first.status_code == 202, first.content
    body = first.json()
    assert body["episode_id"].startswith("episode:") and body["job_id"].startswith("job:")
    job = client.get(f"{base}/jobs/{body['job_id']}").json()
    assert job["status"] == "completed" and job["counts"]["episodes"] == 1
    post_json(
        client,
        f"{base}/episodes",
        {"content": "Alice joined Beta Inc last month.", "reference_time": "2024-03-10T00:00:00Z"},
    )
    listed = client.get(f"{base}/episodes").json()
    assert [e["content"] for e in listed] == [
        "Alice joined Beta Inc last month.",
        "Alice works at Acme Corp.",
    ]
    # Provenance: the passages that mention Alice, newest first; none of them elsewhere.
    alice = next(
        e["id"] for e in client.get(f"{base}/entities?q=alice").json() if e["name"] == "Alice"
    )
    passages = client.get(f"{base}/entities/{alice}/episodes").json()
    assert [p["content"] for p in passages] == [e["content"] for e in listed]
    assert client.get(f"{base}/entities/entity:nobody/episodes").status_code == 404
    detail = client.get(f"{base}/").json()
    assert detail["counts"]["entities"] == 3 and detail["counts"]["episodes"] == 2
    # An older passage: `limit` keeps the newest ones.
    post_json(
        client,
        f"{base}/episodes",
        {"content": "Alice met Carol.", "reference_time": "2023-06-01T00:00:00Z"},
    )
    newest = client.get(f"{base}/entities/{alice}/episodes?limit=2").json()
    assert [p["content"] for p in newest] == [e["content"] for e in listed]


def test_fact_triplet_supersedes_by_rule(editor) -> None:
    tenant, client = editor
    base = f"/api/v1/t/{tenant.slug}"
    acme = post_json(
        client,
        f"{base}/facts",
        {
            "source": {"name": "Bob", "type": "Person"},
            "relation": "works at",
            "target": {"name": "Acme Corp", "type": "Organization"},
            "valid_at": "2023-01-01T00:00:00Z",
        },
    )
    assert acme.status_code == 201, acme.content
    assert acme.json()["relation"] == "WORKS_AT" and acme.json()["invalid_at"] is None
    beta = post_json(
        client,
        f"{base}/facts",
        {
            "source": {"name": "bob", "type": "Person"},
            "relation": "EMPLOYED_BY",
            "target": {"name": "Beta Inc", "type": "Organization"},
            "valid_at": "2024-06-01T00:00:00Z",
        },
    )
    assert beta.status_code == 201
    assert beta.json()["relation"] == "WORKS_AT" and beta.json()["supersedes"]
    again = post_json(
        client,
        f"{base}/facts",
        {
            "source": {"name": "Bob"},
            "relation": "WORKS_AT",
            "target": {"name": "Beta Inc"},
            "valid_at": "2024-07-01T00:00:00Z",
        },
    )
    assert again.status_code == 200 and again.json()["id"] == beta.json()["id"]
    # The very same post again (names, relation, valid_at): the fact recorded, unchanged.
    repeat = post_json(
        client,
        f"{base}/facts",
        {
            "source": {"name": "Bob"},
            "relation": "WORKS_AT",
            "target": {"name": "Beta Inc"},
            "valid_at": "2024-07-01T00:00:00Z",
        },
    )
    assert repeat.status_code == 200, repeat.content
    assert repeat.json() == again.json()
    bad = post_json(
        client, f"{base}/facts", {"source": {"name": "X"}, "relation": "R", "target": {"name": "X"}}
    )
    assert bad.status_code == 422 and "two different entities" in bad.json()["detail"]


def test_documents_upload_list_and_delete(editor, eager) -> None:
    tenant, client = editor
    base = f"/api/v1/t/{tenant.slug}"
    text = b"# Staff\n\nCarol works at Initech. Dave works at Initech.\n"
    upload = client.post(f"{base}/documents", {"files": [SimpleUploadedFile("staff.md", text)]})
    assert upload.status_code == 202, upload.content
    (answer,) = upload.json()
    document_id = answer["document_id"]
    again = client.post(f"{base}/documents", {"files": [SimpleUploadedFile("copy.md", text)]})
    assert again.json()[0] == {
        "document_id": document_id,
        "job_id": answer["job_id"],
        "duplicate": True,
        "version": 1,
    }
    documents = client.get(f"{base}/documents?status=completed").json()
    assert [d["id"] for d in documents] == [document_id]
    assert documents[0]["chunk_count"] == 1
    # A fact also supported by another episode survives the document's deletion.
    post_json(client, f"{base}/episodes", {"content": "Carol works at Initech."})
    removed = client.delete(f"{base}/documents/{document_id}")
    assert removed.status_code == 200, removed.content
    assert removed.json()["episodes_deleted"] == 1 and removed.json()["facts_deleted"] == 1
    detail = client.get(f"{base}/").json()["counts"]
    assert detail["documents"] == 0 and detail["facts"] == 1 and detail["entities"] == 2
    degrees = tenant_graph(tenant).query("SELECT name, degree FROM entity ORDER BY name")[0]
    assert degrees == [{"name": "Carol", "degree": 1}, {"name": "Initech", "degree": 1}]
    assert client.get(f"{base}/documents/{document_id}").status_code == 404


def test_a_documents_reference_time_dates_its_facts(editor, eager) -> None:
    tenant, client = editor
    base = f"/api/v1/t/{tenant.slug}"
    text = b"Sam Okoro joined Kestrel Analytics last month. Sam Okoro lives in York.\n"
    upload = client.post(
        f"{base}/documents",
        {"files": [SimpleUploadedFile("erin.md", text)], "reference_time": "2022-05-10T12:00:00Z"},
    )
    assert upload.status_code == 202, upload.content
    document = client.get(f"{base}/documents/{upload.json()[0]['document_id']}").json()
    assert document["reference_time"] == "2022-05-10T12:00:00Z"
    starts = tenant_graph(tenant).query("SELECT VALUE <string> valid_at FROM relates_to")[0]
    # "last month" read against the document's date, and a fact with no date of its own.
    assert sorted(starts) == ["2022-04-01T00:00:00Z", "2022-05-10T12:00:00Z"]


def test_a_bad_reference_time_is_refused_saying_why(editor) -> None:
    tenant, client = editor
    base = f"/api/v1/t/{tenant.slug}"
    upload = client.post(
        f"{base}/documents",
        {"files": [SimpleUploadedFile("a.md", b"Erin lives in Oslo.")], "reference_time": "May"},
    )
    assert upload.status_code == 422
    assert "reference_time" in upload.json()["detail"]
    assert client.get(f"{base}/documents").json() == []


@pytest.mark.parametrize(
    "name, data, status, message",
    [
        ("notes.txt", b"\x00\x01\x02binary\x00" * 50, 422, "binary"),
        ("latin.txt", "caf\u00e9 na\u00efve".encode("latin-1"), 422, "UTF-8"),
        # Only the header is checked here; the worker reads the rest (test_hostile_uploads).
        ("broken.pdf", b"garbage that is not a pdf", 422, "PDF header"),
        ("image.exe", b"MZ....", 415, ".txt"),
    ],
)
def test_bad_files_are_refused_and_nothing_is_stored(editor, name, data, status, message) -> None:
    tenant, client = editor
    base = f"/api/v1/t/{tenant.slug}"
    good = SimpleUploadedFile("fine.txt", b"Erin works at Hooli.")
    response = client.post(f"{base}/documents", {"files": [good, SimpleUploadedFile(name, data)]})
    assert response.status_code == status, response.content
    assert name in response.json()["detail"] and message in response.json()["detail"]
    assert client.get(f"{base}/documents").json() == []


def test_oversized_file_is_413(editor, settings) -> None:
    tenant, client = editor
    settings.UPLOAD_MAX_BYTES = 1000
    response = client.post(
        f"/api/v1/t/{tenant.slug}/documents",
        {"files": [SimpleUploadedFile("big.txt", b"a" * 5000)]},
    )
    assert response.status_code == 413 and "big.txt" in response.json()["detail"]


def test_viewer_cannot_ingest_and_ontology_needs_curator(make_tenant, member, token_client) -> None:
    tenant = make_tenant()
    viewer = token_client(member(tenant, Role.VIEWER))
    base = f"/api/v1/t/{tenant.slug}"
    assert post_json(viewer, f"{base}/episodes", {"content": "x"}).status_code == 403
    assert (
        viewer.post(f"{base}/documents", {"files": [SimpleUploadedFile("a.txt", b"x")]}).status_code
        == 403
    )
    current = viewer.get(f"{base}/ontology").json()
    single = {r["name"] for r in current["relation_types"] if r["single_valued"]}
    assert {"WORKS_AT", "LIVES_IN", "CEO_OF"} <= single
    assert (
        viewer.put(
            f"{base}/ontology", data=json.dumps(current), content_type="application/json"
        ).status_code
        == 403
    )


def test_ontology_put_changes_supersession(make_tenant, member, token_client) -> None:
    tenant = make_tenant()
    curator = token_client(member(tenant, Role.CURATOR))
    base = f"/api/v1/t/{tenant.slug}"
    ontology = {
        "entity_types": [{"name": "Person"}, {"name": "Team"}],
        "relation_types": [
            {"name": "plays for", "single_valued": True, "aliases": ["MEMBER_OF_TEAM"]}
        ],
    }
    saved = curator.put(
        f"{base}/ontology", data=json.dumps(ontology), content_type="application/json"
    )
    assert saved.status_code == 200, saved.content
    assert saved.json()["relation_types"][0]["name"] == "PLAYS_FOR"
    post_json(
        curator,
        f"{base}/facts",
        {
            "source": {"name": "Zed", "type": "Person"},
            "relation": "PLAYS_FOR",
            "target": {"name": "Reds", "type": "Team"},
            "valid_at": "2020-01-01T00:00:00Z",
        },
    )
    blues = post_json(
        curator,
        f"{base}/facts",
        {
            "source": {"name": "Zed", "type": "Person"},
            "relation": "member of team",
            "target": {"name": "Blues", "type": "Team"},
            "valid_at": "2021-01-01T00:00:00Z",
        },
    )
    assert blues.json()["relation"] == "PLAYS_FOR" and blues.json()["supersedes"]
    duplicate = {"entity_types": [{"name": "A"}, {"name": "A"}], "relation_types": []}
    assert (
        curator.put(
            f"{base}/ontology", data=json.dumps(duplicate), content_type="application/json"
        ).status_code
        == 422
    )


def test_message_episodes_need_speakers(editor) -> None:
    tenant, client = editor
    response = post_json(
        client,
        f"/api/v1/t/{tenant.slug}/episodes",
        {"content": "no speaker on this line", "source": "message"},
    )
    assert response.status_code == 422 and "Line 1 has no speaker" in response.json()["detail"]


def test_an_ontology_that_would_not_load_is_refused_and_nothing_saved(
    make_tenant, member, token_client
) -> None:
    tenant = make_tenant()
    curator = token_client(member(tenant, Role.CURATOR))
    url = f"/api/v1/t/{tenant.slug}/ontology"
    before = curator.get(url).json()
    for bad, says in [
        ({"name": "0" * 79}, "R_000"),  # stored as R_ and 79 zeros: 81 characters
        ({"name": "works at", "aliases": ["a" * 81]}, "at most 80 characters"),
        ({"name": "works at", "aliases": ["9" * 80]}, "the limit is 80"),
    ]:
        put = curator.put(
            url,
            data=json.dumps({"entity_types": [{"name": "Person"}], "relation_types": [bad]}),
            content_type="application/json",
        )
        assert put.status_code == 422, put.content
        assert says in put.json()["detail"], put.json()
        assert curator.get(url).json() == before


def test_a_stored_ontology_that_no_longer_loads_gives_way_to_the_default(
    make_tenant, member, token_client, eager
) -> None:
    """Written before a rule it breaks (here: straight into the store), it never stops
    reads or ingestion: the default stands in, and the page and the job say so."""
    from kgapp.graph import queries

    tenant = make_tenant()
    curator = token_client(member(tenant, Role.CURATOR))
    base = f"/api/v1/t/{tenant.slug}"
    rows = [
        {
            "kind": "relation_type",
            "name": "0" * 79,
            "description": "",
            "single_valued": False,
            "aliases": [],
        }
    ]

    async def store_directly(store):
        await store.transaction(queries.ONTOLOGY_REPLACE, {"rows": rows})

    tenant_graph(tenant).run(store_directly)
    shown = curator.get(f"{base}/ontology")
    assert shown.status_code == 200, shown.content
    assert "WORKS_AT" in {r["name"] for r in shown.json()["relation_types"]}
    assert "could not be loaded" in shown.json()["notice"]
    queued = post_json(curator, f"{base}/episodes", {"content": "Alice works at Acme Corp."})
    job = curator.get(f"{base}/jobs/{queued.json()['job_id']}").json()
    assert job["status"] == "completed", job
    assert any("could not be loaded" in note for note in job["notes"]), job["notes"]
    assert curator.get(f"{base}/entities?q=alice").json()
    good = {"entity_types": [{"name": "Person"}], "relation_types": [{"name": "works at"}]}
    assert (
        curator.put(
            f"{base}/ontology", data=json.dumps(good), content_type="application/json"
        ).status_code
        == 200
    )
    assert curator.get(f"{base}/ontology").json()["notice"] is None
