"""Export and import through the API and manage.py (offline extractor, tasks run
in-process): a tenant exported and imported into another exports the same apart from its
name, with its retention policy, ontology and searchable facts; roles gate each door; a
file that is not an export, or was changed, fails with its reason and leaves the target
empty."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from typing import Any

import httpx
import networkx as nx
import pytest
from asgiref.sync import async_to_sync
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from kgapp.graph.export.jsonl import export_lines
from tenants import services
from tenants.models import Role, Tenant
from tenants.retention import retention_policy
from tenants.transfer import tenant_meta
from tenants.wiring import tenant_graph
from tests.chat_exports import CHAT_EXTENDED
from tests.web_server import server_env, serving

pytestmark = pytest.mark.django_db(transaction=True)

NOTES = (
    b"Ines Costa lives in Porto.\n\nHarbour Bank opened an office in Faro in 2021.\n\n"
    b"Rui Alves founded Tide Labs in Lisbon."
)
ONTOLOGY = {
    "entity_types": [
        {"name": "Person", "description": "a human being"},
        {"name": "Organization", "description": "a company or institution"},
        {"name": "Location", "description": "a place"},
    ],
    "relation_types": [{"name": "LIVES_IN", "description": "resides in", "single_valued": True}],
}


def body(data: bytes) -> list[bytes]:
    """The export without its header (name, date) and the checksum that covers it."""
    lines = data.splitlines(keepends=True)
    trailer = json.loads(lines[-1])
    trailer.pop("sha256")
    return [*lines[1:-1], json.dumps(trailer).encode()]


def streamed(response: Any) -> bytes:
    """A streamed download's bytes (the test client hands the async iterator over)."""
    assert response.status_code == 200, getattr(response, "content", b"")[:400]

    async def gather() -> bytes:
        return b"".join([chunk async for chunk in response.streaming_content])

    return async_to_sync(gather)()


@pytest.fixture
def filled(make_tenant, member, token_client, eager):
    """A tenant with a chat and a note ingested, its own ontology and a retention policy."""
    tenant = make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    base = f"/api/v1/t/{tenant.slug}"
    assert (
        owner.put(f"{base}/ontology", ONTOLOGY, content_type="application/json").status_code == 200
    )
    files = [
        SimpleUploadedFile("chat.json", json.dumps(CHAT_EXTENDED).encode()),
        SimpleUploadedFile("notes.txt", NOTES),
    ]
    assert owner.post(f"{base}/documents", {"files": files}).status_code == 202
    policy = {"mode": "drop", "facts_ended_days": 90, "episodes_days": None}
    assert (
        owner.put(f"{base}/retention", policy, content_type="application/json").status_code == 200
    )
    return tenant, owner, base


def import_into(client, base: str, data: bytes, name: str = "a.jsonl") -> Any:
    return client.post(f"{base}/import", {"file": SimpleUploadedFile(name, data)})


def job_of(client, base: str, answer: Any) -> dict[str, Any]:
    assert answer.status_code == 202, answer.content
    return client.get(f"{base}/jobs/{answer.json()['job_id']}").json()


def count(tenant: Tenant, table: str) -> int:
    return len(tenant_graph(tenant).query(f"SELECT VALUE id FROM {table}")[0])


def test_a_tenant_exported_and_imported_elsewhere_is_the_same(
    filled, make_tenant, member, token_client
) -> None:
    source, owner, base = filled
    first = streamed(owner.get(f"{base}/export?format=jsonl"))
    header = json.loads(first.splitlines()[0])
    assert header["tenant"] == {"slug": source.slug, "name": source.name}
    assert count(source, "relates_to") > 0 and count(source, "document") == 2

    target = make_tenant()
    other = token_client(member(target, Role.OWNER))
    target_base = f"/api/v1/t/{target.slug}"
    job = job_of(other, target_base, import_into(other, target_base, gzip.compress(first)))
    assert job["status"] == "completed", job
    assert job["counts"]["records"] == len(first.splitlines()) - 3

    second = streamed(other.get(f"{target_base}/export?format=jsonl"))
    assert body(second) == body(first)
    target.refresh_from_db()
    source.refresh_from_db()
    assert retention_policy(target) == retention_policy(source)
    assert retention_policy(target).facts_ended_days == 90
    ontology = other.get(f"{target_base}/ontology").json()
    assert [t["name"] for t in ontology["relation_types"]] == ["LIVES_IN"]
    # The search indexes, derived, follow the imported records: the same answers.
    question = {"query": "Ines Costa Harbour Bank Lisbon"}
    here = owner.post(f"{base}/search", question, content_type="application/json").json()
    there = other.post(f"{target_base}/search", question, content_type="application/json").json()
    assert here["facts"] and [f["id"] for f in there["facts"]] == [f["id"] for f in here["facts"]]


def test_an_import_is_refused_into_a_tenant_that_has_a_graph(filled) -> None:
    source, owner, base = filled
    data = streamed(owner.get(f"{base}/export?format=jsonl"))
    before = count(source, "relates_to")
    answer = import_into(owner, base, data)
    assert answer.status_code == 409 and "not empty" in answer.json()["detail"]
    assert count(source, "relates_to") == before


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda data: data[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n", "cut short"),
        (lambda data: data.replace(b"Porto", b"Paris", 1), "checksum"),
        (lambda data: data[:-40], "not JSON"),
    ],
)
def test_a_damaged_export_fails_its_job_and_the_tenant_stays_empty(
    filled, make_tenant, member, token_client, damage, reason
) -> None:
    _, owner, base = filled
    data = damage(streamed(owner.get(f"{base}/export?format=jsonl")))
    target = make_tenant()
    other = token_client(member(target, Role.OWNER))
    target_base = f"/api/v1/t/{target.slug}"
    job = job_of(other, target_base, import_into(other, target_base, data))
    assert job["status"] == "failed" and reason in job["error"], job
    for table in ("document", "episode", "entity", "relates_to", "audit", "ontology"):
        assert count(target, table) == 0, table


def test_a_file_that_is_not_an_export_is_refused_at_once(make_tenant, member, token_client) -> None:
    tenant = make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    answer = import_into(owner, f"/api/v1/t/{tenant.slug}", b"name,age\nada,36\n", "people.csv")
    assert answer.status_code == 422 and "not a tenant export" in answer.json()["detail"]
    answer = owner.post(f"/api/v1/t/{tenant.slug}/import", {})
    assert answer.status_code == 422


def test_roles_gate_each_export_and_the_import(filled, member, token_client) -> None:
    source, _, base = filled
    viewer = token_client(member(source, Role.VIEWER))
    curator = token_client(member(source, Role.CURATOR))
    assert viewer.get(f"{base}/export?format=jsonl").status_code == 403
    assert curator.get(f"{base}/export?format=jsonl").status_code == 403
    assert import_into(curator, base, b"{}").status_code == 403
    graph = nx.read_graphml(io.BytesIO(streamed(viewer.get(f"{base}/export?format=graphml"))))
    assert graph.number_of_edges() == count_current(source)
    facts = streamed(viewer.get(f"{base}/export?format=csv")).decode()
    assert facts.splitlines()[0].startswith("fact_id,") and len(facts.splitlines()) > 1
    entities = streamed(viewer.get(f"{base}/export?format=csv&part=entities")).decode()
    assert entities.splitlines()[0].startswith("entity_id,")
    answer = viewer.get(f"{base}/export?format=xml")
    assert answer.status_code == 422


def count_current(tenant: Tenant) -> int:
    rows = tenant_graph(tenant).query(
        "SELECT VALUE id FROM relates_to WHERE expired_at = NONE AND valid_at <= time::now()"
        " AND (invalid_at = NONE OR invalid_at > time::now())"
    )[0]
    return len(rows)


def test_manage_py_backs_up_and_restores_a_tenant(filled, tmp_path) -> None:
    source, owner, base = filled
    path = tmp_path / "backup.jsonl.gz"
    call_command("export_tenant", source.slug, str(path), stdout=io.StringIO())
    call_command("import_tenant", "restored", str(path), "--create", stdout=io.StringIO())
    restored = Tenant.objects.get(slug="restored")
    source.refresh_from_db()
    again = tenant_graph(restored).run(_lines, tenant_meta(restored))
    assert body(gzip.decompress(path.read_bytes())) == body(b"".join(again))
    assert retention_policy(restored) == retention_policy(source)


async def _lines(store, meta) -> list[bytes]:
    return [line async for line in export_lines(store, meta)]


# --- under the product's own server (ASGI, Daphne), as a client downloads --------------


@pytest.fixture(scope="module")
def url(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    var = tmp_path_factory.mktemp("export")
    with serving(server_env(var), var / "web.log") as served:
        yield served


@pytest.mark.slow
def test_the_served_export_streams_and_imports_over_http(url, filled, make_tenant, member) -> None:
    source, owner, base = filled
    secret = services.token_create(user=member(source, Role.VIEWER), name="t")[1]
    moment = "as_of=2024-03-03T00:00:00Z"
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}) as client:
        with client.stream("GET", f"{base}/export?format=graphml&{moment}") as answer:
            assert answer.status_code == 200
            assert "content-length" not in answer.headers  # streamed, not built whole
            assert answer.headers["content-disposition"].endswith('.graphml"')
            graph = nx.read_graphml(io.BytesIO(answer.read()))
        assert graph.number_of_edges() > 0
        refused = client.get(f"{base}/export?format=jsonl")
        assert refused.status_code == 403
    data = streamed(owner.get(f"{base}/export?format=jsonl"))
    target = make_tenant()
    secret = services.token_create(user=member(target, Role.OWNER), name="t")[1]
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}) as client:
        target_base = f"/api/v1/t/{target.slug}"
        answer = client.post(f"{target_base}/import", files={"file": ("a.jsonl", data)})
        assert answer.status_code == 202, answer.text
        job = client.get(f"{target_base}/jobs/{answer.json()['job_id']}").json()
        assert job["status"] == "completed", job
        again = client.get(f"{target_base}/export?format=jsonl")
        assert body(again.content) == body(data)
