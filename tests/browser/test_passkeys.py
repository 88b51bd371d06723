"""Passkey step-up in Chromium, with a virtual authenticator (Chrome DevTools Protocol's WebAuthn domain).

A reviewer registers a passkey on their account page and approves a `require_passkey` request with
it on the request's page; the same assertion replayed, and an assertion made for another request,
are refused; rejecting needs none. WebAuthn binds a passkey to a host name, never an IP address,
so the portal runs here at http://localhost:PORT with HITL_BASE_URL saying so.
"""

from urllib.parse import parse_qs

import pytest
from django.test.utils import override_settings
from playwright.sync_api import expect

from approvals.models import ApprovalRequest, Status
from audit.models import AuditRecord
from passkeys.models import Passkey
from tests.approvals.engine_support import gate_body
from tests.asgi import AsgiServer
from tests.helpers import PASSWORD, Api, make_config, make_rule, make_token, publish

from .conftest import login
from .test_csp import watch_csp


@pytest.fixture(scope="module")
def live_server(django_db_setup, django_db_blocker):
    """The portal as `make serve` runs it, reached (and configured) as http://localhost:PORT."""
    server = AsgiServer(APPROVALS_REFRESH_SECONDS="600")
    server.url = f"http://localhost:{server.port}"
    server.env["HITL_BASE_URL"] = server.url
    with django_db_blocker.unblock(), server:
        server._live_server_modified_settings = override_settings()  # pytest-django enables it per test: nothing
        yield server


@pytest.fixture
def page(browser, live_server):
    """A page whose requests page.route sees: the portal's service worker (scope /hitl/) would fetch the
    decide POST itself, out of the route's reach, so it is blocked here."""
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 1280, "height": 900}, service_workers="block"
    )
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


@pytest.fixture
def step_up(acme, alice, live_server):
    """A published config: deletes need a passkey to approve (one approval), workers two approvals and a passkey."""
    config = make_config(acme, "Support agent", pass_information_level="full")
    make_rule(config, require_passkey=True)
    make_rule(config, kind="worker", match="*", require_passkey=True, approvals_required=2, order=20)
    publish(config, alice)
    return config


@pytest.fixture
def engine(acme, live_server) -> Api:
    return Api(live_server.url, make_token(acme, engine="support-engine"))


def register(engine: Api, config, **overrides) -> str:
    response = engine.post("/api/v1/approvals", gate_body(config, **overrides))
    assert response.status_code == 201, response.text
    return response.json()["id"]


def with_authenticator(page) -> None:
    """A platform authenticator that verifies its user and is touched at once, as Chrome's tests use."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )


def add_passkey(page, name: str = "Work laptop") -> None:
    page.goto("/hitl/account/")
    page.fill("#passkey-new-name", name)
    page.fill("#passkey-password", PASSWORD)  # a session alone may not add one (tests/passkeys/test_enrolment.py)
    page.get_by_role("button", name="Add a passkey").click()
    expect(page.locator("#passkeys tr[data-passkey]")).to_have_count(1)
    expect(page.locator("#passkeys tr[data-passkey] input[name=name]")).to_have_value(name)


def captured_assertion(page, public_id: str, edited: str | None = None) -> str:
    """Press Approve on the request's page (with `edited` in its arguments editor) and keep the passkey's
    answer, which never reaches the portal."""
    page.goto(f"/hitl/approvals/{public_id}/")
    if edited is not None:
        page.fill(f"#arguments-{public_id}", edited)
    decide = f"**/hitl/approvals/{public_id}/decide/"
    page.route(decide, lambda route: route.abort())
    # Until the request has failed: the route's handler runs after the request event, and unrouting
    # before it ran would let the answer through.
    with page.expect_event("requestfailed", lambda r: r.url.endswith(f"/{public_id}/decide/")) as sent:
        page.get_by_role("button", name="Approve", exact=True).click()
    page.unroute(decide)
    return parse_qs(sent.value.post_data)["passkey_assertion"][0]


def post_decision(page, public_id: str, assertion: str, decision: str = "approve", **fields: str):
    """The decide form's POST as the browser sends it, with this assertion in it (a replay, say)."""
    page.goto(f"/hitl/approvals/{public_id}/")
    token = page.locator("input[name=csrfmiddlewaretoken]").first.input_value()
    return page.request.post(
        f"/hitl/approvals/{public_id}/decide/",
        form={
            "csrfmiddlewaretoken": token,
            "decision": decision,
            "reason": "",
            "next": f"/hitl/approvals/{public_id}/",
            "passkey_assertion": assertion,
            **fields,
        },
    )


def status_of(public_id: str) -> str:
    return ApprovalRequest.objects.get(public_id=public_id).status


def test_a_reviewer_registers_a_passkey_and_approves_a_step_up_request_with_it(page, bob, step_up, engine):
    public_id = register(engine, step_up)
    with_authenticator(page)
    violations = watch_csp(page)  # the passkey script is a static file: nothing inline
    login(page, "bob@acme.test")
    add_passkey(page)
    passkey = Passkey.objects.get(user=bob)
    [registered] = AuditRecord.objects.filter(action="passkey.registered")
    assert passkey.name == "Work laptop" and registered.data["confirmed_with"] == "password"

    page.goto(f"/hitl/approvals/{public_id}/")
    expect(page.locator("#request, .card").first).to_contain_text("Approving needs your passkey")
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".flash")).to_contain_text("Approved")

    approval = ApprovalRequest.objects.get(public_id=public_id)
    assert (approval.status, approval.decided_by_email) == (Status.APPROVED, "bob@acme.test")
    [stepped_up] = AuditRecord.objects.filter(action="approval.stepped_up", object=public_id)
    assert stepped_up.actor == "bob@acme.test"
    assert stepped_up.data["passkey"] == passkey.public_id and stepped_up.data["call_digest"] == approval.call_digest
    assert stepped_up.data["user_verified"] is True
    assert Passkey.objects.get(pk=passkey.pk).last_used_at is not None
    assert violations == []


def test_a_replayed_assertion_and_one_made_for_another_request_are_refused(page, bob, step_up, engine):
    with_authenticator(page)
    login(page, "bob@acme.test")
    add_passkey(page)

    # Made for one request, sent for another: refused, and neither request is decided.
    first, second = register(engine, step_up, run_id="run_1"), register(engine, step_up, run_id="run_2")
    for_first = captured_assertion(page, first)
    refused = post_decision(page, second, for_first)
    assert "made for another request" in refused.text()
    assert status_of(first) == status_of(second) == Status.PENDING

    # A quorum request (2 approvals): bob's vote with his assertion counts once; the same assertion
    # sent again is refused as used, before "already voted" is even asked.
    quorum = register(engine, step_up, rule=1, run_id="run_3")
    answer = captured_assertion(page, quorum)
    voted = post_decision(page, quorum, answer)
    assert "Your approval is recorded" in voted.text()
    replayed = post_decision(page, quorum, answer)
    assert "already used" in replayed.text()
    assert status_of(quorum) == Status.PENDING
    assert AuditRecord.objects.filter(action="approval.stepped_up", object=quorum).count() == 1

    # Rejecting needs no passkey.
    rejected = post_decision(page, second, "", decision="reject")
    assert rejected.ok and status_of(second) == Status.REJECTED


def test_the_account_page_removes_a_passkey_and_it_approves_nothing_after(page, bob, step_up, engine):
    with_authenticator(page)
    login(page, "bob@acme.test")
    add_passkey(page)
    public_id = register(engine, step_up)
    answer = captured_assertion(page, public_id)

    # No password typed: the passkey itself confirms it is bob before it goes.
    page.goto("/hitl/account/")
    page.get_by_role("button", name="Remove").click()
    expect(page.locator("#no-passkeys")).to_be_visible()
    [removed] = AuditRecord.objects.filter(action="passkey.removed")
    assert removed.data["confirmed_with"] == "passkey"

    refused = post_decision(page, public_id, answer)
    assert "not one of yours" in refused.text()
    assert status_of(public_id) == Status.PENDING


def test_an_assertion_approves_exactly_the_edited_arguments_it_was_made_for(page, acme, alice, bob, engine):
    config = make_config(acme, "Refunds", pass_information_level="full")
    make_rule(config, require_passkey=True, allow_edit=True)
    publish(config, alice)
    public_id = register(engine, config)
    with_authenticator(page)
    login(page, "bob@acme.test")
    add_passkey(page)

    # Made while approving one edit, posted with other arguments: refused, nothing decided.
    made_for = '{"customer_id": "T-1"}'
    answer = captured_assertion(page, public_id, edited=made_for)
    refused = post_decision(page, public_id, answer, arguments='{"customer_id": "T-9999"}')
    assert "other arguments" in refused.text()
    assert status_of(public_id) == Status.PENDING

    # Approving the edit on the page: the assertion covers it, and the audit names the digest approved.
    page.goto(f"/hitl/approvals/{public_id}/")
    page.fill(f"#arguments-{public_id}", made_for)
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".flash")).to_contain_text("Approved")
    approval = ApprovalRequest.objects.get(public_id=public_id)
    assert approval.status == Status.APPROVED and approval.approved_arguments == {"customer_id": "T-1"}
    [stepped_up] = AuditRecord.objects.filter(action="approval.stepped_up", object=public_id)
    assert stepped_up.data["approved_digest"] == approval.approved_digest != approval.call_digest
