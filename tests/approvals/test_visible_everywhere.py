"""Hostile engine text reaches no person raw: every surface reads it through the one presenter.

An engine (or whoever feeds it) controls the target, caller, operation, run id, summary, arguments;
a reviewer types the reason. Control characters and bidi overrides in them must show as escapes
on every surface a person reads: the email (text and HTML), Slack's blocks, the one-click confirm
page, the request's page once decided, the Approvals tab and the history.
"""

import re
from urllib.parse import urlsplit

import pytest

from approvals.engine.register import Sent, register
from approvals.models import ApprovalRequest
from approvals.review.decide import approval_decide
from contacts.models import Delivery
from contacts.sending import deliveries_send_due
from contacts.services import contact_create
from integrations import blocks
from workspaces.models import ApiToken

from ..helpers import make_config, make_member, make_rule, make_token, make_workspace, publish
from ..loopback import parts

pytestmark = [pytest.mark.django_db(transaction=True)]

# Every C0 control PostgreSQL can store (it refuses NUL, and so does the API), DEL, a C1 control,
# the bidi override and isolates, a zero-width space, a line separator and a BOM.
HOSTILE = "".join(chr(code) for code in range(1, 32)) + "\x7f\x85\u202e\u2066\u2069\u200b\u2028\ufeff"
# Layout whitespace a page or a mail may hold of its own; every other one of them is the engine's.
LAYOUT = {"\n", "\r", "\t"}
RAW = [char for char in HOSTILE if char not in LAYOUT]
ESCAPED = "\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\t\\n\\x0b\\x0c\\r"  # the start of HOSTILE, made visible


def strings(value) -> str:
    """Every string in Slack's blocks, as Slack would show them (not as JSON, which escapes C0 itself)."""
    if isinstance(value, dict):
        return "\n".join(strings(item) for item in value.values())
    if isinstance(value, list):
        return "\n".join(strings(item) for item in value)
    return value if isinstance(value, str) else ""


def hostile(name: str) -> str:
    return f"{name}<{HOSTILE}>"


def assert_shown_escaped(text: str, *, where: str) -> None:
    raw = sorted({f"U+{ord(char):04X}" for char in text if char in RAW})
    assert raw == [], f"{where} shows {raw} raw"
    assert ESCAPED in text, f"{where} does not show the engine's text escaped"


@pytest.fixture
def world(monkeypatch):
    acme = make_workspace("acme", plan="pro")
    alice = make_member(acme, "alice@acme.test", "admin")
    bob = make_member(acme, "bob@acme.test", "reviewer")
    config = make_config(acme, pass_information_level="full")
    mail = contact_create(config=config, name="Bob", channel="email", channel_ref="${HITL_ACME_BOB_EMAIL}")
    monkeypatch.setenv("HITL_ACME_BOB_EMAIL", "bob@acme.test")
    rule = make_rule(config, message=hostile("message"), notify=[mail.public_id])
    version = publish(config)
    make_token(acme, engine="support-engine")
    approval = register(
        workspace=acme,
        engine_key=ApiToken.objects.get(workspace=acme, kind="engine"),
        sent=Sent(
            kind="gate",
            config_id=config.public_id,
            config_version=version.number,
            rule_id=rule.public_id,
            run_id=hostile("run"),
            thread_id="thr_1",
            caller=hostile("caller"),
            target=hostile("target"),
            operation=hostile("operation"),
            summary=hostile("summary"),
            arguments={"path": hostile("argument")},
            requested_by="carol@acme.test",
        ),
    ).approval
    return {"alice": alice, "bob": bob, "approval": approval}


def test_hostile_text_is_shown_escaped_on_every_surface_a_person_reads(world, mailbox, client):
    approval = world["approval"]

    # The email, both parts, and its one-click link's confirm page.
    deliveries_send_due()
    [(_, message)] = mailbox.messages
    mail = parts(message)
    assert_shown_escaped(mail["text/plain"], where="the email's text part")
    assert_shown_escaped(mail["text/html"], where="the email's HTML part")
    assert not any(char in message["Subject"] for char in RAW)
    link = re.search(r"https?://[^\s\"]+/hitl/r/[^\s\"]+", mail["text/plain"]).group(0)
    confirm = client.get(urlsplit(link).path)
    assert confirm.status_code == 200
    assert_shown_escaped(confirm.content.decode(), where="the one-click confirm page")

    # Slack: the message with its buttons, and its fallback text.
    stored = ApprovalRequest.objects.select_related("config").get(pk=approval.pk)
    assert_shown_escaped(strings(blocks.request_blocks(stored)), where="Slack's blocks")
    assert not any(char in blocks.fallback_text(stored) for char in RAW)

    # The Approvals tab, while it waits.
    client.force_login(world["alice"])
    assert_shown_escaped(client.get("/hitl/approvals/").content.decode(), where="the Approvals tab")

    # Decided with a hostile reason: the request's page, the history, and Slack's resolved message.
    approval_decide(approval=stored, user=world["bob"], decision="reject", reason=hostile("reason"))
    page = client.get(f"/hitl/approvals/{approval.public_id}/").content.decode()
    assert_shown_escaped(page, where="a decided request's page")
    history = client.get("/hitl/approvals/history/").content.decode()
    assert_shown_escaped(history, where="the history")
    stored.refresh_from_db()
    resolved = strings(blocks.request_blocks(stored))
    assert "Reason: reason&lt;\\x01" in resolved and not any(char in resolved for char in RAW)
    assert Delivery.objects.filter(approval=approval, event="requested", status="sent").count() == 1
