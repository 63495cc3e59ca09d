"""Browser tests: the real web server (daphne, in a process of its own, on the test
database and the test SurrealDB server) driven by Debian's chromium via chromedriver.
Screenshots go to var/test/artifacts/."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

ARTIFACTS = Path(settings.BASE_DIR) / "var" / "test" / "artifacts"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def web_server(db: None, tmp_path: Path) -> Iterator[str]:
    """The ASGI app served by daphne on a free port; ingestion tasks run in the web
    process (eager), live changes come from SurrealDB through its hub."""
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kgapp.settings.test",
        "DATABASE_URL": f"sqlite:///{settings.DATABASES['default']['NAME']}",
        "SURREAL_URL": settings.SURREAL_URL,
        "KG_VAR_DIR": str(tmp_path),
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    env.pop("REDIS_URL", None)
    log = tmp_path / "daphne.log"
    server = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "kgapp.asgi:application"],
        env=env, cwd=settings.BASE_DIR, stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/v1/health", timeout=2).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError(f"daphne did not start:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.3)
    yield url
    server.terminate()
    try:
        server.wait(15)
    except subprocess.TimeoutExpired:
        server.kill()


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1280,800", "--disable-gpu"):
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
        browser.add_cookie({"name": "sessionid", "value": client.cookies["sessionid"].value,
                            "path": "/"})

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
