"""The demo tenant in the explorer, as a new user of `make run` first sees it: a
connected graph, which changes as either time slider moves."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kgapp.demo.dataset import answer_key
from kgapp.demo.load import demo_load
from kgapp.demo.score import DemoGraph
from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.browser.conftest import screenshot, wait_for
from tests.browser.test_explorer import open_explorer, set_slider

pytestmark = pytest.mark.django_db(transaction=True)

SHOWN = """
const {state} = window.kgExplorer;
return [...state.shown.values()].filter(s => s === 'on').length;
"""


def test_the_demo_graph_is_drawn_and_travels_in_time(
    make_tenant, member, web_server, browser, log_in, eager
) -> None:
    tenant = make_tenant(name="Demo")
    demo_load(tenant)
    graph = tenant_graph(tenant).run(DemoGraph.read)
    # Halfway through the load in system time: what was known before the later files.
    learned = sorted(f["created_at"] for f in graph.facts)
    halfway = learned[len(learned) // 2]
    log_in(member(tenant, Role.VIEWER))
    open_explorer(browser, web_server, tenant.slug)

    key = answer_key()
    people = set(key["entities"]["Person"])
    names = set(
        wait_for(
            browser,
            f"""
        const names = window.kgExplorer.cy.nodes().map(n => n.data('label'));
        return names.length >= {len(people)} && names;
    """,
            timeout=30,
        )
    )
    assert people <= names
    now = browser.execute_script(SHOWN)
    assert now >= len(key["facts"]) // 2
    # Connected: most entities drawn take part in a fact drawn.
    lonely = browser.execute_script(
        "return window.kgExplorer.cy.nodes().filter(n => n.degree() === 0).length"
    )
    assert lonely <= len(names) // 4
    screenshot(browser, "demo-now")

    set_slider(browser, "valid-time", datetime(2021, 7, 1, tzinfo=UTC))
    early = browser.execute_script(SHOWN)
    assert 0 < early < now
    screenshot(browser, "demo-2021")

    set_slider(browser, "valid-time", None)
    set_slider(browser, "known-time", halfway)
    known = browser.execute_script(SHOWN)
    assert 0 < known < now
    set_slider(browser, "known-time", None)
    assert browser.execute_script(SHOWN) == now
