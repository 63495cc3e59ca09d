"""The explorer on real graphs (issue 28), in a real browser: the first view of a
conversation (its named things shown, its leaf topics folded, no two names overlapping),
type colours that are the same in every tenant, the panel and the sliders at a past
moment, live ingest settling into the layout, and an empty tenant saying how to fill it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from selenium.webdriver.common.by import By
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from tenants import services
from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.browser.conftest import screenshot, wait_for
from tests.browser.test_explorer import open_explorer, set_slider

pytestmark = pytest.mark.django_db(transaction=True)

CHAT = Path(__file__).resolve().parents[1] / "data" / "locomo_like.json"

OVERLAPS = "return window.kgExplorer.overlappingLabels()"
NODES = """
return window.kgExplorer.cy.nodes().filter(n => n.visible()).map(n => ({
    label: n.data('label'), fold: n.hasClass('fold'), drawn: Boolean(n.pstyle('label').strValue),
    colour: n.data('colour'), type: n.data('type')}));
"""
WHEN = datetime(2024, 1, 1, tzinfo=UTC)


def E(key: str) -> RecordID:
    return RecordID("entity", key)


def settle(browser, ms: int = 500) -> None:
    """Let the page finish what it does after a change (placing nodes and names)."""
    browser.execute_async_script(f"setTimeout(arguments[arguments.length - 1], {ms})")


def nodes(browser) -> list[dict[str, Any]]:
    return browser.execute_script(NODES)


def build(
    tenant,
    entities: dict[str, tuple[str, str]],
    facts: list[tuple[str, str, str]],
    mentions: dict[str, int],
) -> None:
    """A graph written as ingestion leaves one: entities (key -> name, type), facts
    (subject, relation, object) valid from 2024, and each entity mentioned by
    `mentions[key]` episodes of its own."""
    graph = tenant_graph(tenant)
    graph.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {"id": E(k), "name": n, "canonical_name": n.casefold(), "entity_type": t}
                for k, (n, t) in entities.items()
            ]
        },
    )
    graph.query(
        queries.FACTS_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("relates_to", f"f{i}"),
                    "in": E(a),
                    "out": E(b),
                    "relation": r,
                    "fact": f"{entities[a][0]} {r.lower().replace('_', ' ')} {entities[b][0]}.",
                    "valid_at": WHEN,
                    "created_at": WHEN,
                }
                for i, (a, r, b) in enumerate(facts)
            ]
        },
    )
    graph.query(queries.ENTITY_DEGREE_RECOUNT, {"ids": [E(k) for k in entities]})
    number = 0
    for key, times in mentions.items():
        for _ in range(times):
            number += 1
            episode = RecordID("episode", f"p{number}")
            graph.query(
                "CREATE $e SET content = 'said', source = 'message', valid_at = $w, "
                "content_hash = type::string($e); RELATE $e->mentions->$x;",
                {"e": episode, "w": WHEN, "x": E(key)},
            )


# Two speakers and what a long chat leaves: many common nouns at the end of one fact
# each (said once), named places and a book talked about often but in no fact, a friend.
GENERIC = [
    "need",
    "top",
    "mix",
    "left",
    "bit",
    "thing",
    "way",
    "lot",
    "kind",
    "idea",
    "stuff",
    "time",
    "week",
    "day",
    "part",
    "place",
    "side",
    "end",
]
SPEAKERS = {"jolene": ("Jolene", "Person"), "deb": ("Deborah", "Person")}
NAMED = {
    "bali": ("Bali", "Location"),
    "sapiens": ("Sapiens", "Document"),
    "paris": ("Paris", "Location"),
    "pomodoro": ("Pomodoro Technique", "Concept"),
    "seraphim": ("Seraphim", "Person"),
    "anna": ("Anna", "Person"),
}


def chat_graph(tenant) -> None:
    entities = {**SPEAKERS, **NAMED, **{g: (g, "Concept") for g in GENERIC}}
    facts = [("jolene", "MENTIONS", g) for g in GENERIC[:12]]
    facts += [("deb", "MENTIONS", g) for g in GENERIC[12:]]
    facts += [("jolene", "KNOWS", "anna"), ("deb", "KNOWS", "jolene")]
    mentions = {
        "jolene": 60,
        "deb": 60,
        "bali": 6,
        "sapiens": 5,
        "paris": 4,
        "pomodoro": 3,
        "seraphim": 3,
        "anna": 2,
        **dict.fromkeys(GENERIC, 1),
    }
    build(tenant, entities, facts, mentions)


def test_a_chat_shows_its_named_things_folds_its_topics_and_no_names_overlap(
    make_tenant, member, web_server, browser, log_in
) -> None:
    tenant = make_tenant(name="Chat")
    chat_graph(tenant)
    log_in(member(tenant, Role.VIEWER))
    open_explorer(browser, web_server, tenant.slug)
    settle(browser)
    shown = {n["label"]: n for n in nodes(browser)}
    # The named things are in the first view, though no fact names most of them.
    assert {name for name, _ in NAMED.values()} <= set(shown), sorted(shown)
    # Jolene's twelve topics fold into one node; Deborah's six too; no topic on its own.
    assert shown["12 topics of Jolene"]["fold"] and shown["6 topics of Deborah"]["fold"]
    assert not set(GENERIC) & set(shown)
    assert browser.execute_script(OVERLAPS) == []
    screenshot(browser, "explorer-chat-folded")

    # A click opens a fold: its topics are drawn on their own, with their facts.
    browser.execute_script("window.kgExplorer.cy.getElementById('fold:entity:jolene').emit('tap')")
    settle(browser)
    shown = {n["label"]: n for n in nodes(browser)}
    assert set(GENERIC[:12]) <= set(shown) and "12 topics of Jolene" not in shown
    assert browser.execute_script("return window.kgExplorer.state.visible.edges") == 14
    assert browser.execute_script(OVERLAPS) == []
    # Zoomed out, names keep their size on screen: those with no room wait, and none of
    # those drawn overlaps another.
    zoom = "const {cy} = window.kgExplorer; cy.zoom({level: cy.zoom() * arguments[0], renderedPosition: cy.getElementById('entity:jolene').renderedPosition()});"
    browser.execute_script(zoom, 1 / 4)
    settle(browser)
    far = {n["label"]: n["drawn"] for n in nodes(browser)}
    assert browser.execute_script(OVERLAPS) == []
    assert far["Jolene"] and not all(far.values()), far
    # Zoomed in, more names have room, and still none overlaps.
    browser.execute_script(zoom, 8)
    settle(browser)
    near = {n["label"]: n["drawn"] for n in nodes(browser)}
    assert sum(near.values()) > sum(far.values())
    assert browser.execute_script(OVERLAPS) == []


def test_an_uploaded_chat_shows_everything_it_names_without_overlap(
    make_tenant, member, token_client, web_server, browser, log_in, eager
) -> None:
    tenant = make_tenant(name="Chat upload")
    editor = member(tenant, Role.EDITOR)
    answer = token_client(editor).post(
        f"/api/v1/t/{tenant.slug}/documents",
        {"files": [SimpleUploadedFile("chat.json", CHAT.read_bytes())]},
    )
    assert answer.status_code == 202, answer.content
    log_in(editor)
    open_explorer(browser, web_server, tenant.slug)
    settle(browser)
    names = set(
        tenant_graph(tenant).query("SELECT VALUE name FROM entity WHERE merged_into = NONE")[-1]
    )
    shown = {n["label"] for n in nodes(browser)}
    # A small chat: every entity it gave is drawn (or inside a fold).
    folded = browser.execute_script(
        "return [...window.kgExplorer.state.nodes].filter(([, n]) => n.folded).length"
    )
    assert len(shown - {n for n in shown if " topics of " in n}) + folded == len(names)
    assert {"Priya", "Tomasz"} <= shown
    assert browser.execute_script(OVERLAPS) == []


def test_each_type_has_the_same_colour_in_every_tenant(
    make_tenant, member, web_server, browser, log_in
) -> None:
    first, second = make_tenant(name="First"), make_tenant(name="Second")
    # The same types, met in other orders, and a type of their own ("Recipe").
    build(
        first,
        {
            "a": ("Ann", "Person"),
            "b": ("Bolt Ltd", "Organization"),
            "c": ("Shakshuka", "Recipe"),
            "d": ("Oslo", "Location"),
        },
        [("a", "WORKS_AT", "b"), ("a", "COOKS", "c"), ("b", "BASED_IN", "d")],
        {},
    )
    build(
        second,
        {
            "d": ("Lima", "Location"),
            "c": ("Ceviche", "Recipe"),
            "b": ("Bram", "Person"),
            "a": ("Acme", "Organization"),
        },
        [("b", "COOKS", "c"), ("a", "BASED_IN", "d"), ("b", "WORKS_AT", "a")],
        {},
    )
    user = member(first, Role.VIEWER)
    services.membership_set(tenant=second, user=user, role=Role.VIEWER)
    log_in(user)
    colours = []
    for tenant in (first, second, first):  # the first again: a new session of the page
        open_explorer(browser, web_server, tenant.slug)
        settle(browser)
        drawn = {n["type"]: n["colour"] for n in nodes(browser)}
        legend = {
            item.get_attribute("data-type"): item.get_attribute("data-colour")
            for item in browser.find_elements(By.CSS_SELECTOR, "#legend li")
        }
        assert drawn == legend
        colours.append(drawn)
    assert colours[0] == colours[1] == colours[2]
    assert len(set(colours[0].values())) == 4  # four types, four colours


def test_the_panel_and_the_sliders_follow_the_moment(
    make_tenant, member, web_server, browser, log_in
) -> None:
    tenant = make_tenant()
    at = lambda year, month=1: datetime(year, month, 1, tzinfo=UTC)  # noqa: E731
    graph = tenant_graph(tenant)
    graph.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {"id": E(k), "name": n, "canonical_name": n.lower(), "entity_type": t}
                for k, n, t in (
                    ("priya", "Priya", "Person"),
                    ("leeds", "Leeds", "Location"),
                    ("york", "York", "Location"),
                )
            ]
        },
    )
    graph.query(
        queries.FACTS_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("relates_to", k),
                    "in": E("priya"),
                    "out": E(o),
                    "relation": "LIVES_IN",
                    "fact": f,
                    "valid_at": v,
                    "invalid_at": i,
                    "created_at": at(2025),
                }
                for k, o, f, v, i in (
                    ("leeds", "leeds", "Priya lives in Leeds.", at(2019), at(2024, 6)),
                    ("york", "york", "Priya lives in York.", at(2024, 6), None),
                )
            ]
        },
    )
    log_in(member(tenant, Role.VIEWER))
    open_explorer(browser, web_server, tenant.slug)

    # The valid-time slider spans the facts (2019 to mid 2024) with a little margin, and
    # playing the whole of it takes about 20 seconds.
    span = browser.execute_script("return window.kgExplorer.state.span")
    start, end = (datetime.fromtimestamp(span[k] / 1000, UTC) for k in ("start", "end"))
    assert at(2018, 10) < start < at(2019) and at(2024, 6) < end < at(2024, 10)
    speed = browser.execute_script("return Number(document.getElementById('speed').value)")
    assert 15 <= 1000 / speed * 0.1 <= 25

    browser.execute_script("window.kgExplorer.cy.getElementById('entity:priya').emit('tap')")
    rows = "return [...document.querySelectorAll('#detail .facts > li')].map(li => [li.querySelector('.linkish').textContent, li.dataset.standing])"
    wait_for(browser, "return document.querySelectorAll('#detail .facts > li').length === 2")
    assert sorted(browser.execute_script(rows)) == [
        ["Priya lives in Leeds.", "ended"],
        ["Priya lives in York.", "holds"],
    ]
    set_slider(browser, "valid-time", at(2021))
    # The panel follows the slider: at 2021 the move to York is still to come.
    assert sorted(browser.execute_script(rows)) == [
        ["Priya lives in Leeds.", "holds"],
        ["Priya lives in York.", "not-yet"],
    ]
    said = browser.find_element(By.CSS_SELECTOR, "#detail li.not-yet .standing").text
    assert "not yet valid" in said and "2024-06-01" in said
    screenshot(browser, "explorer-panel-2021")


def test_an_empty_tenant_says_how_to_fill_it_and_live_nodes_settle(
    make_tenant, member, token_client, web_server, browser, log_in, eager
) -> None:
    tenant = make_tenant(name="Fresh")
    editor = member(tenant, Role.EDITOR)
    log_in(editor)
    open_explorer(browser, web_server, tenant.slug)
    hint = browser.find_element(By.ID, "empty-hint")
    assert hint.is_displayed() and "Upload" in hint.text
    link = hint.find_element(By.TAG_NAME, "a").get_attribute("href")
    assert link.endswith(f"/t/{tenant.slug}/uploads")

    client = token_client(editor)
    texts = [
        "Marta Kowalska works at Northwind Foods and lives in Gdansk.",
        "Marta Kowalska knows Jonas Berg. Jonas Berg works at Baltic Rail.",
        "Baltic Rail is based in Riga. Northwind Foods is based in Gdansk.",
    ]
    for number, text in enumerate(texts):
        answer = client.post(
            f"/api/v1/t/{tenant.slug}/episodes",
            data=json.dumps(
                {"content": text, "reference_time": f"2024-0{number + 1}-10T00:00:00Z"}
            ),
            content_type="application/json",
        )
        assert answer.status_code in (201, 202), answer.content
    wait_for(
        browser,
        """const names = window.kgExplorer.cy.nodes().map(n => n.data('label'));
        return ['Marta Kowalska', 'Baltic Rail', 'Riga'].every(n => names.includes(n));""",
        timeout=30,
    )
    settle(browser, 1200)
    assert not browser.find_element(By.ID, "empty-hint").is_displayed()
    # Settled, not piled: every two nodes apart, all in view, no names overlapping, with no
    # Relayout pressed.
    spread = browser.execute_script("""
        const {cy} = window.kgExplorer;
        const shown = cy.nodes().filter(n => n.visible()).map(n => n.renderedPosition());
        let closest = Infinity;
        for (let i = 0; i < shown.length; i += 1) for (let j = i + 1; j < shown.length; j += 1)
          closest = Math.min(closest, Math.hypot(shown[i].x - shown[j].x, shown[i].y - shown[j].y));
        const inView = shown.every(p => p.x >= 0 && p.y >= 0 && p.x <= cy.width() && p.y <= cy.height());
        return {count: shown.length, closest, inView};""")
    assert spread["count"] >= 5 and spread["closest"] > 20 and spread["inView"], spread
    assert browser.execute_script(OVERLAPS) == []
    screenshot(browser, "explorer-live-settled")


# A first view as large as a 100,000-fact tenant gives (700 entities, 600 facts): names
# of every length, hubs and leaves, laid out, then zoomed out and in.
CROWD = """
const {merge, applyTime, layout, clear, declutter, overlappingLabels, cy} = window.kgExplorer;
clear();
let seed = 3;
const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
const first = ['Ada', 'Hiroshi', 'Maria-Luisa', 'Bo', 'Oluwaseun', 'Jean'];
const last = ['Kowalski', 'Ng', 'Fitzgerald-Hughes', 'Li', 'Abernathy'];
const nodes = Array.from({length: 700}, (_, i) => ({id: `entity:c${i}`,
  name: i < 40 ? `City ${i}` : `${first[i % 6]} ${'B. '.repeat(i % 2)}${last[i % 5]} ${i}`,
  entity_type: i < 40 ? 'Location' : 'Person', degree: i < 40 ? 300 : 4,
  salience: i < 40 ? 20 - i / 10 : 2 + random() * 4, named: true, mentions: 3}));
const edges = Array.from({length: 600}, (_, i) => ({id: `relates_to:c${i}`,
  source: `entity:c${40 + (i % 660)}`, target: `entity:c${i % 40}`, relation: 'LIVES_IN',
  fact: `fact ${i}`, confidence: 1, valid_at: '2021-01-01T00:00:00Z', invalid_at: null,
  created_at: '2021-01-01T00:00:00Z', expired_at: null}));
merge(nodes, edges);
applyTime();
layout(null, {fit: true});
const found = [];
for (const factor of [1, 0.5, 3]) {
  cy.zoom({level: cy.zoom() * factor, renderedPosition: {x: cy.width() / 2, y: cy.height() / 2}});
  declutter();
  found.push([factor, overlappingLabels().length,
    cy.nodes().filter(n => n.visible() && n.pstyle('label').strValue).length,
    overlappingLabels().slice(0, 1).map(([a, b]) => [a, b].map((id) => { const n = cy.getElementById(id);
      return [n.data('label'), n.renderedPosition(), n.renderedHeight(), n.classes(),
        n.renderedBoundingBox({includeNodes: false, includeEdges: false, includeLabels: true})]; }))]);
}
return found;
"""


def test_a_crowded_first_view_has_no_overlapping_names_at_any_zoom(
    make_tenant, member, web_server, browser, log_in
) -> None:
    tenant = make_tenant()
    log_in(member(tenant, Role.VIEWER))
    open_explorer(browser, web_server, tenant.slug)
    browser.set_script_timeout(120)
    found = browser.execute_script(CROWD)
    # At each zoom: no overlap, and some names drawn (more once zoomed in).
    assert [step[1] for step in found] == [0, 0, 0], found
    assert 0 < found[1][2] < found[2][2], found
