"""Two tenants for attacks: A (the attacker's) and B (the target), holding colliding
entity names and record ids, and B-only marker strings in every kind of B record.

A B-only marker (`Side.marker`) is written only into B's data and never sent by an
attacker, so finding it in any answer to A is a leak, whatever the status code."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import models
from django.test import Client

from kgapp.graph.records import to_json
from tenants import services
from tenants.models import ApiToken, Role, Tenant
from tenants.wiring import graph_runtime, tenant_graph


@dataclass
class Side:
    tenant: Tenant
    owner: Any  # an owner of this tenant only; A's is the attacker
    curator: Any  # a curator (not staff): the admin's curation pages
    client: Client  # the owner's bearer token
    secret: str
    token: ApiToken
    marker: str  # "" for A
    ids: dict[str, list[str]] = field(default_factory=dict)  # table -> record ids

    @property
    def slug(self) -> str:
        return self.tenant.slug

    @property
    def base(self) -> str:
        return f"/api/v1/t/{self.tenant.slug}"

    def session(self, user: Any = None) -> Client:
        client = Client()
        client.force_login(user or self.owner)
        return client


def post_json(client: Client, url: str, body: Any) -> Any:
    return client.post(url, data=json.dumps(body), content_type="application/json")


def _fact(source: str, target: str, valid_at: str, text: str | None = None) -> dict[str, Any]:
    body = {
        "source": {"name": source, "type": "Person"},
        "relation": "WORKS_AT",
        "target": {"name": target, "type": "Organization"},
        "valid_at": valid_at,
    }
    return {**body, "fact": text} if text else body


def seed(side: Side, writer: Client) -> None:
    """The same story in both tenants (same names, so the same entity and episode ids),
    and in B, marked records of every kind: entity, fact, episode, document, job,
    community, ontology type, token, audit entry, asked question."""
    mark = side.marker
    base = side.base
    tail = f" ({mark})" if mark else ""
    for body in (
        _fact("Alice", "Acme Corp", "2024-01-15T00:00:00Z", f"Alice works at Acme Corp{tail}."),
        _fact("Alice", "Beta Inc", "2024-02-01T00:00:00Z", f"Alice moved to Beta Inc{tail}."),
        _fact("Frank", "Acme Corporation", "2024-01-20T00:00:00Z"),  # an automatic merge
    ):
        assert post_json(writer, f"{base}/facts", body).status_code == 201
    if mark:
        secret_fact = _fact(f"Quill {mark}", f"Vault {mark}", "2023-05-01T00:00:00Z")
        assert post_json(writer, f"{base}/facts", secret_fact).status_code == 201
        # A question in B's history (GET questions), asked through POST ask.
        from tests.security.attempts import streamed  # (attempts imports this module)

        asked = post_json(writer, f"{base}/ask", {"query": f"Where does Quill {mark} work?"})
        assert asked.status_code == 200 and b'"type":"sources"' in streamed(asked)
    shared = {"content": "Alice met Bob at Acme Corp.", "reference_time": "2024-01-10T00:00:00Z"}
    assert post_json(writer, f"{base}/episodes", shared).status_code == 202
    if mark:
        own = {"content": f"Carol {mark} joined Acme Corp.", "saga": f"saga {mark}"}
        assert post_json(writer, f"{base}/episodes", own).status_code == 202
    text = f"# Notes\n\nDave{tail} works at Initech.\n".encode()
    upload = SimpleUploadedFile(f"{mark or 'notes'}.md", text)
    assert writer.post(f"{base}/documents", {"files": [upload]}).status_code == 202
    assert writer.post(f"{base}/jobs/health-check").status_code == 202
    assert post_json(writer, f"{base}/communities/rebuild", {}).status_code == 202
    if mark:
        ontology = side.client.get(f"{base}/ontology").json()
        ontology["entity_types"].append({"name": "Vault", "description": f"vaults {mark}"})
        assert put_json(side.client, f"{base}/ontology", ontology).status_code == 200
    if mark:
        archive_of(side)
    side.ids = record_ids(side.tenant)


def archive_of(side: Side) -> None:
    """A retention archive of B's, holding B's marker, where B's owner could download it."""
    from datetime import UTC, datetime

    from kgapp.graph.retention.archive import archive_commit, archive_write
    from tenants import retention

    rows = {"episode": [{"id": "episode:gone", "content": f"gone {side.marker}"}]}
    manifest = {"namespace": side.tenant.namespace, "actor": f"{side.marker}-writer"}
    archive_commit(
        archive_write(
            retention.archive_directory(side.tenant), manifest, rows, now=datetime.now(UTC)
        )
    )
    assert retention.archive_files(side.tenant)


def put_json(client: Client, url: str, body: Any) -> Any:
    return client.put(url, data=json.dumps(body), content_type="application/json")


def record_ids(tenant: Tenant) -> dict[str, list[str]]:
    graph = tenant_graph(tenant)
    tables = sorted(graph.query("INFO FOR DB")[0]["tables"])
    rows = graph.query(";".join(f"SELECT VALUE id FROM {t}" for t in tables))
    return {t: [str(i) for i in to_json(ids)] for t, ids in zip(tables, rows, strict=True)}


def graph_snapshot(tenant: Tenant) -> dict[str, Any]:
    """The namespace's definitions (namespace, database, every table's fields, indexes
    and events) and a digest of every row of every table, computed by the server."""
    graph = tenant_graph(tenant)
    namespace = graph.query("INFO FOR NS")[0]
    database = graph.query("INFO FOR DB")[0]
    tables = sorted(database["tables"])
    statements = [f"INFO FOR TABLE `{t}`" for t in tables]
    statements += [
        f"RETURN crypto::sha256(<string> (SELECT * FROM `{t}` ORDER BY id))" for t in tables
    ]
    results = graph.query(";".join(statements)) if tables else []
    return to_json(
        {
            "ns": namespace,
            "db": database,
            "tables": dict(zip(tables, results[: len(tables)], strict=True)),
            "rows": dict(zip(tables, results[len(tables) :], strict=True)),
        }
    )


def table_rows(tenant: Tenant) -> dict[str, list[Any]]:
    """Every row of every table, as JSON: what an export of the tenant holds."""
    graph = tenant_graph(tenant)
    tables = sorted(graph.query("INFO FOR DB")[0]["tables"])
    rows = graph.query(";".join(f"SELECT * FROM `{t}` ORDER BY id" for t in tables))
    return to_json(dict(zip(tables, rows, strict=True)))


def root_namespaces() -> list[str]:
    from kgapp.graph.namespaces import namespace_names

    runtime = graph_runtime()
    return sorted(runtime.run(namespace_names(runtime.store(None))))


def relational_snapshot(tenant: Tenant, users: list[Any]) -> dict[str, Any]:
    """Every Django row that belongs to the tenant or to one of its users."""
    user_model = get_user_model()
    found: dict[str, Any] = {"tenant": list(Tenant.objects.filter(pk=tenant.pk).values())}
    found["users"] = list(user_model.objects.filter(pk__in=[u.pk for u in users]).values())
    for model in apps.get_models():
        for f in model._meta.get_fields():
            if not isinstance(f, models.ForeignKey):
                continue
            if f.related_model is Tenant:
                rows = model.objects.filter(**{f.name: tenant})
            elif f.related_model is user_model:
                rows = model.objects.filter(**{f"{f.name}__in": users})
            else:
                continue
            key = f"{model._meta.label}.{f.name}"
            found[key] = sorted(map(repr, rows.order_by("pk").values()))
    return found


def snapshot(side: Side, users: list[Any]) -> dict[str, Any]:
    return {"graph": graph_snapshot(side.tenant), "rel": relational_snapshot(side.tenant, users)}


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Where two snapshots differ: `graph.rows.entity`, `rel.users`, ..."""
    out = []
    for part in before.keys() | after.keys():
        b, a = before.get(part, {}), after.get(part, {})
        for key in sorted(b.keys() | a.keys()):
            if isinstance(b.get(key), dict) and isinstance(a.get(key), dict) and part == "graph":
                out += [
                    f"{part}.{key}.{k}"
                    for k in b[key].keys() | a[key].keys()
                    if b[key].get(k) != a[key].get(k)
                ]
            elif b.get(key) != a.get(key):
                out.append(f"{part}.{key}")
    return sorted(out)


@dataclass
class Sides:
    a: Side
    b: Side
    b_users: list[Any]

    def b_only_ids(self) -> dict[str, list[str]]:
        """B's record ids that name nothing in A (colliding ones are left out)."""
        mine = {i for ids in self.a.ids.values() for i in ids}
        return {t: [i for i in ids if i not in mine] for t, ids in self.b.ids.items()}

    def colliding_ids(self) -> dict[str, list[str]]:
        mine = {i for ids in self.a.ids.values() for i in ids}
        return {t: [i for i in ids if i in mine] for t, ids in self.b.ids.items()}

    def b_snapshot(self) -> dict[str, Any]:
        return snapshot(self.b, self.b_users)


@pytest.fixture
def two_sides(make_tenant, make_user, eager) -> Sides:
    """A and B, seeded through the API with tasks run in-process."""
    mark = "bonly" + secrets.token_hex(5)
    made = []
    b_users: list[Any] = []
    for marker in ("", mark):
        tenant = make_tenant(name=f"Tenant {marker}" if marker else "Tenant A")
        owner = make_user()
        services.membership_set(tenant=tenant, user=owner, role=Role.OWNER)
        curator = make_user()
        services.membership_set(tenant=tenant, user=curator, role=Role.CURATOR)
        token, secret = services.token_create(user=owner, name=f"cli {marker}".strip())
        side = Side(
            tenant,
            owner,
            curator,
            Client(HTTP_AUTHORIZATION=f"Bearer {secret}"),
            secret,
            token,
            marker,
        )
        # B's data is written by a user whose name is itself a marker (jobs and
        # documents record who made them); the attacker never sends that name.
        writer = make_user(f"{marker}-writer" if marker else None)
        services.membership_set(tenant=tenant, user=writer, role=Role.EDITOR)
        _, writer_secret = services.token_create(user=writer, name=f"seed {marker}".strip())
        seed(side, Client(HTTP_AUTHORIZATION=f"Bearer {writer_secret}"))
        if marker:
            b_users = [owner, curator, writer]
        made.append(side)
    return Sides(made[0], made[1], b_users)


def leaks(marker: str, *texts: Any) -> bool:
    return any(marker in (t if isinstance(t, str) else repr(t)).lower() for t in texts)
