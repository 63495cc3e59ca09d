"""Tenancy and auth at the API edge: every refusal has the right status and a message."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tenants import services
from tenants.models import ApiToken, Membership, Role, Tenant

pytestmark = pytest.mark.django_db(transaction=True)


def detail(response) -> str:
    body = response.json()
    assert isinstance(body.get("detail"), str) and body["detail"]
    return body["detail"]


def test_unknown_tenant_and_non_member_look_the_same(
    make_tenant, make_user, member, token_client
) -> None:
    tenant = make_tenant()
    stranger = token_client(make_user())
    unknown = stranger.get("/api/v1/t/no-such-tenant/")
    not_member = stranger.get(f"/api/v1/t/{tenant.slug}/")
    assert unknown.status_code == not_member.status_code == 404
    assert detail(unknown).replace("no-such-tenant", tenant.slug) == detail(not_member)
    ok = token_client(member(tenant)).get(f"/api/v1/t/{tenant.slug}/")
    assert ok.status_code == 200
    body = ok.json()
    assert body["role"] == "viewer" and body["namespace"] == tenant.namespace
    assert body["counts"] == {
        "entities": 0,
        "facts": 0,
        "episodes": 0,
        "documents": 0,
        "communities": 0,
    }


@pytest.mark.parametrize("slug", ["Bad_Slug", "a--b", "-x", "x" * 41, "ünï"])
def test_invalid_slug_is_400(make_user, token_client, slug: str) -> None:
    response = token_client(make_user()).get(f"/api/v1/t/{slug}/")
    assert response.status_code == 400
    assert "not a tenant slug" in detail(response)


def test_viewer_cannot_write(make_tenant, member, token_client) -> None:
    tenant = make_tenant()
    viewer = token_client(member(tenant, Role.VIEWER))
    response = viewer.post(f"/api/v1/t/{tenant.slug}/jobs/health-check")
    assert response.status_code == 403
    assert "editor" in detail(response)
    response = viewer.put(
        f"/api/v1/t/{tenant.slug}/members",
        data=json.dumps({"username": "someone", "role": "owner"}),
        content_type="application/json",
    )
    assert response.status_code == 403


def test_owner_manages_members(make_tenant, member, make_user, token_client) -> None:
    tenant = make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    newcomer = make_user()
    response = owner.put(
        f"/api/v1/t/{tenant.slug}/members",
        data=json.dumps({"username": newcomer.username, "role": "editor"}),
        content_type="application/json",
    )
    assert response.status_code == 202 and response.json()["status"] == "invited"
    newcomer_api = token_client(newcomer)
    assert newcomer_api.get(f"/api/v1/t/{tenant.slug}/").status_code == 404  # not yet joined
    (invitation,) = newcomer_api.get("/api/v1/invitations").json()
    assert invitation["tenant"] == tenant.slug and invitation["role"] == "editor"
    joined = newcomer_api.post(f"/api/v1/invitations/{invitation['id']}/accept")
    assert joined.status_code == 200 and joined.json()["role"] == "editor"
    names = {m["username"]: m["role"] for m in owner.get(f"/api/v1/t/{tenant.slug}/members").json()}
    assert names[newcomer.username] == "editor"
    changed = owner.put(
        f"/api/v1/t/{tenant.slug}/members",
        data=json.dumps({"username": newcomer.username, "role": "curator"}),
        content_type="application/json",
    )
    assert changed.status_code == 200 and changed.json() | {"created_at": None} == {
        "username": newcomer.username,
        "role": "curator",
        "status": "member",
        "created_at": None,
    }
    assert owner.delete(f"/api/v1/t/{tenant.slug}/members/{newcomer.username}").status_code == 204
    assert newcomer_api.get(f"/api/v1/t/{tenant.slug}/").status_code == 404


def test_token_auth_and_revocation(make_tenant, member) -> None:
    tenant = make_tenant()
    user = member(tenant)
    assert Client().get(f"/api/v1/t/{tenant.slug}/").status_code == 401
    token, secret = services.token_create(user=user, name="cli")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get(f"/api/v1/t/{tenant.slug}/").status_code == 200
    assert Client(HTTP_X_API_KEY=secret).get(f"/api/v1/t/{tenant.slug}/").status_code == 200
    assert ApiToken.objects.get(pk=token.pk).last_used_at is not None
    assert secret not in ApiToken.objects.get(pk=token.pk).digest

    tampered = secret[:-2] + ("aa" if not secret.endswith("aa") else "bb")
    assert (
        Client(HTTP_AUTHORIZATION=f"Bearer {tampered}").get(f"/api/v1/t/{tenant.slug}/").status_code
        == 401
    )

    assert client.delete(f"/api/v1/tokens/{token.pk}").status_code == 204
    assert client.get(f"/api/v1/t/{tenant.slug}/").status_code == 401


def test_a_revoked_or_mistyped_token_is_refused_401_on_every_method(make_tenant, member) -> None:
    """Never read as a browser session's request (whose CSRF check said 403, "CSRF check
    failed"), even with a session cookie beside it."""
    tenant = make_tenant()
    user = member(tenant, Role.OWNER)
    token, secret = services.token_create(user=user, name="cli")
    services.token_revoke(token=token)
    base = f"/api/v1/t/{tenant.slug}"
    for header in ("HTTP_AUTHORIZATION", "HTTP_X_API_KEY"):
        for raw in (secret, "kg_nope_nope", "not-a-token"):
            value = f"Bearer {raw}" if header == "HTTP_AUTHORIZATION" else raw
            client = Client(enforce_csrf_checks=True, **{header: value})
            client.force_login(user)
            for answer in (
                client.get(f"{base}/"),
                client.delete(f"{base}/members/{user.username}"),
                client.delete(f"/api/v1/tokens/{token.pk}"),
                client.put(
                    f"{base}/members",
                    data=json.dumps({"username": "x", "role": "viewer"}),
                    content_type="application/json",
                ),
                client.post(
                    "/api/v1/tokens",
                    data=json.dumps({"name": "x"}),
                    content_type="application/json",
                ),
            ):
                assert answer.status_code == 401, (header, raw, answer.request, answer.content)
                assert "token is not valid" in answer.json()["detail"]
                assert answer["WWW-Authenticate"].startswith("Bearer")
    assert Membership.objects.filter(tenant=tenant, user=user, role=Role.OWNER).exists()


def test_a_token_cannot_create_tokens_but_a_session_can(make_user, token_client) -> None:
    user = make_user()
    body = {"data": json.dumps({"name": "successor"}), "content_type": "application/json"}
    refused = token_client(user).post("/api/v1/tokens", **body)
    assert refused.status_code == 403
    assert "sign in" in refused.json()["detail"]
    assert not ApiToken.objects.filter(user=user, name="successor").exists()
    browser = Client()
    browser.force_login(user)
    assert browser.post("/api/v1/tokens", **body).status_code == 201
    # A token may still list and revoke its user's tokens (revoking only takes away).
    made = ApiToken.objects.get(user=user, name="successor")
    assert token_client(user).delete(f"/api/v1/tokens/{made.pk}").status_code == 204


def test_tokens_are_created_once_and_listed_without_secret(make_user) -> None:
    user = make_user()
    client = Client()
    client.force_login(user)
    created = client.post(
        "/api/v1/tokens", data=json.dumps({"name": "laptop"}), content_type="application/json"
    )
    assert created.status_code == 201
    secret = created.json()["token"]
    listed = client.get("/api/v1/tokens").json()
    assert [t["name"] for t in listed] == ["laptop"]
    assert secret not in json.dumps(listed)
    assert Client(HTTP_AUTHORIZATION=f"Bearer {secret}").get("/api/v1/tokens").status_code == 200


def test_session_writes_need_csrf(make_tenant, member) -> None:
    tenant = make_tenant()
    user = member(tenant, Role.EDITOR)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.get(f"/api/v1/t/{tenant.slug}/").status_code == 200
    refused = client.post(f"/api/v1/t/{tenant.slug}/jobs/health-check")
    assert refused.status_code == 403


def test_staff_create_and_delete_tenants(make_user, token_client, runtime) -> None:
    from kgapp.graph.namespaces import namespace_names

    staff = token_client(make_user(staff=True))
    plain = token_client(make_user())
    body = json.dumps({"slug": "made-by-api", "name": "Made by API"})
    assert (
        plain.post("/api/v1/tenants", data=body, content_type="application/json").status_code == 403
    )
    created = staff.post("/api/v1/tenants", data=body, content_type="application/json")
    assert created.status_code == 201, created.content
    assert created.json()["namespace"] == "t_made_by_api"
    assert created.json()["schema_version"] >= 2
    assert "t_made_by_api" in runtime.run(namespace_names(runtime.store(None)))

    again = staff.post("/api/v1/tenants", data=body, content_type="application/json")
    assert again.status_code == 422 and "already exists" in detail(again)

    unconfirmed = staff.delete(
        "/api/v1/tenants/made-by-api",
        data=json.dumps({"confirm": "nope"}),
        content_type="application/json",
    )
    assert unconfirmed.status_code == 422 and "confirm" in detail(unconfirmed)
    assert Tenant.objects.filter(slug="made-by-api").exists()
    deleted = staff.delete(
        "/api/v1/tenants/made-by-api",
        data=json.dumps({"confirm": "made-by-api"}),
        content_type="application/json",
    )
    assert deleted.status_code == 204
    assert not Tenant.objects.filter(slug="made-by-api").exists()
    assert "t_made_by_api" not in runtime.run(namespace_names(runtime.store(None)))


def test_job_ids_from_users_are_checked(make_tenant, member, token_client) -> None:
    tenant = make_tenant()
    client = token_client(member(tenant))
    for bad in ["entity:abc", "job:a%3Bb", "%E2%9F%A9"]:
        response = client.get(f"/api/v1/t/{tenant.slug}/jobs/{bad}")
        assert response.status_code == 422, bad
        detail(response)
    missing = client.get(f"/api/v1/t/{tenant.slug}/jobs/job:doesnotexist")
    assert missing.status_code == 404


def test_editor_queues_a_health_job(make_tenant, member, token_client, settings) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    from kgapp.celery import app

    app.conf.task_always_eager = True
    try:
        tenant = make_tenant()
        client = token_client(member(tenant, Role.EDITOR))
        queued = client.post(f"/api/v1/t/{tenant.slug}/jobs/health-check")
        assert queued.status_code == 202, queued.content
        job_id = queued.json()["job_id"]
        assert job_id.startswith("job:")
        job = client.get(f"/api/v1/t/{tenant.slug}/jobs/{job_id}").json()
        assert job["status"] == "completed" and job["counts"] == {"pings": 1}
        listed = client.get(f"/api/v1/t/{tenant.slug}/jobs?status=completed").json()
        assert [j["id"] for j in listed] == [job_id]
        assert client.get(f"/api/v1/t/{tenant.slug}/jobs?status=bogus").status_code == 422
    finally:
        app.conf.task_always_eager = False
