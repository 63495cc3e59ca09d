"""The Ask page in chromium against the real server: with the scripted model, the
sources arrive as cards and the answer streams in citing [S1], a link to its card; a
fact's link opens the explorer on that fact and an entity's around that entity; the
question joins the history, which fills the form again. Without a model the page says
answers need one and still shows the sources. All of it by keyboard where a person
would use one.

KG_UPDATE_SCREENSHOTS=1 also writes the screenshot the README shows (docs/img/ask.png)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from harness.llm_server import Reply
from tenants.models import Role
from tests.browser.conftest import screenshot, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "Where does Alice work now?"
TEAM_NOTES = b"# Team notes\n\nAlice presented the research roadmap at Beta Inc on Monday.\n"
EPISODES = (
    (
        "HR note, January 2023",
        "Alice works at Acme Corp as a data engineer.",
        "2023-01-10T00:00:00Z",
    ),
    (
        "HR note, February 2024",
        "Alice joined Beta Inc as head of research.",
        "2024-02-01T00:00:00Z",
    ),
)
# What the scripted model extracts from each passage: (subject, relation, object, its
# type, the fact, valid from).
EXTRACTED = {
    "Alice works at Acme Corp": (
        "Alice",
        "WORKS_AT",
        "Acme Corp",
        "Organization",
        "Alice works at Acme Corp as a data engineer.",
        "2023-01-10",
    ),
    "Alice joined Beta Inc": (
        "Alice",
        "WORKS_AT",
        "Beta Inc",
        "Organization",
        "Alice works at Beta Inc as head of research.",
        "2024-02-01",
    ),
    "Alice presented the research roadmap": (
        "Alice",
        "PRESENTED",
        "Research roadmap",
        "Project",
        "Alice presented the research roadmap at Beta Inc.",
        "2024-02-26",
    ),
}


def extraction(user: str) -> dict[str, Any]:
    episode = re.search(r'<episode role="current"[^>]*>(.*?)</episode>', user, re.S)
    said = episode.group(1) if episode else ""
    found = [row for key, row in EXTRACTED.items() if key in said]
    entities = {"Alice": "Person"} | {row[2]: row[3] for row in found}
    return {
        "entities": [{"name": n, "entity_type": t, "summary": ""} for n, t in entities.items()],
        "facts": [
            {
                "source": a,
                "relation": r,
                "target": b,
                "fact": f,
                "edge_type": "semantic",
                "confidence": 1.0,
                "valid_at": since,
                "invalid_at": None,
            }
            for a, r, b, _, f, since in found
        ],
    }


def resolution(user: str) -> dict[str, Any]:
    """A new employer ends the old one."""
    update = json.loads(user.split("<graph_update>")[1].split("</graph_update>")[0])
    facts = [
        {
            "index": f["index"],
            "duplicate_of": None,
            "contradicts": [
                i
                for i, c in enumerate(f.get("candidates", []))
                if "Beta Inc" in json.dumps(f) and "Acme Corp" in json.dumps(c)
            ],
        }
        for f in update.get("facts", [])
    ]
    return {"entities": [], "facts": facts}


def answer(user: str) -> str:
    """An answer citing the passages that say it, by the labels the context gave them."""
    beta = re.search(r"\[(S\d+)\] Alice joined Beta Inc", user)
    acme = re.search(r"\[(S\d+)\] Alice works at Acme Corp", user)
    assert beta and acme, user
    return (
        f"Alice works at Beta Inc, where she is head of research [{beta[1]}]."
        f" Before that she was a data engineer at Acme Corp [{acme[1]}]."
    )


def model(body: dict[str, Any]) -> Any:
    """The scripted model: extraction and resolution for ingestion, keywords, answers."""
    user = body["messages"][-1]["content"]
    if body.get("stream"):
        return Reply(content=answer(user), pause=0.03)
    task = body["response_format"]["json_schema"]["name"]
    if task == "query_keywords":
        return {"high_level": ["employment"], "low_level": ["Alice"]}
    return resolution(user) if task == "resolve_graph" else extraction(user)


@pytest.fixture
def story(make_tenant, member, token_client, eager, scripted_llm, settings):
    """A tenant holding Alice's two jobs, each told in an HR note on its day, and the
    team's notes, ingested in this process by the scripted model."""
    scripted_llm.on_chat(model)
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY, settings.LLM_MAX_RETRIES = (
        scripted_llm.base_url,
        "test",
        0,
    )
    tenant = make_tenant(name="Acme alumni")
    client = token_client(member(tenant, Role.EDITOR))
    base = f"/api/v1/t/{tenant.slug}"
    for name, content, when in EPISODES:
        body = {"content": content, "reference_time": when, "name": name}
        sent = client.post(
            f"{base}/episodes", data=json.dumps(body), content_type="application/json"
        )
        assert sent.status_code == 202, sent.content
    upload = SimpleUploadedFile("team-notes.md", TEAM_NOTES)
    sent = client.post(
        f"{base}/documents", {"files": [upload], "reference_time": "2024-03-04T09:00:00Z"}
    )
    assert sent.status_code == 202, sent.content
    return tenant


@pytest.fixture
def model_server(request, monkeypatch, scripted_llm) -> str:
    """The web server with the scripted model."""
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("KG_LLM_MAX_RETRIES", "0")
    return request.getfixturevalue("web_server")


def ask_by_keyboard(browser, question: str) -> None:
    box = browser.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question)
    box.send_keys(Keys.CONTROL, Keys.ENTER)


def severe(browser) -> list[str]:
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def test_the_answer_streams_in_citing_its_sources_and_links_to_the_explorer(
    story, member, model_server, browser, log_in
) -> None:
    log_in(member(story, Role.VIEWER))
    browser.get(f"{model_server}/t/{story.slug}/")
    browser.find_element(By.ID, "ask-link").click()
    wait_for(
        browser, "return document.getElementById('history').textContent === 'No questions yet.'"
    )
    ask_by_keyboard(browser, QUESTION)

    said = wait_for(
        browser,
        """return document.getElementById('ask-status').textContent === 'Answered.'
        && document.getElementById('answer').textContent;""",
    )
    assert said.startswith("Alice works at Beta Inc, where she is head of research [S")
    assert browser.find_element(By.ID, "answer-note").get_attribute("hidden") is not None
    # Each citation is a link to the card it names: the passage that says it.
    cites = browser.find_elements(By.CSS_SELECTOR, "#answer a.cite")
    cards = [browser.find_element(By.ID, c.get_attribute("href").split("#")[1]).text for c in cites]
    assert [c.text for c in cites] == [card.split()[0] for card in cards]
    assert (
        "HR note, February 2024 · 2024-02-01\nAlice joined Beta Inc as head of research."
        in cards[0]
    )
    assert (
        "HR note, January 2023 · 2023-01-10\nAlice works at Acme Corp as a data engineer."
        in cards[1]
    )
    assert "[S3] Team notes · 2024-03-04" in browser.find_element(By.ID, "passages").text
    facts = browser.find_element(By.ID, "facts").text
    assert "Alice works at Beta Inc as head of research. valid 2024-02-01 → now" in facts
    assert "Acme Corp" not in facts  # that job ended: not a fact now
    assert "Alice Person" in browser.find_element(By.ID, "entities").text
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, height + 150)  # the whole page: question, answer, sources
    path = screenshot(browser, "ask")
    if os.environ.get("KG_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(path, Path(settings.BASE_DIR) / "docs" / "img" / "ask.png")
    cites[0].send_keys(Keys.ENTER)  # a citation, followed by keyboard
    wait_for(browser, f"return location.hash === '#{cites[0].get_attribute('href').split('#')[1]}'")

    # The history keeps the question; choosing it fills the form again.
    wait_for(
        browser,
        f"return document.querySelector('#history button')?.textContent === {json.dumps(QUESTION)}",
    )
    browser.find_element(By.ID, "question").clear()
    browser.find_element(By.CSS_SELECTOR, "#history button").send_keys(Keys.ENTER)
    assert browser.find_element(By.ID, "question").get_attribute("value") == QUESTION
    assert browser.switch_to.active_element.get_attribute("id") == "question"
    assert severe(browser) == []

    # A fact's link opens the explorer on that fact: its edge selected, its details shown.
    link = next(
        a for a in browser.find_elements(By.CSS_SELECTOR, "#facts a") if "Beta Inc" in a.text
    )
    fact_id = unquote(link.get_attribute("href").split("fact=")[1])
    link.click()
    wait_for(browser, f"return window.kgExplorer?.cy.getElementById('{fact_id}').selected()", 30)
    wait_for(
        browser,
        "return document.getElementById('detail').textContent"
        ".includes('Alice works at Beta Inc as head of research.')",
    )
    assert browser.execute_script(
        f"return window.kgExplorer.cy.getElementById('{fact_id}').visible()"
    )
    assert severe(browser) == []


def test_without_a_model_the_page_says_so_and_still_shows_the_sources(
    story, member, web_server, browser, log_in
) -> None:
    log_in(member(story, Role.VIEWER))
    browser.get(f"{web_server}/t/{story.slug}/ask")
    wait_for(
        browser, "return document.getElementById('history').textContent === 'No questions yet.'"
    )
    browser.find_element(By.ID, "question").send_keys(QUESTION)
    # What a person picks in chromium's date-time field (its typing is locale-bound).
    browser.execute_script("document.getElementById('as-of').value = '2023-06-01T00:00:00'")
    browser.find_element(By.ID, "ask-submit").click()

    note = wait_for(
        browser,
        """const note = document.getElementById('answer-note');
        return !note.hidden && note.textContent;""",
    )
    assert note.startswith("Answers need a model")
    assert browser.find_element(By.ID, "answer").text == ""
    assert browser.find_element(By.ID, "ask-status").text == "Sources only."
    assert "HR note, January 2023 · 2023-01-10" in browser.find_element(By.ID, "passages").text
    facts = browser.find_element(By.ID, "facts").text
    assert "Acme Corp" in facts and "Beta Inc" not in facts  # as of June 2023
    screenshot(browser, "ask-no-model")

    # An ended fact's link shows it among the ended facts; an entity's opens around it.
    link = browser.find_element(By.CSS_SELECTOR, "#facts a")
    fact_id = unquote(link.get_attribute("href").split("fact=")[1])
    alice = next(
        a for a in browser.find_elements(By.CSS_SELECTOR, "#entities a") if a.text == "Alice"
    )
    alice_url = alice.get_attribute("href")
    link.click()
    wait_for(browser, f"return window.kgExplorer?.cy.getElementById('{fact_id}').selected()", 30)
    assert browser.find_element(By.ID, "show-history").is_selected()
    browser.get(alice_url)
    entity_id = unquote(alice_url.split("seed=")[1])
    wait_for(browser, f"return window.kgExplorer?.cy.getElementById('{entity_id}').selected()", 30)
    wait_for(browser, "return document.querySelector('#detail h2')?.textContent === 'Alice'")
    assert severe(browser) == []
