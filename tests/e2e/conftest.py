"""Browser fixtures: a live server process and headless Chromium driven by Playwright.

These tests never skip: without Chromium they fail, because CI installs it (.ci/run).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import LiveServer

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
PASSWORDS = {"alice": "alice-e2e-pass", "bob": "bob-e2e-pass", "staff": "staff-e2e-pass"}


@pytest.fixture(scope="session")
def seeded_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated database with the test users, made once and copied for every server."""
    server = LiveServer(tmp_path_factory.mktemp("seed"))
    server.manage("migrate", "--noinput")
    for name, password in PASSWORDS.items():
        server.create_user(name, password, staff=name == "staff")
    with closing(sqlite3.connect(server.database)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the file we copy
    return server.database


@pytest.fixture
def tandem_server(tmp_path: Path, seeded_database: Path) -> Iterator[LiveServer]:
    server = LiveServer(tmp_path)
    shutil.copyfile(seeded_database, server.database)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def playwright_instance() -> Iterator[Any]:
    """Module-scoped: while Playwright's sync API is active its event loop owns this thread,
    so it must be gone before async tests in other modules run."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright_instance: Any) -> Iterator[Any]:
    browser = playwright_instance.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    yield browser
    browser.close()


@pytest.fixture
def new_page(browser: Any, tandem_server: LiveServer) -> Iterator[Any]:
    """``new_page("alice")``: a fresh browser context logged in as that user."""
    contexts: list[Any] = []

    def _new_page(username: str, *, viewport: dict[str, int] | None = None) -> Any:
        context = browser.new_context(base_url=tandem_server.url, viewport=viewport)
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        login(page, username)
        return page

    yield _new_page
    for context in contexts:
        context.close()


def login(page: Any, username: str) -> None:
    page.goto("/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORDS[username])
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")


def start_conversation(page: Any) -> str:
    page.get_by_role("button", name="New conversation").first.click()
    page.wait_for_url("**/conversations/*/")
    page.locator("#connection[data-state='open']").wait_for()
    return str(page.url)


def send(page: Any, text: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")
