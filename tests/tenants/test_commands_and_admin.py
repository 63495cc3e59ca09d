"""Provisioning through the management commands and the Django admin."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.index import directories as search_index
from kgapp.graph.namespaces import namespace_names
from tenants.models import Membership, Tenant

pytestmark = pytest.mark.django_db(transaction=True)


def namespaces(runtime) -> list[str]:
    return runtime.run(namespace_names(runtime.store(None)))


def test_create_and_delete_tenant_commands(runtime, make_user) -> None:
    owner = make_user("cmd-owner")
    call_command("create_tenant", "cmd-made", "--name", "Made", "--owner", "cmd-owner")
    tenant = Tenant.objects.get(slug="cmd-made")
    assert tenant.namespace in namespaces(runtime)
    assert tenant.schema_version >= 2
    assert Membership.objects.get(tenant=tenant, user=owner).role == "owner"
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_tenant", "cmd-made")
    call_command("create_tenant", "cmd-made", "--if-missing")  # re-provision: a no-op
    with pytest.raises(CommandError, match="confirm"):
        call_command("delete_tenant", "cmd-made", "--confirm", "wrong")
    call_command("delete_tenant", "cmd-made", "--confirm", "cmd-made")
    assert not Tenant.objects.filter(slug="cmd-made").exists()
    assert "t_cmd_made" not in namespaces(runtime)


def test_search_indexer_command_indexes_every_tenant_and_forgets_deleted_ones(runtime) -> None:
    call_command("create_tenant", "cmd-indexed")
    call_command("create_tenant", "cmd-other")
    ours, other = (Tenant.objects.get(slug=s) for s in ("cmd-indexed", "cmd-other"))
    entity = {
        "id": RecordID("entity", "acme"),
        "name": "Acme Rockets",
        "entity_type": "Organization",
        "canonical_name": "acme rockets",
        "summary": "",
    }
    runtime.run(
        runtime.store(ours.namespace).query(queries.ENTITIES_BULK_INSERT, {"rows": [entity]})
    )
    call_command("search_indexer", "--once")
    for tenant in (ours, other):
        directory = search_index.tenant_dir(tenant.namespace)
        manifest = search_index.read_manifest(directory, tenant.namespace)
        assert manifest is not None
        assert manifest.table("entity").rows == (1 if tenant == ours else 0)
    call_command("delete_tenant", "cmd-indexed", "--confirm", "cmd-indexed")
    assert not search_index.tenant_dir(ours.namespace).exists()
    assert search_index.tenant_dir(other.namespace).exists()
    call_command("delete_tenant", "cmd-other", "--confirm", "cmd-other")


def test_bad_slug_is_refused_before_anything_exists(runtime) -> None:
    with pytest.raises(CommandError, match="not a tenant slug"):
        call_command("create_tenant", "Bad_Slug")
    assert not Tenant.objects.exists()


def test_bootstrap_demo_is_safe_to_run_twice(runtime, settings, tmp_path, capsys) -> None:
    settings.VAR_DIR = tmp_path
    call_command("bootstrap_demo", "--tenant", "demo-probe", "--username", "demo-admin")
    first = capsys.readouterr().out
    call_command(
        "bootstrap_demo",
        "--tenant",
        "demo-probe",
        "--username",
        "demo-admin",
        "--url",
        "http://127.0.0.1:8123/",
    )
    second = capsys.readouterr().out
    password = (tmp_path / "demo-login.txt").read_text().splitlines()[1]
    assert password in first and password in second
    # It says where the product answers (bin/run passes its host and port).
    assert "http://127.0.0.1:8000/" in first and "http://127.0.0.1:8123/" in second
    assert Tenant.objects.filter(slug="demo-probe").count() == 1
    client = Client()
    assert client.login(username="demo-admin", password=password)
    assert client.get("/t/demo-probe/").status_code == 200
    call_command("delete_tenant", "demo-probe", "--confirm", "demo-probe")


def test_admin_creates_and_deletes_a_provisioned_tenant(runtime, make_user) -> None:
    admin = make_user("root-admin", staff=True)
    admin.is_superuser = True
    admin.save()
    client = Client()
    client.force_login(admin)
    response = client.post(
        "/admin/tenants/tenant/add/",
        {
            "slug": "via-admin",
            "name": "Via admin",
            "embedding_dim": 384,
            "memberships-TOTAL_FORMS": 0,
            "memberships-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302, response.content[:2000]
    tenant = Tenant.objects.get(slug="via-admin")
    assert tenant.namespace in namespaces(runtime) and tenant.schema_version >= 2
    page = client.get(f"/admin/tenants/tenant/{tenant.pk}/delete/")
    assert page.status_code == 200 and b"Are you sure" in page.content
    client.post(f"/admin/tenants/tenant/{tenant.pk}/delete/", {"post": "yes"})
    assert not Tenant.objects.filter(slug="via-admin").exists()
    assert tenant.namespace not in namespaces(runtime)


def test_pages_resolve_the_tenant_at_the_edge(make_tenant, member, make_user) -> None:
    tenant = make_tenant()
    browser = Client()
    assert browser.get(f"/t/{tenant.slug}/").status_code == 302  # to the login page
    browser.force_login(make_user())
    assert browser.get(f"/t/{tenant.slug}/").status_code == 404
    assert browser.get("/t/Not_A_Slug/").status_code == 400
    browser.force_login(member(tenant))
    page = browser.get(f"/t/{tenant.slug}/")
    assert page.status_code == 200 and tenant.namespace.encode() in page.content
    home = browser.get("/")
    assert tenant.slug.encode() in home.content
