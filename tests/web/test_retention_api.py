"""The retention API: owners set, preview, run and download; nobody else can, and another
tenant's owner sees none of it. Real SurrealDB, tasks run in-process."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kgapp import tasks
from kgapp.graph.retention import archive_read
from tenants.models import Role, Tenant
from tenants.wiring import tenant_graph

pytestmark = pytest.mark.django_db(transaction=True)

DROP = {"mode": "drop", "facts_ended_days": 30, "episodes_days": 30}


def put(client, url: str, body: Any) -> Any:
    return client.put(url, data=json.dumps(body), content_type="application/json")


def post(client, url: str, body: Any) -> Any:
    return client.post(url, data=json.dumps(body), content_type="application/json")


def aged_tenant(tenant: Tenant, client) -> None:
    """Through the API: Alice moved from Acme to Beta (the Acme fact retired) and an
    episode; then the retirement and the episode are made 40 and 100 days old."""
    base = f"/api/v1/t/{tenant.slug}"
    alice = {"name": "Alice", "type": "Person"}
    for org, when in (("Acme", "2023-01-01T00:00:00Z"), ("Beta", "2024-01-01T00:00:00Z")):
        body = {
            "source": alice,
            "relation": "WORKS_AT",
            "target": {"name": org, "type": "Organization"},
            "valid_at": when,
        }
        assert post(client, f"{base}/facts", body).status_code == 201
    assert post(client, f"{base}/episodes", {"content": "Zed met Alice."}).status_code == 202
    assert post(client, f"{base}/episodes", {"content": "Alice is well."}).status_code == 202
    now = datetime.now(UTC)
    tenant_graph(tenant).query(
        "UPDATE relates_to SET expired_at = $ended WHERE expired_at != NONE;"
        "UPDATE episode SET created_at = $old WHERE content = 'Zed met Alice.';",
        {"ended": now - timedelta(days=40), "old": now - timedelta(days=100)},
    )


@pytest.fixture
def archives(settings, tmp_path: Path) -> Path:
    settings.RETENTION_ARCHIVE_DIR = tmp_path / "retention"
    return settings.RETENTION_ARCHIVE_DIR


def test_the_owner_previews_sets_runs_and_downloads(
    make_tenant, member, token_client, eager, archives
) -> None:
    tenant = make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    aged_tenant(tenant, token_client(member(tenant, Role.EDITOR)))
    base = f"/api/v1/t/{tenant.slug}/retention"
    got = owner.get(base)
    assert got.status_code == 200
    assert got.json() == {
        "policy": {"mode": "keep_all", "facts_ended_days": None, "episodes_days": None},
        "history": [],
    }
    before = tenant_graph(tenant).query("SELECT id FROM relates_to; SELECT id FROM episode;")

    # The saved policy keeps everything; a proposed one is previewed before switching on.
    assert owner.get(f"{base}/preview").json()["counts"]["facts"] == 0
    preview = owner.get(f"{base}/preview", DROP)
    assert preview.status_code == 200, preview.content
    # The old episode's fact (Zed met Alice) is current: it stays, without that episode.
    assert preview.json()["counts"] == {
        "facts": 1,
        "episodes": 1,
        "documents": 0,
        "entities": 0,
        "facts_unlinked": 1,
    }
    assert [e["excerpt"] for e in preview.json()["sample"]["episodes"]] == ["Zed met Alice."]
    retired = preview.json()["sample"]["facts"]
    assert [f["target_name"] for f in retired] == ["Acme"] and retired[0]["expired_at"]
    assert (
        tenant_graph(tenant).query("SELECT id FROM relates_to; SELECT id FROM episode;") == before
    )
    assert owner.post(f"{base}/run").status_code == 422  # nothing to apply yet

    saved = put(owner, base, DROP)
    assert saved.status_code == 200 and saved.json() == DROP
    run = owner.post(f"{base}/run")
    assert run.status_code == 202, run.content
    job = owner.get(f"/api/v1/t/{tenant.slug}/jobs/{run.json()['job_id']}").json()
    assert job["status"] == "completed", job
    assert job["counts"]["facts"] == 1 and job["result"]["archive"]

    # Nothing outside the policy went: current facts, the young episode, every entity.
    graph = tenant_graph(tenant)
    contents = graph.query("SELECT VALUE content FROM episode")[0]
    assert "Zed met Alice." not in contents and "Alice is well." in contents
    assert len(contents) == len(before[1]) - 1  # the fact posts' own episodes stay too
    kept = {str(r["id"]) for r in graph.query("SELECT id FROM relates_to")[0]}
    assert kept == {str(r["id"]) for r in before[0]} - {retired[0]["id"]}
    assert graph.query("SELECT VALUE episodes FROM relates_to WHERE fact CONTAINS 'Zed'")[0] == [[]]
    assert len(graph.query("SELECT id FROM entity")[0]) == 4  # Alice, Acme, Beta, Zed

    listed = owner.get(f"{base}/archives").json()
    assert [a["name"] for a in listed] == [job["result"]["archive"]]
    download = owner.get(f"{base}/archives/{listed[0]['name']}")
    assert download.status_code == 200 and download["Content-Type"] == "application/gzip"
    saved_file = archives / "download.jsonl.gz"
    saved_file.write_bytes(b"".join(download.streaming_content))
    manifest, rows = archive_read(saved_file)
    assert manifest["counts"]["fact"] == 1 and manifest["counts"]["episode"] == 1
    assert [r["row"]["content"] for r in rows if r["kind"] == "episode"] == ["Zed met Alice."]
    assert [r["row"]["id"] for r in rows if r["kind"] == "fact"] == [retired[0]["id"]]
    assert gzip.decompress(saved_file.read_bytes()).count(b"\n") == len(rows) + 2

    history = owner.get(base).json()["history"]
    assert [h["action"] for h in history] == ["retention_run", "retention_policy"]
    assert history[0]["after"]["archive"] == listed[0]["name"]
    assert history[0]["after"]["counts"]["episodes"] == 1
    assert history[1]["before"]["mode"] == "keep_all" and history[1]["after"] == DROP


@pytest.mark.parametrize("role", [Role.VIEWER, Role.EDITOR, Role.CURATOR])
def test_below_owner_cannot_set_preview_run_or_download(
    role, make_tenant, member, token_client, eager, archives
) -> None:
    tenant = make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    aged_tenant(tenant, owner)
    base = f"/api/v1/t/{tenant.slug}/retention"
    assert put(owner, base, DROP).status_code == 200
    assert owner.post(f"{base}/run").status_code == 202
    name = owner.get(f"{base}/archives").json()[0]["name"]
    other = token_client(member(tenant, role))
    assert other.get(base).status_code == 200  # members may read the policy
    for response in (
        put(other, base, {"mode": "keep_all"}),
        other.post(f"{base}/run"),
        other.get(f"{base}/preview", DROP),
        other.get(f"{base}/archives"),
        other.get(f"{base}/archives/{name}"),
    ):
        assert response.status_code == 403, response.content
        assert "owner" in response.json()["detail"]
    tenant.refresh_from_db()
    assert tenant.retention_mode == "drop"


def test_another_tenants_owner_sees_nothing(
    make_tenant, member, token_client, eager, archives
) -> None:
    tenant, stranger_tenant = make_tenant(), make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    aged_tenant(tenant, owner)
    base = f"/api/v1/t/{tenant.slug}/retention"
    assert put(owner, base, DROP).status_code == 200
    assert owner.post(f"{base}/run").status_code == 202
    name = owner.get(f"{base}/archives").json()[0]["name"]
    stranger = token_client(member(stranger_tenant, Role.OWNER))
    for response in (
        stranger.get(base),
        put(stranger, base, {"mode": "keep_all"}),
        stranger.get(f"{base}/preview"),
        stranger.post(f"{base}/run"),
        stranger.get(f"{base}/archives"),
        stranger.get(f"{base}/archives/{name}"),
    ):
        assert response.status_code == 404
    # Its own tenant's routes do not reach the other's archives either.
    own = f"/api/v1/t/{stranger_tenant.slug}/retention"
    assert stranger.get(f"{own}/archives").json() == []
    assert stranger.get(f"{own}/archives/{name}").status_code == 404
    tenant.refresh_from_db()
    assert tenant.retention_mode == "drop"


@pytest.mark.parametrize(
    "name",
    [
        "..",
        "../retention",
        "..%2F..%2Fkgapp.sqlite3",
        "retention-20240101T000000Z-deadbeef.jsonl.gz",
        "%2Fetc%2Fpasswd",
        "x.partial",
    ],
)
def test_archive_names_outside_the_list_are_404(
    name, make_tenant, member, token_client, archives
) -> None:
    tenant = make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    (archives / tenant.namespace).mkdir(parents=True)
    (archives / tenant.namespace / "x.partial").write_text("secret")
    (archives / "secret.jsonl.gz").write_text("secret")
    response = owner.get(f"/api/v1/t/{tenant.slug}/retention/archives/{name}")
    assert response.status_code == 404
    assert b"secret" not in b"".join(getattr(response, "streaming_content", [response.content]))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"mode": "drop"}, "needs facts_ended_days or episodes_days"),
        ({"mode": "drop", "episodes_days": 0}, "between 1 and 36500"),
        ({"mode": "drop", "facts_ended_days": 99999999}, "between 1 and 36500"),
        ({"mode": "purge"}, "mode"),
        ({"mode": "drop", "episodes_days": "soon"}, "episodes_days"),
    ],
)
def test_bad_policies_get_422_with_a_reason(
    body, message, make_tenant, member, token_client
) -> None:
    tenant = make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    base = f"/api/v1/t/{tenant.slug}/retention"
    response = put(owner, base, body)
    assert response.status_code == 422 and message in response.json()["detail"], response.content
    preview = owner.get(f"{base}/preview", body)
    assert preview.status_code == 422 and message in preview.json()["detail"], preview.content
    tenant.refresh_from_db()
    assert tenant.retention_mode == "keep_all"


def test_beat_runs_only_tenants_with_a_policy(
    make_tenant, member, token_client, eager, archives
) -> None:
    dropping, keeping = make_tenant(), make_tenant()
    for tenant in (dropping, keeping):
        aged_tenant(tenant, token_client(member(tenant, Role.OWNER)))
    owner = token_client(member(dropping, Role.OWNER))
    assert put(owner, f"/api/v1/t/{dropping.slug}/retention", DROP).status_code == 200
    assert tasks.apply_retention_policies() == [dropping.slug]
    runs = tenant_graph(dropping).query("SELECT * FROM audit WHERE action = 'retention_run'")[0]
    assert len(runs) == 1 and runs[0]["actor"] == "schedule"
    assert runs[0]["after"]["counts"]["facts"] == 1
    assert (
        tenant_graph(keeping).query("SELECT * FROM audit WHERE action = 'retention_run'")[0] == []
    )
    assert "Zed met Alice." in tenant_graph(keeping).query("SELECT VALUE content FROM episode")[0]
