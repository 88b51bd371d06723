"""The docs' pictures, taken of the demo workspace `make run` loads (launch/demo.py), at 1280 × 800:
the Approvals tab, History (once the reviewer decided two), the Rules tab and the API's browsable schema.
`HITL_SCREENSHOT_DIR=docs` retakes them; without it they are taken into a temporary folder and only checked."""

import os
import shutil
from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from launch.demo import ADMIN, REVIEWER
from rules.models import Config

from .conftest import login


@pytest.fixture
def demo(db):
    call_command("hitl", "demo", "--url", "http://localhost:8000/", stdout=StringIO())
    return Config.objects.get(workspace__slug="acme", name="Support agent")


def decide(card, button: str, reason: str) -> None:
    card.locator("textarea, input[name=reason]").first.fill(reason)
    card.get_by_role("button", name=button, exact=True).click()


def keep(shot, name: str) -> None:
    assert shot.stat().st_size > 10_000
    if os.environ.get("HITL_SCREENSHOT_DIR"):  # retake the docs' pictures on purpose only
        shutil.copy(shot, os.path.join(os.environ["HITL_SCREENSHOT_DIR"], name))


@pytest.mark.server_env(APPROVALS_REFRESH_SECONDS="600")
def test_it_pictures_the_demo_for_the_docs(new_page, demo, tmp_path):
    page = new_page()
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, *REVIEWER)
    page.goto("/hitl/approvals/")
    expect(page.locator("article.approval")).to_have_count(3)
    page.screenshot(path=str(tmp_path / "approvals-tab.png"))
    keep(tmp_path / "approvals-tab.png", "approvals-tab.png")

    # History: the reviewer approves one and rejects one, on their cards, as a person would.
    cards = page.locator("article.approval")
    decide(cards.nth(0), "Approve", "Checked with the customer: the export is theirs.")
    expect(cards).to_have_count(2)
    decide(cards.nth(0), "Reject", "Not during the quarter-end freeze; ask again on Monday.")
    expect(cards).to_have_count(1)
    page.goto("/hitl/approvals/history/")
    rows = page.locator("table.history tbody tr")
    expect(rows).to_have_count(2)
    rows.first.get_by_text("Details").click()
    page.screenshot(path=str(tmp_path / "history.png"))
    keep(tmp_path / "history.png", "history.png")

    admin = new_page()
    admin.set_viewport_size({"width": 1280, "height": 800})
    login(admin, *ADMIN)
    admin.goto(f"/hitl/configs/{demo.public_id}/rules/")
    expect(admin.locator("#rules tbody tr")).to_have_count(3)
    admin.screenshot(path=str(tmp_path / "admin-rules.png"))
    keep(tmp_path / "admin-rules.png", "admin-rules.png")

    admin.goto("/api/docs/")
    expect(admin.get_by_text("/api/v1/approvals").first).to_be_visible(timeout=30_000)
    admin.screenshot(path=str(tmp_path / "engine-api-docs.png"))
    keep(tmp_path / "engine-api-docs.png", "engine-api-docs.png")
