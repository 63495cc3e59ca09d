"""The uploads page's cost display, in chromium against the real server with a model
(the scripted OpenAI-compatible server): model use per file and per month, and the
estimate a large upload must be confirmed on (Cancel uploads nothing, Confirm does).

KG_UPDATE_SCREENSHOTS=1 also writes the screenshot the README shows (docs/img/cost.png)."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings
from selenium.webdriver.common.by import By

from tenants.models import Role
from tests.browser.conftest import screenshot, wait_for
from tests.llm_fixtures import works_at

pytestmark = pytest.mark.django_db(transaction=True)

SMALL = "Carol works at Initech. Dave works at Initech.\n"


def large_text() -> str:
    return "\n\n".join(
        f"Paragraph {i}: Person{i} moved to City{i} in {1990 + i % 30} and joined Company{i} "
        "as an engineer, where the team built bridges, tunnels and railway stations."
        for i in range(120)
    )


extraction = works_at("Carol", "Initech")


@pytest.fixture
def priced_server(request, monkeypatch, settings, scripted_llm) -> str:
    """The web server (and this process, to compare) with a model (gpt-4o-mini's default
    price) and a confirmation asked above 3,000 input tokens."""
    scripted_llm.on_chat(extraction)
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = scripted_llm.base_url, "test"
    settings.OPENAI_MODEL, settings.CONFIRM_ABOVE_TOKENS = "gpt-4o-mini", 3000
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("OPENAI_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("KG_CONFIRM_ABOVE_TOKENS", "3000")
    return request.getfixturevalue("web_server")


def choose(browser, path: Path) -> None:
    browser.find_element(By.ID, "files").send_keys(str(path))


def documents(client, slug: str) -> list[str]:
    return [d["file_name"] for d in client.get(f"/api/v1/t/{slug}/documents").json()]


def test_cost_per_file_and_month_and_confirmation_of_a_large_upload(
    make_tenant, member, token_client, priced_server, browser, log_in, tmp_path
) -> None:
    tenant = make_tenant(name="Cost demo")
    editor = member(tenant, Role.EDITOR)
    client = token_client(editor)
    log_in(editor)
    browser.set_window_size(1280, 1300)
    browser.get(f"{priced_server}/t/{tenant.slug}/uploads")
    month = f"{datetime.now(UTC):%Y-%m}"
    wait_for(
        browser,
        f"""const row = document.querySelector('#usage-months tr');
        return row && row.cells[0].textContent === '{month}' && row.cells[2].textContent === '0';""",
    )

    small = tmp_path / "staff.txt"
    small.write_text(SMALL)
    choose(browser, small)
    usage = wait_for(
        browser,
        """const row = [...document.querySelectorAll('#jobs tr')]
        .find((r) => r.cells[0].textContent === 'staff.txt' && r.cells[1].textContent === 'completed');
        return row && row.querySelector('td.usage').textContent;""",
        timeout=60,
    )
    job = client.get(f"/api/v1/t/{tenant.slug}/jobs").json()[0]
    (row,) = job["usage"]
    assert usage.startswith(f"{row['calls']} call") and f"{row['input_tokens']} in" in usage
    assert f"${row['cost_usd']:.4f}" in usage
    months = wait_for(
        browser,
        """const row = document.querySelector('#usage-months tr');
        return row.cells[2].textContent !== '0' && [...row.cells].map((c) => c.textContent);""",
    )
    assert months[:3] == [month, "1", str(row["calls"])] and months[5] == f"${row['cost_usd']:.4f}"

    large = tmp_path / "handbook.txt"
    large.write_text(large_text())
    choose(browser, large)
    shown = wait_for(
        browser,
        """const panel = document.getElementById('estimate');
        return !panel.hidden && panel.textContent;""",
    )
    estimate = client.post(
        f"/api/v1/t/{tenant.slug}/documents?dry_run=true", {"files": [large.open("rb")]}
    ).json()["total"]
    assert "Ingest handbook.txt?" in shown and "gpt-4o-mini" in shown
    assert (
        f"Chunks{estimate['chunks']}" in shown
        and f"Expected model calls{estimate['calls']}" in shown
    )
    assert f"Input tokens{estimate['input_tokens']:,}" in shown
    assert f"Estimated cost${estimate['cost_usd']:.4f}" in shown
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, height + 150)  # the whole page: estimate, files, months
    path = screenshot(browser, "cost")
    if os.environ.get("KG_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(path, Path(settings.BASE_DIR) / "docs" / "img" / "cost.png")

    browser.find_element(By.ID, "estimate-cancel").click()
    wait_for(
        browser,
        "return document.getElementById('upload-status').textContent"
        ".includes('handbook.txt not uploaded: cancelled')",
    )
    assert browser.find_element(By.ID, "estimate").get_attribute("hidden") is not None
    assert documents(client, tenant.slug) == ["staff.txt"]

    choose(browser, large)
    wait_for(browser, "return !document.getElementById('estimate').hidden")
    browser.find_element(By.ID, "estimate-confirm").click()
    wait_for(
        browser,
        """return [...document.querySelectorAll('#jobs tr')]
        .some((r) => r.cells[0].textContent === 'handbook.txt');""",
    )
    assert sorted(documents(client, tenant.slug)) == ["handbook.txt", "staff.txt"]
