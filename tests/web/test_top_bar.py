"""The top bar of every page: the tenant switcher and the site's icon."""

from __future__ import annotations

import pytest
from django.test import Client

from tenants import services
from tenants.models import Role

pytestmark = pytest.mark.django_db


def page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    return response.content.decode()


def test_a_member_of_several_tenants_switches_between_them_on_the_same_page(
    make_tenant, member
) -> None:
    first, second, other = (
        make_tenant(name=n) for n in ("Atlas Team", "Borealis Team", "Cobalt Team")
    )
    user = member(first, Role.VIEWER)
    services.membership_set(tenant=second, user=user, role=Role.EDITOR)
    html = page(user, f"/t/{first.slug}/uploads")
    assert 'class="switcher"' in html
    # The same page in the other tenant; the current one marked; nothing of a third tenant.
    assert f'href="/t/{second.slug}/uploads"' in html
    assert f'<a href="/t/{first.slug}/uploads" aria-current="page">' in html
    assert other.slug not in html and "Cobalt Team" not in html
    # Outside a tenant, the switcher leads to each tenant's home.
    html = page(user, "/")
    assert f'href="/t/{second.slug}/"' in html and "aria-current" not in html


def test_a_member_of_one_tenant_gets_no_switcher(make_tenant, member) -> None:
    tenant = make_tenant(name="Atlas Team")
    make_tenant(name="Borealis Team")
    html = page(member(tenant, Role.OWNER), f"/t/{tenant.slug}/")
    assert 'class="switcher"' not in html and "Borealis Team" not in html


def test_every_page_names_the_icon_and_the_default_icon_request_finds_it(make_user) -> None:
    html = page(make_user(), "/")
    assert 'rel="icon" href="/static/app/img/favicon.svg"' in html
    client = Client()
    redirect = client.get("/favicon.ico")
    assert redirect.status_code == 301 and redirect["Location"] == "/static/app/img/favicon.svg"
    icon = client.get(redirect["Location"])
    assert icon.status_code == 200 and icon["Content-Type"].startswith("image/svg+xml")
    assert b"<svg" in b"".join(icon.streaming_content)
