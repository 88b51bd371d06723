"""Long unbroken text wraps instead of widening pages; a 390 px phone can read and decide."""

import pytest
from playwright.sync_api import expect

from contacts.models import Contact
from contacts.services import contact_create
from tests.factories import make_approval
from tests.helpers import make_config, make_rule, publish

from .conftest import login

LONG = "x" * 600


@pytest.fixture
def long_texts(acme, alice):
    config = make_config(acme, "n" * 200, pass_information_level="full")
    make_rule(config, message="m" * 400)
    contact_create(config=config, name="c" * 190, channel="none")
    publish(config, alice)
    make_approval(config, target="t" * 500, summary=LONG, level="full", arguments={"path": LONG})
    return config


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


@pytest.mark.parametrize("width", [1280, 390])
def test_long_unbroken_text_never_widens_a_page(new_page, bob, alice, long_texts, width):
    page = new_page()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "alice@acme.test")
    cfg = long_texts.public_id
    for path in ["/hitl/approvals/", f"/hitl/configs/{cfg}/rules/", f"/hitl/configs/{cfg}/contacts/", "/hitl/configs/"]:
        page.goto(path)
        assert page_width(page) <= width, f"{path} is {page_width(page)} px wide at {width} px"
    assert Contact.objects.count() == 1


def test_a_phone_can_type_a_reason_and_decide(new_page, bob, long_texts):
    page = new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, "bob@acme.test")
    page.goto("/hitl/approvals/")

    reason = page.locator("textarea[name=reason]").first
    assert reason.bounding_box()["width"] >= 300  # not the 30 px it shrank to
    reason.fill("Checked on the phone")
    page.get_by_role("button", name="Approve").first.click()
    expect(page.locator("#decided-log")).to_contain_text("Approved by bob@acme.test")
