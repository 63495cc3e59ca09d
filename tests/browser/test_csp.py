"""The Content-Security-Policy in a real browser: the explorer (Cytoscape from npm), the
uploads page, the Ask page, the admin's graph pages, the API docs and the retention page
work under it, and chromium reports no violation."""

from __future__ import annotations

import json

import pytest
from selenium.webdriver.common.by import By

from tenants.models import Role
from tests.browser.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def violations(browser) -> list[str]:
    """What chromium logged about the policy since the last call (the log is drained)."""
    return [
        entry["message"]
        for entry in browser.get_log("browser")
        if "Content Security Policy" in entry["message"] or "Refused to" in entry["message"]
    ]


def test_pages_work_under_the_csp(
    make_tenant, member, make_user, token_client, web_server, browser, log_in
) -> None:
    tenant = make_tenant()
    editor = token_client(member(tenant, Role.EDITOR))
    fact = editor.post(
        f"/api/v1/t/{tenant.slug}/facts",
        data=json.dumps(
            {
                "source": {"name": "Greta", "type": "Person"},
                "relation": "WORKS_AT",
                "target": {"name": "Helix Labs", "type": "Organization"},
                "valid_at": "2024-03-01T00:00:00Z",
            }
        ),
        content_type="application/json",
    ).json()
    staff = make_user(staff=True)
    staff.is_superuser = True
    staff.save()
    log_in(staff)
    violations(browser)

    # The explorer: Cytoscape draws the graph, its container style (the one inline <style>,
    # allowed by hash) applies, the socket goes live.
    browser.get(f"{web_server}/t/{tenant.slug}/explore")
    wait_for(browser, "return document.getElementById('status').textContent === 'Live'")
    assert sorted(
        browser.execute_script("return window.kgExplorer.cy.nodes().map(n => n.data('label'))")
    ) == ["Greta", "Helix Labs"]
    assert (
        browser.execute_script("return getComputedStyle(window.kgExplorer.cy.container()).position")
        == "relative"
    )
    assert violations(browser) == []

    browser.get(f"{web_server}/t/{tenant.slug}/uploads")
    wait_for(browser, "return document.getElementById('jobs') !== null")
    assert browser.find_elements(By.ID, "drop")
    assert violations(browser) == []

    # The Ask page streams its answer (here, without a model: the sources and a note).
    browser.get(f"{web_server}/t/{tenant.slug}/ask")
    wait_for(
        browser, "return document.getElementById('history').textContent === 'No questions yet.'"
    )
    browser.find_element(By.ID, "question").send_keys("Where does Greta work?")
    browser.find_element(By.ID, "ask-submit").click()
    wait_for(
        browser, "return document.getElementById('ask-status').textContent === 'Sources only.'"
    )
    assert "Helix Labs" in browser.find_element(By.ID, "facts").text
    assert violations(browser) == []

    # The admin's fact page draws its two time bars (SVG, no style attributes).
    browser.get(f"{web_server}/admin/graph/{tenant.slug}/facts/{fact['id']}/")
    bars = browser.find_elements(By.CSS_SELECTOR, "svg.kg-bar rect")
    assert len(bars) == 2 and all(bar.size["width"] > 0 for bar in bars)
    assert (
        browser.execute_script(
            "return getComputedStyle(document.querySelector('.kg-bar rect')).fill"
        )
        == "rgb(44, 160, 44)"
    )
    browser.get(f"{web_server}/admin/tenants/tenant/{tenant.pk}/change/")
    wait_for(browser, "return document.querySelector('#memberships-group') !== null")
    assert violations(browser) == []

    # The API docs: Swagger UI from ninja's static files lists the operations.
    browser.get(f"{web_server}/api/docs")
    wait_for(browser, "return document.querySelectorAll('.opblock').length > 10", 30)
    assert violations(browser) == []

    # The retention page (owners only) reads the policy through its module.
    log_in(member(tenant, Role.OWNER))
    browser.get(f"{web_server}/t/{tenant.slug}/retention")
    wait_for(browser, "return document.getElementById('current-policy').textContent !== '…'")
    assert violations(browser) == []
