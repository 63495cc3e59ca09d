"""The retention page in a real browser: an owner previews a policy, sees what it would
remove, saves it, runs it and finds the archive listed; nobody below owner gets the page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from selenium.webdriver.common.by import By

from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.browser.conftest import screenshot, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def aged_graph(tenant) -> None:
    """Two facts, one retired 40 days ago, and an episode stored 100 days ago."""
    now = datetime.now(UTC)
    tenant_graph(tenant).query(
        """
        CREATE entity:ines CONTENT {name: 'Ines', canonical_name: 'ines', entity_type: 'Person'};
        CREATE entity:orbit CONTENT {name: 'Orbit Ltd', canonical_name: 'orbit ltd', entity_type: 'Organization'};
        CREATE entity:delta CONTENT {name: 'Delta', canonical_name: 'delta', entity_type: 'Organization'};
        RELATE entity:ines->relates_to->entity:orbit CONTENT {relation: 'WORKS_AT',
            fact: 'Ines works at Orbit Ltd.', expired_at: $ended};
        RELATE entity:ines->relates_to->entity:delta CONTENT {relation: 'WORKS_AT',
            fact: 'Ines works at Delta.'};
        CREATE episode:talk CONTENT {content: 'Ines chatted about the weather.', content_hash: 'h',
            created_at: $old};
    """,
        {"ended": now - timedelta(days=40), "old": now - timedelta(days=100)},
    )


def count(browser, key: str) -> str:
    return browser.execute_script(
        f"return document.querySelector('#preview-counts dd[data-count={key}]')?.textContent"
    )


def test_the_owner_previews_saves_runs_and_sees_the_archive(
    make_tenant, member, web_server, browser, log_in
) -> None:
    tenant = make_tenant()
    owner = member(tenant, Role.OWNER)
    aged_graph(tenant)
    log_in(owner)
    browser.get(f"{web_server}/t/{tenant.slug}/")
    browser.find_element(By.ID, "retention-link").click()
    wait_for(
        browser,
        "return document.getElementById('current-policy').textContent === 'keep everything'",
    )
    assert browser.find_element(By.ID, "save").get_attribute("disabled") is not None

    browser.find_element(By.CSS_SELECTOR, "input[name=mode][value=drop]").click()
    browser.find_element(By.ID, "facts-days").send_keys("30")
    browser.find_element(By.ID, "episodes-days").send_keys("30")
    browser.find_element(By.ID, "preview").click()
    wait_for(browser, "return !document.getElementById('preview-card').hidden")
    assert count(browser, "facts") == "1" and count(browser, "episodes") == "1"
    sample = browser.find_element(By.ID, "preview-sample").text
    assert "Ines works at Orbit Ltd." in sample and "Ines works at Delta." not in sample
    assert "weather" in sample
    screenshot(browser, "retention-preview")
    # Previewing changed nothing, and the policy is not on until saved.
    assert len(tenant_graph(tenant).query("SELECT id FROM relates_to")[0]) == 2
    tenant.refresh_from_db()
    assert tenant.retention_mode == "keep_all"

    browser.find_element(By.ID, "save").click()
    wait_for(
        browser,
        "return document.getElementById('current-policy').textContent.startsWith('drop facts')",
    )
    tenant.refresh_from_db()
    assert (tenant.retention_mode, tenant.retention_facts_ended_days) == ("drop", 30)

    browser.find_element(By.ID, "run").click()
    wait_for(
        browser,
        "return document.getElementById('retention-status').textContent.startsWith('Run completed')",
        60,
    )
    wait_for(browser, "return document.querySelector('#archives a') !== null")
    link = browser.find_element(By.CSS_SELECTOR, "#archives a")
    assert link.text.startswith("retention-") and link.text.endswith(".jsonl.gz")
    history = browser.find_element(By.ID, "history").text
    assert "run: removed" in history and "policy: keep everything" in history
    assert tenant_graph(tenant).query("SELECT VALUE fact FROM relates_to")[0] == [
        "Ines works at Delta."
    ]
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    screenshot(browser, "retention-run")


def test_members_below_owner_get_no_page_and_no_link(
    make_tenant, member, web_server, browser, log_in
) -> None:
    tenant, other = make_tenant(), make_tenant()
    curator = member(tenant, Role.CURATOR)
    log_in(curator)
    browser.get(f"{web_server}/t/{tenant.slug}/")
    assert browser.find_elements(By.ID, "retention-link") == []
    browser.get(f"{web_server}/t/{tenant.slug}/retention")
    assert "only an owner" in browser.page_source
    assert browser.find_elements(By.ID, "retention") == []
    # An owner of another tenant gets the same page as for a tenant that does not exist.
    log_in(member(other, Role.OWNER))
    browser.get(f"{web_server}/t/{tenant.slug}/retention")
    assert browser.find_elements(By.ID, "retention") == [] and "no tenant" in browser.page_source
