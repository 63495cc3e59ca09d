"""Browser tests: the real web server (kgapp.web.serve, in a process of its own, on the
test database and the test SurrealDB server) driven by Debian's chromium via chromedriver.
Screenshots go to var/test/artifacts/."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

from tests.web_server import server_env, serving

ARTIFACTS = Path(settings.BASE_DIR) / "var" / "test" / "artifacts"


@pytest.fixture
def web_server(db: None, tmp_path: Path) -> Iterator[str]:
    """The ASGI app served by the product's server (kgapp.web.serve) on a free port;
    ingestion tasks run in the web process (eager), live changes come from SurrealDB
    through its hub."""
    with serving(server_env(tmp_path), tmp_path / "web.log") as url:
        yield url


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,800",
        "--disable-gpu",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(
        service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=options
    )
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture
def log_in(web_server: str, browser: webdriver.Chrome) -> Callable[[Any], None]:
    """log_in(user): the browser gets a session of `user` for the live server."""

    def do(user: Any) -> None:
        client = Client()
        client.force_login(user)
        browser.get(f"{web_server}/api/v1/health")
        browser.add_cookie(
            {"name": "sessionid", "value": client.cookies["sessionid"].value, "path": "/"}
        )

    return do


def wait_for(browser: webdriver.Chrome, script: str, timeout: float = 15) -> Any:
    """Until the script returns something truthy; returns it."""
    return WebDriverWait(browser, timeout, poll_frequency=0.1).until(
        lambda driver: driver.execute_script(script)
    )


def screenshot(browser: webdriver.Chrome, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    browser.save_screenshot(str(path))
    return path
