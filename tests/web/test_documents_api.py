"""What the document manager reads and does through the API: each listed document's
episodes and current facts, a delete preview that changes nothing and foretells the
deletion, a new version refused while the document is still being ingested, and
viewers refused (offline extractor, tasks run in-process)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from kgapp.graph.records import parse_record_id
from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.chat_exports import CHAT, CHAT_EXTENDED

pytestmark = pytest.mark.django_db(transaction=True)

NOTES = b"Ines Costa lives in Porto.\n\nHarbour Bank opened an office in Faro.\n"


@pytest.fixture
def editor(make_tenant, member, token_client):
    tenant = make_tenant()
    return tenant, token_client(member(tenant, Role.EDITOR)), f"/api/v1/t/{tenant.slug}"


def upload(client, base: str, name: str, data: bytes) -> dict[str, Any]:
    answer = client.post(f"{base}/documents", {"files": [SimpleUploadedFile(name, data)]})
    assert answer.status_code == 202, answer.content
    return answer.json()[0]


def chat(messages: list[dict[str, str]]) -> bytes:
    return json.dumps(messages).encode()


def listed(client, base: str) -> dict[str, dict[str, Any]]:
    return {d["file_name"]: d for d in client.get(f"{base}/documents").json()}


def held_and_supported(tenant) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Read straight from the graph, counted here: each document's episodes, and the
    current facts (not expired) each document's episodes support."""
    graph = tenant_graph(tenant)
    episodes = graph.query(
        "SELECT VALUE {id: <string> id, documents: documents.map(|$d| <string> $d)} FROM episode"
    )[0]
    facts = graph.query(
        "SELECT VALUE {id: <string> id, episodes: episodes.map(|$e| <string> $e)}"
        " FROM relates_to WHERE expired_at = NONE"
    )[0]
    held: dict[str, set[str]] = {}
    for episode in episodes:
        for document in episode["documents"]:
            held.setdefault(document, set()).add(episode["id"])
    supported = {
        document: {f["id"] for f in facts if ids & set(f["episodes"])}
        for document, ids in held.items()
    }
    return held, supported


def test_the_list_counts_the_episodes_each_document_holds_and_the_facts_they_support(
    editor, eager, make_tenant, member, token_client
) -> None:
    tenant, client, base = editor
    upload(client, base, "chat.json", chat(CHAT))
    upload(client, base, "chat-export-2.json", chat(CHAT_EXTENDED))
    upload(client, base, "notes.txt", NOTES)
    documents = listed(client, base)
    held, supported = held_and_supported(tenant)
    for document in documents.values():
        assert document["episode_count"] == len(held[document["id"]]), document["file_name"]
        assert document["fact_count"] == len(supported[document["id"]]), document["file_name"]
    # The extended export shares the first export's episode and adds one of its own.
    first, second = documents["chat.json"], documents["chat-export-2.json"]
    assert (first["episode_count"], second["episode_count"]) == (1, 2)
    assert second["fact_count"] > first["fact_count"] > 0

    # A fact that is no longer current (superseded) is not counted.
    (fact,) = [f for f in supported[first["id"]] if f in supported[second["id"]]][:1]
    tenant_graph(tenant).query(
        "UPDATE $id SET expired_at = time::now()", {"id": parse_record_id(fact, "relates_to")}
    )
    after = listed(client, base)
    assert after["chat.json"]["fact_count"] == first["fact_count"] - 1
    assert after["chat-export-2.json"]["fact_count"] == second["fact_count"] - 1
    assert after["notes.txt"]["fact_count"] == documents["notes.txt"]["fact_count"]

    # Paging and the status filter still apply; the detail has no counts; another tenant
    # lists none of these.
    assert [d["file_name"] for d in client.get(f"{base}/documents?limit=1").json()] == ["notes.txt"]
    assert [d["file_name"] for d in client.get(f"{base}/documents?limit=1&offset=2").json()] == [
        "chat.json"
    ]
    assert client.get(f"{base}/documents?status=failed").json() == []
    assert "fact_count" not in client.get(f"{base}/documents/{first['id']}").json()
    other = make_tenant()
    outsider = token_client(member(other, Role.EDITOR))
    assert outsider.get(f"/api/v1/t/{other.slug}/documents").json() == []


def found(client, base: str, name: str) -> bool:
    """Whether the entity search finds an entity of exactly that name."""
    return name in {e["name"] for e in client.get(f"{base}/entities", {"q": name}).json()}


GRAPH = """
SELECT id, name, summary FROM entity ORDER BY id;
SELECT id, name, entity FROM alias ORDER BY id;
SELECT id, in, out, fact, episodes, valid_at, invalid_at, expired_at FROM relates_to ORDER BY id;
SELECT id, documents FROM episode ORDER BY id;
SELECT id, in, out FROM mentions ORDER BY id;
SELECT id, status, version, versions FROM document ORDER BY id;
"""


def graph_state(client, base: str, tenant) -> dict[str, Any]:
    return {
        "counts": client.get(f"{base}/").json()["counts"],
        "documents": client.get(f"{base}/documents").json(),
        "records": tenant_graph(tenant).query(GRAPH),
    }


def test_a_delete_preview_changes_nothing_and_foretells_the_deletion(editor, eager) -> None:
    tenant, client, base = editor
    upload(client, base, "chat.json", chat(CHAT))
    extended = upload(client, base, "chat-export-2.json", chat(CHAT_EXTENDED))["document_id"]
    before = graph_state(client, base, tenant)
    assert before["counts"]["entities"] > 0 and before["counts"]["facts"] > 0
    assert found(client, base, "Biscuit") and found(client, base, "Nadia")

    preview = client.delete(f"{base}/documents/{extended}?dry_run=true")
    assert preview.status_code == 200, preview.content
    foretold = preview.json()
    assert graph_state(client, base, tenant) == before
    # Only the new message goes: its kitten; the people and places of the first export stay.
    assert foretold["episodes_deleted"] == 1 and foretold["episodes_kept"] == 1
    assert "Biscuit" in foretold["entity_names_deleted"]
    assert "Omar" in foretold["entity_names_kept"]
    assert foretold["entities_deleted"] == len(foretold["entity_names_deleted"])

    removed = client.delete(f"{base}/documents/{extended}")
    assert removed.status_code == 200, removed.content
    for count in ("episodes_deleted", "facts_deleted", "facts_restored", "entities_deleted"):
        assert removed.json()[count] == foretold[count], count
    after = client.get(f"{base}/").json()["counts"]
    assert after["entities"] == before["counts"]["entities"] - foretold["entities_deleted"]
    assert after["facts"] == before["counts"]["facts"] - foretold["facts_deleted"]
    assert not found(client, base, "Biscuit")
    assert all(found(client, base, name) for name in foretold["entity_names_kept"])


def test_a_new_version_is_refused_while_the_document_is_still_being_ingested(editor, eager) -> None:
    tenant, client, base = editor
    document = upload(client, base, "notes.txt", NOTES)["document_id"]
    graph = tenant_graph(tenant)
    record = parse_record_id(document, "document")
    graph.query("UPDATE $id SET status = 'extracting'", {"id": record})  # its job is running
    edited = NOTES.replace(b"Faro", b"Braga")
    url = f"{base}/documents/{document}/versions"

    busy = client.post(url, {"files": [SimpleUploadedFile("notes.txt", edited)]})
    assert busy.status_code == 409
    assert "still being ingested" in busy.json()["detail"]
    unchanged = client.get(f"{base}/documents/{document}").json()
    assert unchanged["version"] == 1 and len(unchanged["versions"]) == 1

    graph.query("UPDATE $id SET status = 'completed'", {"id": record})
    replaced = client.post(url, {"files": [SimpleUploadedFile("notes.txt", edited)]})
    assert replaced.status_code == 202, replaced.content
    assert replaced.json()["version"] == 2
    versions = listed(client, base)["notes.txt"]["versions"]
    assert [v["version"] for v in versions] == [1, 2]
    assert versions[1]["content_hash"] != versions[0]["content_hash"]


def test_viewers_can_list_documents_but_not_delete_or_replace_them(
    editor, eager, member, token_client
) -> None:
    tenant, client, base = editor
    document = upload(client, base, "notes.txt", NOTES)["document_id"]
    viewer = token_client(member(tenant, Role.VIEWER))
    assert [d["id"] for d in viewer.get(f"{base}/documents").json()] == [document]
    for url in (f"{base}/documents/{document}?dry_run=true", f"{base}/documents/{document}"):
        assert viewer.delete(url).status_code == 403, url
    replaced = viewer.post(
        f"{base}/documents/{document}/versions",
        {"files": [SimpleUploadedFile("notes.txt", NOTES + b"More.\n")]},
    )
    assert replaced.status_code == 403
    (kept,) = client.get(f"{base}/documents").json()
    assert kept["id"] == document and kept["version"] == 1
