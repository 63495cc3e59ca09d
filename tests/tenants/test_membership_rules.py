"""Membership rules at the API, the home page and the admin: a tenant always keeps an
owner; inviting tells nothing about which usernames exist; the admin never redirects
to another host."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tenants.models import Invitation, Membership, Role

pytestmark = pytest.mark.django_db(transaction=True)


def put_member(client: Client, slug: str, username: str, role: str):
    return client.put(
        f"/api/v1/t/{slug}/members",
        data=json.dumps({"username": username, "role": role}),
        content_type="application/json",
    )


def role_of(tenant, user) -> str | None:
    row = Membership.objects.filter(tenant=tenant, user=user).first()
    return row.role if row else None


def browser_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- the last owner -----------------------------------------------------------------


def test_the_only_owner_cannot_leave_or_demote_themselves(
    make_tenant, member, token_client
) -> None:
    tenant = make_tenant()
    alice = member(tenant, Role.OWNER)
    api = token_client(alice)
    for refused in (
        put_member(api, tenant.slug, alice.username, "editor"),
        api.delete(f"/api/v1/t/{tenant.slug}/members/{alice.username}"),
    ):
        assert refused.status_code == 409, refused.content
        detail = refused.json()["detail"]
        assert "only owner" in detail and "make another member owner first" in detail
    assert role_of(tenant, alice) == Role.OWNER

    # With a second owner, either may step down, but not both.
    bob = member(tenant, Role.EDITOR)
    assert put_member(api, tenant.slug, bob.username, "owner").status_code == 200
    assert put_member(api, tenant.slug, alice.username, "viewer").status_code == 200
    assert role_of(tenant, alice) == Role.VIEWER
    bob_api = token_client(bob)
    assert bob_api.delete(f"/api/v1/t/{tenant.slug}/members/{bob.username}").status_code == 409
    assert put_member(bob_api, tenant.slug, bob.username, "curator").status_code == 409
    assert role_of(tenant, bob) == Role.OWNER


def test_staff_cannot_remove_the_last_owner_either(
    make_tenant, member, make_user, token_client
) -> None:
    tenant = make_tenant()
    owner = member(tenant, Role.OWNER)
    staff = token_client(make_user(staff=True))
    assert staff.delete(f"/api/v1/t/{tenant.slug}/members/{owner.username}").status_code == 409
    assert put_member(staff, tenant.slug, owner.username, "viewer").status_code == 409
    assert role_of(tenant, owner) == Role.OWNER
    # A tenant made without an owner (staff did) can still get members.
    bare = make_tenant()
    viewer = member(bare, Role.VIEWER)
    assert staff.delete(f"/api/v1/t/{bare.slug}/members/{viewer.username}").status_code == 204


# --- invitations: no username oracle --------------------------------------------------


def test_adding_a_member_does_not_tell_whether_the_username_exists(
    make_tenant, member, make_user, token_client
) -> None:
    tenant = make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    existing = make_user()
    answers = {
        name: put_member(owner, tenant.slug, name, "editor")
        for name in (existing.username, "nobody-by-this-name")
    }
    shapes = set()
    for name, answer in answers.items():
        body = answer.json()
        assert answer.status_code == 202, answer.content
        assert body["username"] == name
        shapes.add(
            (
                answer.status_code,
                answer["Content-Type"],
                tuple(sorted(body)),
                body["role"],
                body["status"],
            )
        )
    assert len(shapes) == 1  # the same status, headers and fields for both

    listed = {m["username"]: m for m in owner.get(f"/api/v1/t/{tenant.slug}/members").json()}
    assert (
        listed[existing.username]["status"] == listed["nobody-by-this-name"]["status"] == "invited"
    )
    assert listed[existing.username].keys() == listed["nobody-by-this-name"].keys()

    # Inviting again (another role) answers the same way and keeps one invitation.
    again = put_member(owner, tenant.slug, "nobody-by-this-name", "viewer")
    assert again.status_code == 202
    assert Invitation.objects.get(tenant=tenant, username="nobody-by-this-name").role == "viewer"

    # Only the invited user joins, and only when they accept.
    assert role_of(tenant, existing) is None
    guest = token_client(existing)
    (invitation,) = guest.get("/api/v1/invitations").json()
    stranger = token_client(make_user())
    assert stranger.post(f"/api/v1/invitations/{invitation['id']}/accept").status_code == 404
    assert stranger.post("/api/v1/invitations/999999/accept").json()["detail"] == (
        "you have no invitation 999999"
    )
    accepted = guest.post(f"/api/v1/invitations/{invitation['id']}/accept")
    assert accepted.status_code == 200 and accepted.json()["role"] == "editor"
    assert guest.get(f"/api/v1/t/{tenant.slug}/").status_code == 200
    assert guest.get("/api/v1/invitations").json() == []


def test_withdrawn_and_declined_invitations(make_tenant, member, make_user, token_client) -> None:
    tenant = make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    assert put_member(owner, tenant.slug, "ghost", "viewer").status_code == 202
    assert owner.delete(f"/api/v1/t/{tenant.slug}/members/ghost").status_code == 204
    gone = owner.delete(f"/api/v1/t/{tenant.slug}/members/ghost")
    assert gone.status_code == 404 and "neither a member" in gone.json()["detail"]

    carol = make_user()
    assert put_member(owner, tenant.slug, carol.username, "viewer").status_code == 202
    carol_api = token_client(carol)
    (invitation,) = carol_api.get("/api/v1/invitations").json()
    assert carol_api.delete(f"/api/v1/invitations/{invitation['id']}").status_code == 204
    assert not Invitation.objects.filter(tenant=tenant).exists()
    assert role_of(tenant, carol) is None

    bad = put_member(owner, tenant.slug, "no spaces or slashes/", "viewer")
    assert bad.status_code == 422 and "valid username" in bad.json()["detail"]


def test_invitations_are_answered_from_the_home_page(
    make_tenant, member, make_user, token_client
) -> None:
    tenant = make_tenant(name="Acme graph")
    owner = token_client(member(tenant, Role.OWNER))
    dave, erin = make_user(), make_user()
    for user in (dave, erin):
        assert put_member(owner, tenant.slug, user.username, "curator").status_code == 202
    page = browser_of(dave).get("/")
    assert b"Acme graph" in page.content and b"Join" in page.content
    invitation = Invitation.objects.get(tenant=tenant, username=dave.username)
    joined = browser_of(dave).post(f"/invitations/{invitation.pk}/accept")
    assert joined.status_code == 302 and joined["Location"] == f"/t/{tenant.slug}/"
    assert role_of(tenant, dave) == Role.CURATOR
    # Someone else's invitation looks like none at all.
    erins = Invitation.objects.get(tenant=tenant, username=erin.username)
    refused = browser_of(dave).post(f"/invitations/{erins.pk}/decline")
    assert refused.status_code == 404 and Invitation.objects.filter(pk=erins.pk).exists()
    assert browser_of(erin).post(f"/invitations/{erins.pk}/decline").status_code == 302
    assert role_of(tenant, erin) is None and not Invitation.objects.filter(pk=erins.pk).exists()


# --- the admin -------------------------------------------------------------------------


@pytest.fixture
def superuser(make_user):
    user = make_user(staff=True)
    user.is_superuser = True
    user.save()
    return user


def test_the_admin_keeps_an_owner(make_tenant, member, superuser) -> None:
    tenant = make_tenant()
    owner = member(tenant, Role.OWNER)
    only = Membership.objects.get(tenant=tenant, user=owner)
    admin = browser_of(superuser)

    # The membership's own page: demoting the only owner is refused with the reason.
    page = admin.post(
        f"/admin/tenants/membership/{only.pk}/change/",
        {"user": owner.pk, "tenant": tenant.pk, "role": "viewer"},
    )
    assert page.status_code == 200 and b"would have no owner left" in page.content
    assert role_of(tenant, owner) == Role.OWNER

    # Deleting it, one or in bulk: the confirmation page lists it as protected.
    confirm = admin.get(f"/admin/tenants/membership/{only.pk}/delete/")
    assert b"would have no owner left" in confirm.content
    admin.post(f"/admin/tenants/membership/{only.pk}/delete/", {"post": "yes"})
    admin.post(
        "/admin/tenants/membership/",
        {"action": "delete_selected", "_selected_action": [only.pk], "post": "yes"},
    )
    assert role_of(tenant, owner) == Role.OWNER

    # The tenant page's member rows: no owner left is refused; another owner first is fine.
    def tenant_form(rows: list[dict]) -> dict:
        data = {
            "name": tenant.name,
            "memberships-TOTAL_FORMS": len(rows),
            "memberships-INITIAL_FORMS": sum(1 for r in rows if r.get("id")),
            "memberships-MIN_NUM_FORMS": 0,
            "memberships-MAX_NUM_FORMS": 1000,
        }
        for i, row in enumerate(rows):
            for key, value in row.items():
                data[f"memberships-{i}-{key}"] = value
            data[f"memberships-{i}-tenant"] = tenant.pk
        return data

    refused = admin.post(
        f"/admin/tenants/tenant/{tenant.pk}/change/",
        tenant_form([{"id": only.pk, "user": owner.pk, "role": "viewer"}]),
    )
    assert refused.status_code == 200 and b"would have no owner left" in refused.content
    deleted = admin.post(
        f"/admin/tenants/tenant/{tenant.pk}/change/",
        tenant_form([{"id": only.pk, "user": owner.pk, "role": "owner", "DELETE": "on"}]),
    )
    assert deleted.status_code == 200 and b"would have no owner left" in deleted.content
    assert role_of(tenant, owner) == Role.OWNER
    heir = member(tenant, Role.VIEWER)
    heir_row = Membership.objects.get(tenant=tenant, user=heir)
    handed_over = admin.post(
        f"/admin/tenants/tenant/{tenant.pk}/change/",
        tenant_form(
            [
                {"id": only.pk, "user": owner.pk, "role": "viewer"},
                {"id": heir_row.pk, "user": heir.pk, "role": "owner"},
            ]
        ),
    )
    assert handed_over.status_code == 302, handed_over.content[:3000]
    assert role_of(tenant, owner) == Role.VIEWER and role_of(tenant, heir) == Role.OWNER


@pytest.mark.parametrize(
    "target",
    ["https://evil.example/", "//evil.example/x", "/\\evil.example", "http:///evil.example"],
)
def test_admin_next_never_leaves_the_site(make_tenant, member, superuser, eager, target) -> None:
    tenant = make_tenant()
    password = "pw-" + superuser.username
    client = Client()
    login = client.post(
        f"/admin/login/?next={target}",
        {"username": superuser.username, "password": password, "next": target},
    )
    assert login.status_code == 302 and login["Location"] == "/"  # LOGIN_REDIRECT_URL
    site_login = Client().post(
        f"/accounts/login/?next={target}",
        {"username": superuser.username, "password": password, "next": target},
    )
    assert site_login.status_code == 302 and site_login["Location"] == "/"

    rebuilt = client.post(f"/admin/graph/{tenant.slug}/communities/rebuild/", {"next": target})
    assert rebuilt.status_code == 302
    assert rebuilt["Location"] == f"/admin/graph/{tenant.slug}/facts/"
    logout = client.post(f"/admin/logout/?next={target}", {"next": target})
    assert logout.status_code in (200, 302)
    assert "evil.example" not in logout.get("Location", "")

    # A path on this site is still followed.
    client.force_login(superuser)
    local = f"/admin/graph/{tenant.slug}/audit/"
    assert (
        client.post(f"/admin/graph/{tenant.slug}/communities/rebuild/", {"next": local})["Location"]
        == local
    )


def test_pending_invitations_are_capped(make_tenant, member, token_client, settings) -> None:
    settings.INVITATIONS_MAX_PENDING = 3
    tenant = make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    assert [
        put_member(owner, tenant.slug, f"guest{i}", "viewer").status_code for i in range(3)
    ] == [202] * 3
    refused = put_member(owner, tenant.slug, "guest3", "viewer")
    assert refused.status_code == 409
    assert (
        "3 pending invitations" in refused.json()["detail"]
        and "withdraw" in refused.json()["detail"]
    )
    assert not Invitation.objects.filter(tenant=tenant, username="guest3").exists()
    # A pending one can still change role, members still change, and withdrawing makes room.
    assert put_member(owner, tenant.slug, "guest0", "editor").status_code == 202
    editor = member(tenant, Role.EDITOR)
    assert put_member(owner, tenant.slug, editor.username, "curator").status_code == 200
    assert owner.delete(f"/api/v1/t/{tenant.slug}/members/guest1").status_code == 204
    assert put_member(owner, tenant.slug, "guest3", "viewer").status_code == 202
