"""Browser tests: Playwright's sync API driving Debian's Chromium against pytest-django's live server.

Fixtures:
- `browser`: one headless Chromium for the session (CHROMIUM overrides /usr/bin/chromium).
- `page`: a fresh context and page per test, opened on the live server (relative URLs work).
- `dialogs`: messages of every alert/confirm/prompt the page raised (each one is dismissed).
- `login(page, username, password)`: logs in on /login/ with the keyboard only.
Helpers: `focus_with_tab(page, selector)`, `wait_until_true(page, js_expression)`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import Browser, Page, sync_playwright

# Playwright's sync API runs an asyncio event loop in this thread, and Django refuses ORM calls
# from a thread with a running loop unless told it is safe (it is: the loop only drives the browser).
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
TIMEOUT_MS = 15_000


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser() -> Browser:
    if not CHROMIUM.exists():
        pytest.fail(f"Chromium is missing at {CHROMIUM}: run scripts/ensure-chromium (or set CHROMIUM)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def dialogs() -> list[str]:
    return []


@pytest.fixture
def page(browser: Browser, live_server, dialogs: list[str]) -> Page:
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(TIMEOUT_MS)
    new_page = context.new_page()

    def record(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    new_page.on("dialog", record)
    yield new_page
    context.close()


def focus_with_tab(page: Page, selector: str, max_presses: int = 40) -> None:
    """Move keyboard focus to `selector` with Tab, the way a keyboard user would."""
    for _ in range(max_presses):
        if page.evaluate("(selector) => document.activeElement?.matches(selector) ?? false", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{selector} never took the focus after {max_presses} Tab presses")


def wait_until_true(page: Page, expression: str, timeout_s: float = 15.0) -> None:
    """Poll a JS expression from Python: the strict CSP forbids the eval that wait_for_function's polling uses."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"{expression} never held")
        page.wait_for_timeout(50)


@pytest.fixture
def login():
    def _login(page: Page, username: str, password: str) -> None:
        page.goto(reverse("login"))
        focus_with_tab(page, "input[name=username]")
        page.keyboard.type(username)
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.name") == "password", "Tab from username must reach password"
        page.keyboard.type(password)
        with page.expect_navigation():
            page.keyboard.press("Enter")

    return _login


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory) -> None:
    """SQLite in a file, as `make run` has it: the live server's threads each get a connection of their
    own, which waits for another's write (the busy timeout) instead of failing at once with "database
    table is locked", as connections sharing one in-memory database do when two requests write at once."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("browser-db") / "tribunal.sqlite3")
