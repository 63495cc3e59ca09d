"""Export and import on the tenant page in a real browser: every member gets the moment
downloads; an owner of an empty tenant picks an export and watches it load (or fail,
saying why, with nothing kept); the form is gone once the tenant holds a graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from kgapp.graph.export.jsonl import export_lines
from tenants.models import Role
from tenants.transfer import tenant_meta
from tenants.wiring import tenant_graph
from tests.browser.conftest import screenshot, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def small_graph(tenant) -> None:
    tenant_graph(tenant).query("""
        CREATE entity:ines CONTENT {name: 'Ines Costa', canonical_name: 'ines costa',
            entity_type: 'Person'};
        CREATE entity:orbit CONTENT {name: 'Orbit Ltd', canonical_name: 'orbit ltd',
            entity_type: 'Organization'};
        RELATE entity:ines->relates_to->entity:orbit CONTENT {relation: 'WORKS_AT',
            fact: 'Ines Costa works at Orbit Ltd.'};
    """)


async def _lines(store, meta) -> list[bytes]:
    return [line async for line in export_lines(store, meta)]


def export_file(tenant, path: Path) -> Path:
    path.write_bytes(b"".join(tenant_graph(tenant).run(_lines, tenant_meta(tenant))))
    return path


def facts_count(browser) -> str:
    return browser.execute_script(
        "return [...document.querySelectorAll('.counts div')]"
        ".find((d) => d.querySelector('dt').textContent === 'facts')"
        "?.querySelector('dd').textContent"
    )


def test_an_owner_imports_an_export_into_an_empty_tenant(
    make_tenant, member, web_server, browser, log_in, tmp_path
) -> None:
    source, target = make_tenant(), make_tenant()
    small_graph(source)
    good = export_file(source, tmp_path / "orbit.jsonl")
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(good.read_bytes().replace(b"Orbit Ltd.", b"Orbit plc.", 1))
    log_in(member(target, Role.OWNER))
    browser.get(f"{web_server}/t/{target.slug}/")
    assert facts_count(browser) == "0"

    browser.find_element(By.ID, "import-file").send_keys(str(damaged))
    browser.find_element(By.ID, "import-submit").click()
    said = wait_for(
        browser,
        "const t = document.getElementById('import-status').textContent;"
        " return t.includes('failed') && t",
    )
    assert "checksum" in said and "nothing was kept" in said

    browser.find_element(By.ID, "import-file").clear()
    browser.find_element(By.ID, "import-file").send_keys(str(good))
    browser.find_element(By.ID, "import-submit").click()
    wait_for(browser, "return !document.getElementById('import-form')", timeout=30)
    assert facts_count(browser) == "1"
    screenshot(browser, "tenant-imported")
    links = {a.get_attribute("id") for a in browser.find_elements(By.CSS_SELECTOR, "#transfer a")}
    assert links == {"export-graphml", "export-facts", "export-entities", "export-jsonl"}


def test_a_viewer_gets_the_moment_downloads_only(
    make_tenant, member, web_server, browser, log_in
) -> None:
    tenant = make_tenant()
    log_in(member(tenant, Role.VIEWER))
    browser.get(f"{web_server}/t/{tenant.slug}/")
    links = {a.get_attribute("id") for a in browser.find_elements(By.CSS_SELECTOR, "#transfer a")}
    assert links == {"export-graphml", "export-facts", "export-entities"}
    assert not browser.find_elements(By.ID, "import-form")
    # The link downloads what the API serves to this viewer's session.
    href = browser.find_element(By.ID, "export-facts").get_attribute("href")
    text = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {credentials: 'same-origin'}).then((r) => r.text()).then(done);",
        href,
    )
    assert text.splitlines()[0].startswith("fact_id,source_id")
