"""The top bar in a real browser: a member of two tenants switches from one tenant's
explorer to the other's, and the page's icon loads."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from tenants import services
from tenants.models import Role
from tests.browser.conftest import wait_for
from tests.browser.test_explorer import open_explorer

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_switcher_opens_the_same_page_in_the_other_tenant(
    make_tenant, member, web_server, browser, log_in
) -> None:
    first, second = make_tenant(name="Atlas Team"), make_tenant(name="Borealis Team")
    user = member(first, Role.VIEWER)
    services.membership_set(tenant=second, user=user, role=Role.EDITOR)
    log_in(user)
    open_explorer(browser, web_server, first.slug)
    switcher = browser.find_element(By.CSS_SELECTOR, "details.switcher")
    assert switcher.find_element(By.TAG_NAME, "summary").text == "Atlas Team"
    # Closed until asked; opened, it lists both tenants.
    link = switcher.find_element(By.CSS_SELECTOR, f"a[href='/t/{second.slug}/explore']")
    assert not link.is_displayed()
    switcher.find_element(By.TAG_NAME, "summary").click()
    assert link.is_displayed() and link.text == f"Borealis Team {second.slug}"
    current = switcher.find_element(By.CSS_SELECTOR, "a[aria-current=page]")
    assert current.get_attribute("href").endswith(f"/t/{first.slug}/explore")
    link.click()
    wait_for(browser, f"return location.pathname === '/t/{second.slug}/explore'")
    wait_for(browser, "return document.getElementById('status').textContent === 'Live'")
    assert browser.find_element(By.CSS_SELECTOR, "details.switcher summary").text == "Borealis Team"
    # The icon the page names is served (an SVG), not a 404.
    icon = browser.execute_script("return document.querySelector('link[rel=icon]').href")
    status = browser.execute_async_script(
        "fetch(arguments[0]).then(r => arguments[1]([r.status, r.headers.get('content-type')]))",
        icon,
    )
    assert status[0] == 200 and "svg" in status[1], status
