"""Comparing two moments in the explorer, in a real browser: the facts added, ended and
changed are highlighted on the graph and listed in the panel, which exports them as CSV;
clearing the comparison gives the sliders the graph back.

With KG_DOCS_SCREENSHOTS=1 the screenshot of the diff view is also written to
docs/img/diff.png (the README's)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.browser.conftest import screenshot, wait_for
from tests.browser.test_explorer import open_explorer

pytestmark = pytest.mark.django_db(transaction=True)

HELIOS = "Rosa Diaz works at Helios Labs."
NOVA = "Rosa Diaz works at Nova Systems."
LISBON = "Rosa Diaz lives in Lisbon."
BACK = "Rosa Diaz moved back to <b>Lisbon</b>."  # markup: shown as text
EVE = "Rosa Diaz knows Eve Park."
LEARNED = datetime(2025, 1, 2, tzinfo=UTC)


def at(year: int, month: int, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def rosa_story(tenant) -> None:
    """Rosa left Helios for Nova in May 2024, lived in Lisbon until 2023 and again from
    September 2023, and has known Eve since 2021 (that never changes)."""
    graph = tenant_graph(tenant)
    entities = (
        ("rosa", "Rosa Diaz", "Person"),
        ("helios", "Helios Labs", "Organization"),
        ("nova", "Nova Systems", "Organization"),
        ("lisbon", "Lisbon", "Location"),
        ("eve", "Eve Park", "Person"),
    )
    graph.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("entity", k),
                    "name": n,
                    "canonical_name": n.lower(),
                    "entity_type": t,
                }
                for k, n, t in entities
            ]
        },
    )
    facts = (
        ("helios", "WORKS_AT", "helios", HELIOS, at(2022, 1, 10), at(2024, 5, 1)),
        ("nova", "WORKS_AT", "nova", NOVA, at(2024, 5, 1), None),
        ("lisbon1", "LIVES_IN", "lisbon", LISBON, at(2020, 1, 1), at(2023, 3, 1)),
        ("lisbon2", "LIVES_IN", "lisbon", BACK, at(2023, 9, 1), None),
        ("eve", "KNOWS", "eve", EVE, at(2021, 1, 1), None),
    )
    graph.query(
        queries.FACTS_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("relates_to", k),
                    "in": RecordID("entity", "rosa"),
                    "out": RecordID("entity", o),
                    "relation": r,
                    "fact": f,
                    "valid_at": v,
                    "invalid_at": i,
                    "created_at": LEARNED,
                }
                for k, r, o, f, v, i in facts
            ]
        },
    )
    graph.query(
        queries.ENTITY_DEGREE_RECOUNT, {"ids": [RecordID("entity", k) for k, *_ in entities]}
    )


def compare(browser, axis: str, start: str, end: str) -> None:
    browser.execute_script(
        """
        const [axis, start, end] = arguments;
        document.getElementById('diff-axis').value = axis;
        document.getElementById('diff-from').value = start;
        document.getElementById('diff-to').value = end;
    """,
        axis,
        start,
        end,
    )
    browser.find_element(By.ID, "diff-run").click()
    wait_for(
        browser,
        "return document.querySelector('#detail .diff') !== null"
        " && document.getElementById('status').textContent.includes('changed')",
    )


def marked(browser) -> dict[str, list[str]]:
    """kind -> the statements of the edges (and names of the nodes) marked with it."""
    return browser.execute_script("""
        const {cy} = window.kgExplorer;
        const out = {};
        for (const kind of ['added', 'ended', 'changed']) {
          out[kind] = cy.edges('.diff-' + kind).filter(e => e.visible()).map(e => e.data('fact')).sort();
          out[kind + ' nodes'] = cy.nodes('.diff-' + kind).map(n => n.data('label')).sort();
        }
        return out;
    """)


def listed(browser) -> dict[str, list[str]]:
    return browser.execute_script("""
        const out = {};
        for (const list of document.querySelectorAll('#detail .diff-list')) {
          const kind = [...list.classList].find(c => c.startsWith('diff-') && c !== 'diff-list');
          out[kind] = [...list.querySelectorAll('li > button')].map(b => b.textContent);
        }
        out.headings = [...document.querySelectorAll('#detail .diff h3')].map(h => h.textContent);
        return out;
    """)


def test_compare_two_moments_highlights_lists_and_exports(
    make_tenant, member, web_server, browser, log_in
) -> None:
    tenant = make_tenant()
    reader = member(tenant, Role.VIEWER)  # reading is enough to compare
    rosa_story(tenant)
    log_in(reader)
    browser.set_window_size(1440, 900)  # the README's screenshot
    open_explorer(browser, web_server, tenant.slug)

    # The bar opens with the moments filled in: the valid slider is at now, so the first
    # half of the tenant's span against the second: the middle of its facts' times
    # (2020-01-01 to 2024-05-01), and their end.
    browser.find_element(By.ID, "compare").click()
    assert browser.find_element(By.ID, "diff-bar").is_displayed()
    opened = browser.execute_script(
        "return [document.getElementById('diff-from').value, document.getElementById('diff-to').value]"
    )
    middle = at(2020, 1, 1) + (at(2024, 5, 1) - at(2020, 1, 1)) / 2
    assert opened == [middle.strftime("%Y-%m-%dT%H:%M"), "2024-05-01T00:00"], opened

    compare(browser, "valid", "2023-01-01T00:00:00", "2024-06-01T00:00:00")
    assert marked(browser) == {
        "added": [NOVA],
        "added nodes": ["Nova Systems", "Rosa Diaz"],
        "ended": [HELIOS],
        "ended nodes": ["Helios Labs", "Rosa Diaz"],
        "changed": sorted([BACK, LISBON]),
        "changed nodes": ["Lisbon", "Rosa Diaz"],
    }
    # Eve never changed: drawn, not marked.
    assert browser.execute_script(
        "return window.kgExplorer.cy.edges().filter(e => e.data('fact') === arguments[0])"
        ".map(e => e.classes().filter(c => c.startsWith('diff-')))",
        EVE,
    ) == [[]]
    assert listed(browser) == {
        "diff-added": [NOVA],
        "diff-ended": [HELIOS],
        "diff-changed": [BACK],
        "headings": ["Added (1)", "Ended (1)", "Changed (1)"],
    }
    change = browser.find_element(By.CSS_SELECTOR, "#detail .diff-list.diff-changed .was").text
    assert change.startswith("fact, valid_at, invalid_at changed; was: " + LISBON)
    assert browser.find_elements(By.CSS_SELECTOR, "#detail .diff b") == []  # text, not markup

    # The CSV link carries the same comparison and downloads with the reader's session.
    href = browser.find_element(By.ID, "diff-csv").get_attribute("href")
    assert f"/api/v1/t/{tenant.slug}/graph/diff.csv?" in href and "axis=valid" in href
    assert "from=2023-01-01T00%3A00%3A00.000Z" in href
    csv_text = browser.execute_script(
        "return fetch(arguments[0], {credentials: 'same-origin'}).then(r => r.text())", href
    )
    lines = csv_text.splitlines()
    assert lines[0].startswith("change,fact_id,source,relation,target,fact")
    assert sorted(line.split(",")[0] for line in lines[1:]) == ["added", "changed", "ended"]

    path = screenshot(browser, "diff")
    if os.environ.get("KG_DOCS_SCREENSHOTS"):
        docs = Path(settings.BASE_DIR) / "docs" / "img"
        docs.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, docs / "diff.png")

    # A row opens its fact in the panel.
    row = browser.find_element(By.CSS_SELECTOR, "#detail .diff-list.diff-ended li > button")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    row.click()
    wait_for(
        browser,
        f"return document.querySelector('#detail h2').textContent === 'WORKS_AT'"
        f" && document.querySelector('#detail p').textContent === {HELIOS!r}",
    )

    # Clearing removes every mark; the slider (at now) hides the facts that ended.
    browser.find_element(By.ID, "diff-clear").click()
    wait_for(
        browser,
        "return window.kgExplorer.cy.elements('.diff-added, .diff-ended, .diff-changed')"
        ".length === 0",
    )
    assert browser.execute_script("return window.kgExplorer.state.diff") is None
    visible = """const {cy} = window.kgExplorer;
        return cy.edges().filter(e => e.visible()).map(e => e.data('fact')).sort();"""
    expected = sorted([NOVA, BACK, EVE])
    # The slider filters after the marks go: on a loaded machine, a moment later.
    with contextlib.suppress(TimeoutException):
        wait_for(
            browser,
            f"return JSON.stringify((() => {{ {visible} }})()) === "
            f"{json.dumps(json.dumps(expected, separators=(',', ':')))};",
            timeout=5,
        )
    assert browser.execute_script(visible) == expected


def test_a_comparison_brings_in_facts_not_loaded(
    make_tenant, member, web_server, browser, log_in
) -> None:
    """On the known axis, from before the graph learned anything: everything is added,
    drawn even when the explorer had none of it loaded."""
    tenant = make_tenant()
    reader = member(tenant, Role.VIEWER)
    rosa_story(tenant)
    log_in(reader)
    open_explorer(browser, web_server, tenant.slug)
    browser.execute_script("window.kgExplorer.clear()")
    browser.find_element(By.ID, "compare").click()
    now = datetime.now(UTC).isoformat()[:19]
    compare(browser, "known", "2024-12-01T00:00:00", now)
    got = marked(browser)
    assert got["added"] == sorted([HELIOS, NOVA, LISBON, BACK, EVE])
    assert got["ended"] == [] and got["changed"] == []
    assert got["added nodes"] == ["Eve Park", "Helios Labs", "Lisbon", "Nova Systems", "Rosa Diaz"]
    # A moment left empty: the status line says what to do.
    compare_bad = browser.execute_script("""
        document.getElementById('diff-from').value = '';
        document.getElementById('diff-run').click();
        return document.getElementById('status').textContent;""")
    assert compare_bad == "Pick both moments to compare (date and time, UTC)."
