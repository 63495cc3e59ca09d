"""The explorer's side panel in a real browser: one row per fact, as known at the chosen
system time, with its earlier versions behind it."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from selenium.webdriver.common.by import By

from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.browser.conftest import screenshot, wait_for
from tests.browser.test_explorer import open_explorer, post, set_slider

pytestmark = pytest.mark.django_db(transaction=True)

HELIOS = "Rosa Diaz works at Helios Labs."
NOVA = "Rosa Diaz works at Nova Systems."


def rows(browser) -> list[str]:
    """The text of each fact row of the entity in the panel."""
    return browser.execute_script(
        "return [...document.querySelectorAll('#detail .entity-facts ul.facts > li > button')]"
        ".map(b => b.textContent)"
    )


def test_a_superseded_fact_is_one_row_with_its_versions_behind_it(
    make_tenant, member, token_client, web_server, browser, log_in
) -> None:
    tenant = make_tenant()
    editor = member(tenant, Role.EDITOR)
    client = token_client(editor)
    base = f"/api/v1/t/{tenant.slug}"
    person = {"name": "Rosa Diaz", "type": "Person"}
    post(
        client,
        f"{base}/facts",
        {
            "source": person,
            "relation": "WORKS_AT",
            "target": {"name": "Helios Labs", "type": "Organization"},
            "fact": HELIOS,
            "valid_at": "2022-01-10T00:00:00Z",
        },
    )
    # A second apart on each side: the known-time slider moves in steps of a thousandth of
    # the span, which on a slow machine is tens of milliseconds.
    time.sleep(1)
    before = datetime.now(UTC)
    time.sleep(1)
    post(
        client,
        f"{base}/facts",
        {
            "source": person,
            "relation": "WORKS_AT",
            "target": {"name": "Nova Systems", "type": "Organization"},
            "fact": NOVA,
            "valid_at": "2024-05-01T00:00:00Z",
        },
    )
    # The store holds two versions of the Helios fact: the one retired in system time and
    # its revision, valid until Rosa moved.
    stored = tenant_graph(tenant).query(
        "SELECT fact, invalid_at, expired_at FROM relates_to WHERE fact = $fact", {"fact": HELIOS}
    )[0]
    assert len(stored) == 2, stored

    log_in(editor)
    open_explorer(browser, web_server, tenant.slug)
    # The page loads everything it names (the icon included: no 404 in the console).
    assert [e for e in browser.get_log("browser") if "Failed to load" in e["message"]] == []
    browser.execute_script(
        "window.kgExplorer.cy.nodes().filter(n => n.data('label') === 'Rosa Diaz').emit('tap')"
    )
    wait_for(browser, "return document.querySelector('#detail .entity-facts') !== null")
    assert sorted(rows(browser)) == [HELIOS, NOVA]
    # The facts were added through the API: their passages read as the statements, with
    # where they came from, not as the JSON stored for them.
    passages = browser.find_elements(By.CSS_SELECTOR, "#detail ul.passages li")
    assert sorted(p.find_element(By.TAG_NAME, "blockquote").text for p in passages) == [
        HELIOS,
        NOVA,
    ]
    assert all("fact added through the API" in p.text for p in passages)
    helios = browser.find_element(
        By.XPATH, f"//div[@class='entity-facts']//li[button[text()='{HELIOS}']]"
    )
    # Its versions open from the row: both stored versions, the current one marked.
    summary = helios.find_element(By.CSS_SELECTOR, "details.versions summary")
    assert summary.text == "2 versions"
    summary.click()
    versions = helios.find_elements(By.CSS_SELECTOR, "details.versions li")
    assert len(versions) == 2
    current = [v.text for v in versions if "current" in v.get_attribute("class")]
    assert len(current) == 1 and current[0].startswith("2022-01-10 → 2024-05-01"), current
    screenshot(browser, "panel-versions")

    # As known before Nova: one Helios row (the version then believed, open-ended) and no Nova.
    set_slider(browser, "known-time", before)
    wait_for(
        browser,
        f"return !document.querySelector('#detail .entity-facts').textContent.includes({NOVA!r})",
    )
    assert rows(browser) == [HELIOS], browser.execute_script(
        "return [window.kgExplorer.state.knownAt, [...window.kgExplorer.state.facts.values()].map(f => f.created_at)]"
    )
    # Both ends of the fact then believed are drawn with it.
    assert browser.execute_script("return window.kgExplorer.state.visible") == {
        "nodes": 2,
        "edges": 1,
    }
    bar = browser.find_element(By.CSS_SELECTOR, "#detail .entity-facts .validity")
    assert "→ now" in bar.get_attribute("title")

    # The row opens the fact, with its supersession chain.
    browser.find_element(By.CSS_SELECTOR, "#detail .entity-facts ul.facts > li > button").click()
    wait_for(browser, "return document.querySelectorAll('#detail ol.chain li').length >= 2")
    chain = browser.find_element(By.CSS_SELECTOR, "#detail ol.chain").text
    assert HELIOS in chain and NOVA in chain
