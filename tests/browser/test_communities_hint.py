"""Colour by community in a tenant that has none yet: the explorer says why (none are
detected before the first upload finishes), then that a detection runs, and once it has
ended it colours the nodes by community and the explanation goes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from kgapp.graph import jobs
from kgapp.graph.records import to_json
from kgapp.tasks import rebuild_communities
from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.browser.conftest import screenshot, wait_for
from tests.browser.test_explorer import open_explorer

pytestmark = pytest.mark.django_db(transaction=True)

GREY = "#c4c9cf"  # a node in no community


def add_fact(client, slug: str, person: str, company: str) -> None:
    body: dict[str, Any] = {
        "source": {"name": person, "type": "Person"},
        "relation": "WORKS_AT",
        "target": {"name": company, "type": "Organization"},
    }
    response = client.post(
        f"/api/v1/t/{slug}/facts", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 201, response.content


def hint(browser) -> str | None:
    """The explanation beside the box, None while hidden."""
    return browser.execute_script(
        "const h = document.getElementById('community-hint'); return h.hidden ? null : h.textContent"
    )


def test_colour_by_community_says_why_there_are_none_until_they_are_detected(
    make_tenant, member, token_client, web_server, browser, log_in
) -> None:
    tenant = make_tenant()
    editor = member(tenant, Role.EDITOR)
    client = token_client(editor)
    for person, company in [("Alice", "Acme Corp"), ("Arno", "Acme Corp"), ("Zoe", "Zenith Labs")]:
        add_fact(client, tenant.slug, person, company)
    log_in(member(tenant, Role.VIEWER))
    open_explorer(browser, web_server, tenant.slug)
    assert hint(browser) is None  # nothing said while the box is off

    browser.find_element(By.ID, "by-community").click()
    wait_for(browser, "return !document.getElementById('community-hint').hidden")
    assert hint(browser) == (
        "No communities yet: they are detected after the first upload finishes."
    )
    colours = browser.execute_script(
        "return window.kgExplorer.cy.nodes().map(n => n.data('communityColour'))"
    )
    assert len(colours) == 5 and set(colours) == {GREY}
    screenshot(browser, "explorer-no-communities-yet")

    # A detection queued: the page hears of it live.
    graph = tenant_graph(tenant)
    job = to_json(graph.run(jobs.job_create, kind="communities", created_by="ingestion"))
    wait_for(
        browser,
        "return document.getElementById('community-hint').textContent === 'Detecting communities…'",
    )
    # It runs and ends: the nodes take their community's colour, the explanation goes.
    assert rebuild_communities.apply(args=(tenant.slug, job["id"])).get()["status"] == "completed"
    wait_for(browser, "return document.getElementById('community-hint').hidden", 30)
    by_name = browser.execute_script("""
        return Object.fromEntries(window.kgExplorer.cy.nodes().map(
            n => [n.data('label'), n.data('communityColour')]));
    """)
    assert by_name["Alice"] == by_name["Arno"] == by_name["Acme Corp"] != GREY
    assert by_name["Zoe"] == by_name["Zenith Labs"] not in (GREY, by_name["Alice"])
    screenshot(browser, "explorer-communities-detected")

    # Unticked and ticked again: nothing to explain any more.
    browser.find_element(By.ID, "by-community").click()
    browser.find_element(By.ID, "by-community").click()
    assert browser.execute_script("return window.kgExplorer.cy.nodes('.by-community').length") == 5
    assert hint(browser) is None
