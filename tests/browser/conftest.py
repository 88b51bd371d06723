"""Playwright driving Debian's Chromium (`apt-get install chromium`) against the live server."""

from pathlib import Path

import pytest
from django.test.utils import override_settings
from playwright.sync_api import sync_playwright

from tests.asgi import AsgiServer
from tests.helpers import PASSWORD

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def pytest_collection_modifyitems(config, items):
    # This hook sees every collected test, not only this folder's: mark ours alone.
    here = Path(__file__).parent
    for item in items:
        if Path(item.path).is_relative_to(here):
            item.add_marker(pytest.mark.browser)


# Per module, not per session: Playwright's sync API keeps its event loop running in the test
# thread while it is open, and a later test in the same xdist worker that calls asyncio.run()
# (the async client, the adapters) would find it there.
@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def live_server(request, live_server, django_db_blocker):
    """The session's server, or, for a test marked `server_env(NAME=value, …)`, a server of its own
    started with those variables: a test's `settings` cannot reach a server in another process."""
    marker = request.node.get_closest_marker("server_env")
    if marker is None:
        yield live_server
        return
    with django_db_blocker.unblock(), AsgiServer(**marker.kwargs) as server:
        server._live_server_modified_settings = override_settings()  # pytest-django enables it per test: nothing
        yield server


@pytest.fixture
def new_page(browser, live_server):
    """Open a fresh browser context (its own cookies); several per test for several people."""
    contexts = []

    def open_page():
        context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_page):
    return new_page()


def login(page, email: str, password: str = PASSWORD) -> None:
    page.goto("/login/")
    page.fill("#id_username", email)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
