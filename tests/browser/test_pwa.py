"""The installable portal in Chromium: the manifest Chromium parses, the service worker it runs, what a
page shows offline, a push message shown as a notification, and the Approvals tab at 390 px."""

import json

import pytest
from playwright.sync_api import expect

from approvals.models import ApprovalRequest
from push.vapid import keys_new
from tests.factories import make_approval
from tests.helpers import make_config, make_rule, publish

from .conftest import login
from .test_csp import watch_csp

QUEUE = "/hitl/approvals/"


@pytest.fixture
def support(acme, alice):
    config = make_config(acme, "Support agent", pass_information_level="full")
    make_rule(config, message="Deletes of customer data need a second pair of eyes.")
    publish(config, alice)
    return config


def controlled(page) -> str:
    """Wait until the service worker is active and controls this page; its scope."""
    scope = page.evaluate("navigator.serviceWorker.ready.then((registration) => registration.scope)")
    if not page.evaluate("Boolean(navigator.serviceWorker.controller)"):
        page.reload()  # the first page was loaded before the worker existed; clients.claim() may beat this
    page.wait_for_function("Boolean(navigator.serviceWorker.controller)")
    return scope


def test_chromium_parses_the_manifest_and_runs_the_service_worker_for_hitl(page, live_server, bob):
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    assert controlled(page) == f"{live_server.url}/hitl/"

    cdp = page.context.new_cdp_session(page)
    found = cdp.send("Page.getAppManifest")
    assert found["url"] == f"{live_server.url}/manifest.webmanifest"
    assert found["errors"] == [], found["errors"]
    manifest = json.loads(found["data"])
    assert (manifest["name"], manifest["start_url"], manifest["scope"]) == ("HITL Portal", "/hitl/approvals/", "/hitl/")
    for icon in manifest["icons"]:
        answer = page.request.get(icon["src"])
        assert (answer.status, answer.headers["content-type"]) == (200, "image/png"), icon["src"]
    # Chromium's own verdict on whether it could be installed (manifest, icons, worker, secure origin);
    # a Playwright context is an incognito profile, where nothing installs — the one refusal left.
    verdict = cdp.send("Page.getInstallabilityErrors")["installabilityErrors"]
    assert [error["errorId"] for error in verdict] == ["in-incognito"]


def test_offline_a_request_page_and_the_approvals_tab_show_the_offline_page_never_a_kept_copy(page, bob, support):
    approval = make_approval(support, target="customer T-4821")
    violations = watch_csp(page)
    login(page, "bob@acme.test")
    page.goto(f"/hitl/approvals/{approval.public_id}/")
    controlled(page)
    expect(page.get_by_role("button", name="Approve")).to_be_visible()  # online: the live page with its form

    page.context.set_offline(True)
    try:
        for path in (f"/hitl/approvals/{approval.public_id}/", QUEUE):
            page.goto(path)
            expect(page.get_by_role("heading", name="You are offline")).to_be_visible()
            assert page.locator("form").count() == 0
            assert "customer T-4821" not in page.content()
            # The kept stylesheet came along: the offline page looks like the portal.
            assert page.evaluate("getComputedStyle(document.querySelector('.topbar')).display") != "inline"
    finally:
        page.context.set_offline(False)
    page.goto(f"/hitl/approvals/{approval.public_id}/")
    expect(page.get_by_role("button", name="Approve")).to_be_visible()  # back online: the live page again
    assert violations == []


def test_a_push_message_is_shown_as_a_notification_that_names_the_request_page(page, live_server, bob):
    page.context.grant_permissions(["notifications"])
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    controlled(page)
    cdp = page.context.new_cdp_session(page)
    registrations = []
    cdp.on("ServiceWorker.workerRegistrationUpdated", lambda event: registrations.extend(event["registrations"]))
    cdp.send("ServiceWorker.enable")
    for _ in range(50):  # the registrations arrive as an event after enable
        if any(r["scopeURL"].endswith("/hitl/") for r in registrations):
            break
        page.wait_for_timeout(100)
    [registration] = [r for r in registrations if r["scopeURL"].endswith("/hitl/")][:1]
    message = {
        "title": "Approve: Delete customer T-4821?",
        "body": "support-bot asks · run run_1",
        "url": "https://elsewhere.example/hitl/approvals/apr_x/",
        "tag": "apr_x",
    }
    shown = []
    # DevTools drops a push that reaches a worker it is still starting; a push service would send it again, so
    # does this test (the same tag: one notification however many arrive).
    for _ in range(5):
        cdp.send(
            "ServiceWorker.deliverPushMessage",
            {"origin": live_server.url, "registrationId": registration["registrationId"], "data": json.dumps(message)},
        )
        shown = page.evaluate(
            """async () => {
              const registration = await navigator.serviceWorker.ready;
              for (let i = 0; i < 40; i++) {
                const found = await registration.getNotifications({ tag: "apr_x" });
                if (found.length) return found.map((n) => ({ title: n.title, body: n.body, data: n.data }));
                await new Promise((resolve) => setTimeout(resolve, 50));
              }
              return [];
            }"""
        )
        if shown:
            break
    assert shown == [
        {"title": message["title"], "body": message["body"], "data": {"url": message["url"]}},
    ]
    # A tap opens that path on this portal, whatever host the message named (notificationclick's target).
    [worker] = [w for w in page.context.service_workers if w.url.endswith("/hitl/sw.js")]
    assert worker.evaluate(f"clickTarget({json.dumps(message['url'])})") == f"{live_server.url}/hitl/approvals/apr_x/"
    assert worker.evaluate("clickTarget(undefined)") == f"{live_server.url}/hitl/approvals/"


def test_the_approvals_tab_works_at_390_px_with_the_worker_in_charge(new_page, bob, support):
    approval = make_approval(support, target="customer T-4821", summary="Delete the customer and their tickets")
    page = new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    controlled(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    approve = page.locator(f"#card-{approval.public_id}").get_by_role("button", name="Approve")
    box = approve.bounding_box()
    assert 0 <= box["x"] and box["x"] + box["width"] <= 390
    approve.click()
    expect(page.locator("#decided-log")).to_contain_text("Approved by bob@acme.test")
    assert ApprovalRequest.objects.get(pk=approval.pk).status == "approved"


PRIVATE_KEY, PUBLIC_KEY = keys_new()


@pytest.mark.server_env(HITL_VAPID_PRIVATE_KEY=PRIVATE_KEY, HITL_VAPID_SUBJECT="mailto:ops@acme.test")
def test_the_account_page_at_390_px_offers_this_browser_under_the_csp(new_page, bob, live_server):
    page = new_page()
    violations = watch_csp(page)
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, "bob@acme.test")
    page.goto("/")
    page.get_by_role("link", name="bob@acme.test").click()
    section = page.locator("#push")
    expect(section.get_by_role("heading", name="Notifications on this device")).to_be_visible()
    assert section.get_attribute("data-push-key") == PUBLIC_KEY
    # static/js/push.js ran: it found the worker's registration and no subscription yet.
    expect(section.get_by_role("status")).to_have_text("This browser is not notified.")
    expect(section.get_by_role("button", name="Notify this browser")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert violations == []
