"""The uploads page's document manager in chromium against the real server (offline
extractor): documents listed live with their versions and what each version changed,
Replace uploading the next version, Delete showing what would go and what would stay
before it deletes, Retry re-running a failed job, all by keyboard too; viewers see the
list without actions.

KG_UPDATE_SCREENSHOTS=1 also writes the screenshots the README shows
(docs/img/documents.png, docs/img/delete-preview.png)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from kgapp.graph.records import parse_record_id
from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.browser.conftest import ARTIFACTS, wait_for
from tests.chat_exports import CHAT, CHAT_EXTENDED

pytestmark = pytest.mark.django_db(transaction=True)

NOTES = "Ines Costa lives in Porto.\n\nHarbour Bank opened an office in Faro.\n"
NOTES_EDITED = "Ines Costa lives in Porto.\n\nHarbour Bank opened an office in Braga.\n"


def upload(client, base: str, name: str, data: bytes) -> str:
    answer = client.post(f"{base}/documents", {"files": [SimpleUploadedFile(name, data)]})
    assert answer.status_code == 202, answer.content
    return answer.json()[0]["document_id"]


def documents(client, base: str) -> dict[str, dict[str, Any]]:
    return {d["file_name"]: d for d in client.get(f"{base}/documents").json()}


def found(client, base: str, name: str) -> bool:
    return name in {e["name"] for e in client.get(f"{base}/entities", {"q": name}).json()}


def row_text(browser, document_id: str) -> str | None:
    return browser.execute_script(
        'const row = document.querySelector(`#documents tr[data-document="${arguments[0]}"]`);'
        " return row && row.textContent;",
        document_id,
    )


def cells(browser, document_id: str) -> list[str]:
    return browser.execute_script(
        'const row = document.querySelector(`#documents tr[data-document="${arguments[0]}"]`);'
        " return [...row.cells].map((c) => c.textContent);",
        document_id,
    )


def wait_for_row(browser, document_id: str, *texts: str, timeout: float = 30) -> str:
    """The row of the document, once it holds every one of `texts`."""
    script = (
        'const row = document.querySelector(`#documents tr[data-document="${arguments[0]}"]`);'
        " return row && arguments[1].every((t) => row.textContent.includes(t)) && row.textContent;"
    )
    return wait_for(
        browser,
        f"return (function() {{ {script} }})(...{json.dumps([document_id, list(texts)])});",
        timeout,
    )


def press(browser, selector: str, *keys: str) -> None:
    """Click the element (or send it `keys`), found again if the live list rebuilt its
    row in between (a job's end rewrites its document after the status)."""
    for _ in range(5):
        try:
            element = browser.find_element(By.CSS_SELECTOR, selector)
            if keys:
                element.send_keys(*keys)
            else:
                element.click()
            return
        except StaleElementReferenceException:
            time.sleep(0.2)
    raise AssertionError(f"{selector} kept being replaced")


def action(document_id: str, name: str) -> str:
    return f'#documents button[data-action="{name}"][data-document="{document_id}"]'


def counted(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def expected_sentence(preview: dict[str, Any]) -> str:
    removed = (
        f"{counted(preview['entities_deleted'], 'entity', 'entities')} and "
        f"{counted(preview['facts_deleted'], 'fact', 'facts')} will be removed"
    )
    kept = preview["entities_kept"]
    if not kept:
        return removed + "."
    reason = (
        "stays because other documents mention it"
        if kept == 1
        else "stay because other documents mention them"
    )
    return f"{removed}; {counted(kept, 'entity', 'entities')} {reason}."


def keep_screenshot(browser, name: str) -> None:
    """The documents card as a PNG in the test artifacts (and docs/img/ when asked)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    card = browser.find_element(By.CSS_SELECTOR, "section.documents")
    bottom = browser.execute_script(
        "return arguments[0].getBoundingClientRect().bottom + window.scrollY", card
    )
    browser.set_window_size(1280, max(1000, int(bottom) + 200))  # the whole card in view
    browser.execute_script("window.scrollTo(0, 0)")
    path = ARTIFACTS / f"{name}.png"
    card.screenshot(str(path))
    if os.environ.get("KG_UPDATE_SCREENSHOTS") == "1":
        (Path(settings.BASE_DIR) / "docs" / "img" / f"{name}.png").write_bytes(path.read_bytes())


def violations(browser) -> list[str]:
    return [
        entry["message"]
        for entry in browser.get_log("browser")
        if "Content Security Policy" in entry["message"] or "Refused to" in entry["message"]
    ]


def test_documents_are_listed_replaced_deleted_after_a_preview_and_retried(
    make_tenant, member, token_client, eager, web_server, browser, log_in, tmp_path
) -> None:
    tenant = make_tenant(name="Harbour notes")
    editor = member(tenant, Role.EDITOR)
    client = token_client(editor)
    base = f"/api/v1/t/{tenant.slug}"
    chat = upload(client, base, "chat.json", json.dumps(CHAT).encode())
    log_in(editor)
    browser.set_window_size(1280, 1000)
    browser.get(f"{web_server}/t/{tenant.slug}/uploads")
    wait_for_row(browser, chat, "chat.json", "completed")

    # The next export, uploaded elsewhere (the API) while the page is open: the list
    # follows the jobs and shows what its job found.
    extended = upload(client, base, "chat-export-2.json", json.dumps(CHAT_EXTENDED).encode())
    job = client.get(f"{base}/jobs/{documents(client, base)['chat-export-2.json']['job']}").json()
    assert job["notes"][0] == "3 messages already known, 1 new"
    wait_for_row(browser, extended, "chat-export-2.json", "completed", job["notes"][0])
    listed = documents(client, base)
    name, version, status, episodes, facts, cost, actions = cells(browser, extended)
    assert (episodes, facts) == (
        str(listed["chat-export-2.json"]["episode_count"]),
        str(listed["chat-export-2.json"]["fact_count"]),
    )
    assert (episodes, cells(browser, chat)[3]) == ("2", "1")  # the first export's episode is shared
    assert cost == "$0" and actions == "DeleteReplace"

    # A text file through the page, then its edited version through Replace.
    notes_file, edited_file = tmp_path / "notes.txt", tmp_path / "edited" / "notes.txt"
    notes_file.write_text(NOTES)
    edited_file.parent.mkdir()
    edited_file.write_text(NOTES_EDITED)
    browser.find_element(By.ID, "files").send_keys(str(notes_file))
    notes = wait_for(
        browser,
        """const row = [...document.querySelectorAll('#documents tr')]
        .find((r) => r.textContent.startsWith('notes.txt') && r.textContent.includes('completed'));
        return row && row.dataset.document;""",
        timeout=30,
    )
    press(browser, action(notes, "replace"))
    browser.find_element(By.ID, "replace-file").send_keys(str(edited_file))
    wait_for_row(browser, notes, "v2 of 2", "completed")
    wait_for(
        browser,
        "return document.getElementById('documents-status').textContent"
        " === 'notes.txt: version 2 queued.'",
    )
    versions = documents(client, base)["notes.txt"]["versions"]
    assert [v["version"] for v in versions] == [1, 2] and all(v["summary"] for v in versions)
    press(browser, f'details[data-document="{notes}"] summary')
    items = wait_for(
        browser,
        f"""const history = document.querySelector('details[data-document="{notes}"]');
        return history.open && [...history.querySelectorAll('li')].map((li) => li.innerText);""",
    )
    assert len(items) == 2
    for item, version in zip(items, versions, strict=True):
        assert (
            item.startswith(f"v{version['version']} · notes.txt · ") and version["summary"] in item
        )
    keep_screenshot(browser, "documents")

    # Delete the extended export: first what would go and what would stay, then Cancel.
    preview = client.delete(f"{base}/documents/{extended}?dry_run=true").json()
    assert (
        preview["entities_deleted"] >= 1
        and preview["entities_kept"] >= 1
        and preview["facts_deleted"] >= 1
    )
    press(browser, action(extended, "delete"))
    shown = wait_for(
        browser,
        """const panel = document.getElementById('delete-preview');
        return !panel.hidden && panel.querySelector('#delete-sentence').textContent;""",
    )
    assert shown == expected_sentence(preview)
    removed_names = browser.find_element(By.CSS_SELECTOR, "#delete-preview .names-deleted").text
    kept_names = browser.find_element(By.CSS_SELECTOR, "#delete-preview .names-kept").text
    assert "Biscuit" in removed_names and "Nadia" not in removed_names
    assert set(kept_names.split(", ")) == set(preview["entity_names_kept"])
    assert browser.switch_to.active_element.get_attribute("id") == "delete-cancel"
    keep_screenshot(browser, "delete-preview")
    browser.find_element(By.ID, "delete-cancel").click()
    wait_for(browser, "return document.getElementById('delete-preview').hidden")
    assert "chat-export-2.json kept" in browser.find_element(By.ID, "documents-status").text
    assert "chat-export-2.json" in documents(client, base) and found(client, base, "Biscuit")

    # Then by keyboard: Enter on Delete, Shift+Tab from Cancel to Delete, Enter.
    press(browser, action(extended, "delete"), Keys.ENTER)
    wait_for(browser, "return !document.getElementById('delete-preview').hidden")
    browser.switch_to.active_element.send_keys(Keys.SHIFT, Keys.TAB)
    assert browser.switch_to.active_element.get_attribute("id") == "delete-confirm"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait_for(
        browser,
        f"return document.querySelector('#documents tr[data-document=\"{extended}\"]') === null",
    )
    assert browser.find_element(By.ID, "documents-status").text.startswith(
        "chat-export-2.json deleted: "
    )
    left = documents(client, base)
    assert sorted(left) == ["chat.json", "notes.txt"]
    assert not found(client, base, "Biscuit")
    assert all(found(client, base, entity) for entity in ("Nadia", "Omar", "Tidewater Labs"))
    assert all(found(client, base, entity) for entity in preview["entity_names_kept"])
    assert left["chat.json"]["episode_count"] == 1

    # A failed job: its document offers Retry, and is ingested again.
    graph = tenant_graph(tenant)
    chat_job = left["chat.json"]["job"]
    graph.query(
        "UPDATE $doc SET status = 'failed', error = 'the worker stopped';"
        " UPDATE $job SET status = 'failed', error = 'the worker stopped';",
        {"doc": parse_record_id(chat, "document"), "job": parse_record_id(chat_job, "job")},
    )
    wait_for_row(browser, chat, "failed", "the worker stopped", "Retry")
    press(browser, action(chat, "retry"))
    wait_for_row(browser, chat, "completed")
    assert "Retry" not in row_text(browser, chat)
    assert client.get(f"{base}/jobs/{chat_job}").json()["status"] == "completed"

    # Replacing while the document is being ingested: the server's 409, as text.
    graph.query("UPDATE $id SET status = 'extracting'", {"id": parse_record_id(notes, "document")})
    press(browser, action(notes, "replace"))
    browser.find_element(By.ID, "replace-file").send_keys(str(notes_file))
    busy = wait_for(
        browser,
        """const status = document.getElementById('documents-status');
        return status.classList.contains('error') && status.textContent;""",
    )
    assert busy.startswith("notes.txt was not replaced: ") and "still being ingested" in busy
    assert documents(client, base)["notes.txt"]["version"] == 2
    assert violations(browser) == []


def test_viewers_see_the_documents_without_actions(
    make_tenant, member, token_client, eager, web_server, browser, log_in
) -> None:
    tenant = make_tenant()
    base = f"/api/v1/t/{tenant.slug}"
    document = upload(
        token_client(member(tenant, Role.EDITOR)), base, "chat.json", json.dumps(CHAT).encode()
    )
    log_in(member(tenant, Role.VIEWER))
    browser.get(f"{web_server}/t/{tenant.slug}/uploads")
    wait_for_row(browser, document, "chat.json", "completed")
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "section.documents th")]
    assert headers == ["Name", "Version", "Status", "Episodes", "Facts", "Model cost"]
    assert browser.find_elements(By.CSS_SELECTOR, "#documents button") == []
    assert browser.find_elements(By.ID, "delete-preview") == []
    assert browser.find_elements(By.ID, "replace-file") == []
