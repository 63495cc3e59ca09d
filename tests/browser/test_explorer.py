"""The explorer in a real browser: live updates, the two time sliders, text safety,
catching up after a dropped socket, and role-dependent upload controls."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from kgapp.graph.records import record_key
from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.browser.conftest import screenshot, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def post(client, url: str, body: dict[str, Any]):
    response = client.post(url, data=json.dumps(body), content_type="application/json")
    assert response.status_code in (201, 202), response.content
    return response.json()


def labels(browser) -> set[str]:
    return set(
        browser.execute_script("return window.kgExplorer.cy.nodes().map(n => n.data('label'))")
    )


def shown_facts(browser) -> dict[str, str]:
    """fact text -> 'on' | 'past' | 'off' for every fact loaded in the browser."""
    return browser.execute_script("""
        const {state} = window.kgExplorer;
        return Object.fromEntries([...state.facts].map(
            ([id, fact]) => [fact.data.fact, state.shown.get(id) ?? 'off']));
    """)


def set_slider(browser, slider: str, moment: datetime | None) -> None:
    """Drag a time slider to `moment` (None: all the way right, now)."""
    browser.execute_script(
        """
        const [id, iso] = arguments;
        const input = document.getElementById(id);
        const {state} = window.kgExplorer;
        const {start, end} = id === 'known-time' ? state.knownSpan : state.span;
        input.value = iso === null ? 1000
            : Math.floor((Date.parse(iso) - start) / (end - start) * 1000);
        input.dispatchEvent(new Event('input', {bubbles: true}));
    """,
        slider,
        moment.isoformat() if moment else None,
    )


def open_explorer(browser, web_server: str, slug: str) -> None:
    browser.get(f"{web_server}/t/{slug}/explore")
    wait_for(browser, "return document.getElementById('status').textContent === 'Live'")


def test_uploads_appear_live_and_the_sliders_travel_in_time(
    make_tenant, member, token_client, web_server, browser, log_in, eager
) -> None:
    tenant = make_tenant(name="Alice's company")
    editor = member(tenant, Role.EDITOR)
    client = token_client(editor)
    log_in(editor)
    open_explorer(browser, web_server, tenant.slug)
    base = f"/api/v1/t/{tenant.slug}"

    post(
        client,
        f"{base}/episodes",
        {"content": "Alice works at Acme Corp.", "reference_time": "2024-01-15T00:00:00Z"},
    )
    between = datetime.now(UTC)
    post(
        client,
        f"{base}/episodes",
        {"content": "Alice joined Beta Inc last month.", "reference_time": "2024-03-10T00:00:00Z"},
    )
    # Without reloading: the three entities arrive through the socket.
    wait_for(
        browser,
        """
        const names = window.kgExplorer.cy.nodes().map(n => n.data('label'));
        return ['Alice', 'Acme Corp', 'Beta Inc'].every(n => names.includes(n));
    """,
    )
    acme, beta = "Alice works at Acme Corp.", "Alice joined Beta Inc."
    wait_for(browser, "return window.kgExplorer.cy.edges().length >= 2")

    set_slider(browser, "valid-time", datetime(2024, 1, 20, tzinfo=UTC))
    facts = shown_facts(browser)
    assert facts[acme] == "on" and facts[beta] == "off", facts
    set_slider(browser, "valid-time", datetime(2024, 4, 1, tzinfo=UTC))
    facts = shown_facts(browser)
    assert facts[beta] == "on" and facts[acme] == "off", facts
    screenshot(browser, "explorer-april-2024")

    # As known before the second upload, Beta did not exist at any valid time.
    set_slider(browser, "known-time", between)
    for moment in (datetime(2024, 1, 20, tzinfo=UTC), datetime(2024, 4, 1, tzinfo=UTC), None):
        set_slider(browser, "valid-time", moment)
        facts = shown_facts(browser)
        assert facts[beta] == "off", (moment, facts)
        beta_node = browser.execute_script(
            "const n = window.kgExplorer.cy.nodes().filter(n => n.data('label') === 'Beta Inc');"
            "return n.hasClass('gone');"
        )
        assert beta_node, moment
    # As known now, in April, Acme is history: drawn dashed when history is shown.
    set_slider(browser, "known-time", None)
    set_slider(browser, "valid-time", datetime(2024, 4, 1, tzinfo=UTC))
    browser.find_element(By.ID, "show-history").click()
    assert shown_facts(browser)[acme] == "past"
    # Alice's details: her facts by relation, and the passages that mention her.
    browser.execute_script(
        "window.kgExplorer.cy.nodes().filter(n => n.data('label') === 'Alice').emit('tap')"
    )
    wait_for(browser, "return document.querySelectorAll('#detail blockquote').length === 2")
    assert "Alice joined Beta Inc." in browser.find_element(By.ID, "detail").text
    screenshot(browser, "explorer")


def test_names_with_markup_are_shown_as_text(
    make_tenant, member, token_client, web_server, browser, log_in
) -> None:
    tenant = make_tenant()
    editor = member(tenant, Role.EDITOR)
    client = token_client(editor)
    hostile = ['<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=2</script>"]
    post(
        client,
        f"/api/v1/t/{tenant.slug}/facts",
        {
            "source": {"name": hostile[0], "type": "Person"},
            "relation": "KNOWS",
            "target": {"name": hostile[1], "type": "Person"},
            "fact": f"{hostile[0]} knows {hostile[1]}",
        },
    )
    log_in(editor)
    open_explorer(browser, web_server, tenant.slug)
    assert set(hostile) <= labels(browser)
    search = browser.find_element(By.ID, "entity-search")
    search.send_keys("<img")
    wait_for(browser, "return document.querySelectorAll('#suggestions li').length > 0")
    assert browser.find_element(By.CSS_SELECTOR, "#suggestions li").text.startswith(hostile[0])
    browser.find_element(By.CSS_SELECTOR, "#suggestions li").click()
    wait_for(browser, "return document.querySelector('#detail h3') !== null")
    detail = browser.find_element(By.ID, "detail")
    assert hostile[0] in detail.text
    assert not browser.find_elements(
        By.CSS_SELECTOR, "#detail img, #suggestions img, #detail script"
    )
    assert browser.execute_script("return window.__pwned") is None


def test_after_a_dropped_socket_the_screen_equals_the_database(
    make_tenant, member, token_client, web_server, browser, log_in, eager
) -> None:
    tenant = make_tenant()
    editor = member(tenant, Role.EDITOR)
    client = token_client(editor)
    base = f"/api/v1/t/{tenant.slug}"
    post(client, f"{base}/episodes", {"content": "Nora works at Orbital Labs."})
    log_in(editor)
    open_explorer(browser, web_server, tenant.slug)
    # Drop the socket and keep it down while more is ingested.
    browser.execute_script("""
        window.kgExplorer.socket.close();
        window.__realWebSocket = window.WebSocket;
        window.WebSocket = function () { throw new Error('offline'); };
    """)
    for text in (
        "Omar works at Orbital Labs.",
        "Paula works at Quantum Labs.",
        "Nora knows Paula.",
        "Nora left Orbital Labs in March 2024.",
    ):
        post(client, f"{base}/episodes", {"content": text})
    browser.execute_script("window.WebSocket = window.__realWebSocket;")  # back online
    wait_for(browser, "return document.getElementById('status').textContent === 'Live'", 30)

    graph = tenant_graph(tenant)
    facts = graph.query("SELECT id, expired_at FROM relates_to")[0]
    entities = graph.query("SELECT VALUE id FROM entity WHERE merged_into = NONE")[0]
    on_screen = browser.execute_script("""
        const {cy, state} = window.kgExplorer;
        return {nodes: cy.nodes().map(n => n.id()),
                edges: cy.edges().map(e => [e.id(), state.facts.get(e.id()).expired_at !== Infinity])};
    """)
    assert sorted(on_screen["nodes"]) == sorted(record_key(e) for e in entities)
    assert sorted(map(tuple, on_screen["edges"])) == sorted(
        (record_key(f["id"]), f["expired_at"] is not None) for f in facts
    )


def test_viewers_get_no_upload_controls(make_tenant, member, web_server, browser, log_in) -> None:
    tenant = make_tenant()
    viewer, editor = member(tenant, Role.VIEWER), member(tenant, Role.EDITOR)
    log_in(viewer)
    browser.get(f"{web_server}/t/{tenant.slug}/uploads")
    wait_for(browser, "return document.getElementById('jobs') !== null")
    assert not browser.find_elements(By.ID, "drop")
    assert "you can follow uploads" in browser.find_element(By.TAG_NAME, "main").text
    browser.delete_all_cookies()
    log_in(editor)
    browser.get(f"{web_server}/t/{tenant.slug}/uploads")
    assert browser.find_elements(By.ID, "drop")


# A graph too large for the browser's layout: 1,500 entities and 3,000 facts, a third of
# them ended, built in the page as the API would send them.
LARGE = """
const [nodes, edges, done] = arguments;
const {merge, applyTime, layout, cy} = window.kgExplorer;
merge(nodes, edges);
applyTime();
cy.one('layoutstop', () => requestAnimationFrame(() => done(true)));
layout(null, {fit: true});
"""


def test_large_graphs_are_laid_out_by_the_server_and_filtered_in_time(
    make_tenant, member, web_server, browser, log_in
) -> None:
    tenant = make_tenant()
    log_in(member(tenant, Role.VIEWER))
    open_explorer(browser, web_server, tenant.slug)
    day = 86_400_000
    start = int(datetime(2021, 1, 1, tzinfo=UTC).timestamp() * 1000)
    nodes = [{"id": f"entity:n{i}", "name": f"E{i}", "entity_type": "Person"} for i in range(1500)]
    spans = []
    for i in range(3000):
        valid = start + (i * 7919 % 1000) * day
        ended = valid + 100 * day if i % 3 == 0 else None
        spans.append((valid, ended))
    iso = lambda ms: datetime.fromtimestamp(ms / 1000, UTC).isoformat()  # noqa: E731
    edges = [
        {
            "id": f"relates_to:f{i}",
            "source": f"entity:n{i % 1500}",
            "target": f"entity:n{(i * 13 + 1) % 1500}",
            "relation": "KNOWS",
            "fact": f"fact {i}",
            "valid_at": iso(valid),
            "invalid_at": iso(ended) if ended else None,
            "created_at": iso(start),
            "expired_at": None,
        }
        for i, (valid, ended) in enumerate(spans)
    ]
    browser.set_script_timeout(120)
    assert browser.execute_async_script(LARGE, nodes, edges)

    current = sum(1 for _, ended in spans if ended is None)
    view = browser.execute_script("""
        const {cy, state} = window.kgExplorer;
        const extent = cy.extent();
        const inView = cy.nodes().filter(n => { const p = n.position();
            return p.x >= extent.x1 && p.x <= extent.x2 && p.y >= extent.y1 && p.y <= extent.y2; });
        return {visible: state.visible.edges, inView: inView.length,
                spots: new Set(cy.nodes().map(n => `${n.position().x},${n.position().y}`)).size};
    """)
    # Laid out (1,500 distinct places) and fitted (all in view); now shows current facts.
    assert view == {"visible": current, "inView": 1500, "spots": 1500}, view
    # The facts hidden now are added to the graph in the background, hidden.
    wait_for(browser, "return [...window.kgExplorer.state.facts.values()].every(f => f.ele)")
    assert (
        browser.execute_script("return window.kgExplorer.cy.edges('.gone').length")
        == 3000 - current
    )

    set_slider(browser, "valid-time", datetime(2022, 6, 1, tzinfo=UTC))
    as_of = browser.execute_script("return window.kgExplorer.state.asOf")
    expected = sum(
        1 for valid, ended in spans if valid <= as_of and (ended is None or as_of < ended)
    )
    shown = browser.execute_script("""
        const {cy, state} = window.kgExplorer;
        return [state.visible.edges, cy.edges().not('.gone').length];
    """)
    assert shown == [expected, expected] and 0 < expected < current, (shown, expected)
    screenshot(browser, "explorer-large-june-2022")
