"""Wording people read: no API field names in form errors, words not raw values, token caps in their own terms."""

import pytest
from django.utils import timezone

from contacts import services as contact_services
from tests.factories import make_approval, make_token_cap
from tests.helpers import make_config, make_rule, publish


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


def test_contact_form_errors_read_as_sentences(as_alice, acme):
    config = make_config(acme)
    url = f"/hitl/configs/{config.public_id}/contacts/"

    empty = as_alice.post(url, {"name": "Leads", "channel": "email", "channel_ref": ""}).content.decode()
    literal = as_alice.post(
        url, {"name": "Leads", "channel": "webhook", "channel_ref": "https://x.test"}
    ).content.decode()

    assert "An email contact needs a channel reference" in empty and "A Email" not in empty
    assert "placeholder with an upper-case name starting with HITL_" in literal


def test_rule_form_errors_name_no_api_field(as_alice, acme):
    config = make_config(acme)

    html = as_alice.post(
        f"/hitl/configs/{config.public_id}/rules/add/",
        {"kind": "mcp_server", "which": "one", "match": "issue_refund", "point": "entry", "order": 1},
    ).content.decode()

    assert "Name an MCP server by its mcp_… id, or pick Any (*)" in html and "match must" not in html


def test_a_version_page_shows_words_not_stored_values(as_alice, acme, alice):
    config = make_config(acme, pass_information_level="full", token_cap_per_turn=50_000)
    make_rule(config, kind="mcp_server", match="mcp_billing", point="exit")
    contact_services.contact_create(
        config=config, name="Leads", channel="email", channel_ref="${HITL_ACME_LEADS_EMAIL}"
    )
    publish(config, alice)

    html = as_alice.get(f"/hitl/configs/{config.public_id}/versions/1/").content.decode()

    for words in (
        "MCP server",
        "Exit — ask before its result returns",
        "50,000 tokens per turn",
        "Prompt — park the run in the Approvals queue",
        "Full — plus the exact arguments",
        "<td>Email</td>",
    ):
        assert words in html, words
    for raw in ("<td>mcp_server</td>", "50000", "<td>exit</td>", "<td>email</td>"):
        assert raw not in html, raw


def test_the_history_says_proceeded_past_cap_and_never_rejected_twice(as_alice, acme, bob):
    config = make_config(acme)
    now = timezone.now()
    decided = {"decided_by": bob, "decided_by_email": "bob@acme.test", "decided_at": now, "created_at": now}
    make_token_cap(config, status="approved", **decided)
    make_token_cap(config, status="rejected", **decided)
    make_approval(config, status="rejected", **decided)

    html = as_alice.get("/hitl/approvals/history/").content.decode()

    assert ">Proceeded past cap</span> by bob@acme.test at" in html
    assert ">Stopped</span> by bob@acme.test at" in html
    assert ">Rejected</span> by bob@acme.test at" in html
    assert "Rejected Rejected" not in html and "Rejected</span> Rejected" not in html


def test_there_is_a_favicon(client, as_alice):
    assert client.get("/favicon.ico")["Location"].endswith("favicon.svg")
    assert 'rel="icon"' in as_alice.get("/hitl/approvals/").content.decode()
