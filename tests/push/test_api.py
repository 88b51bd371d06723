"""Subscribing a browser (/api/v1/push/subscriptions), the installable portal's files, `hitl vapid-keys new`."""

import json
from io import StringIO
from urllib.parse import urlencode

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client

from contacts.models import Contact
from push.models import PushSubscription
from push.vapid import b64url_decode, keys_new
from tests.helpers import make_config, make_token

from .conftest import FakeBrowser, subscribe

URL = "/api/v1/push/subscriptions"
pytestmark = pytest.mark.django_db


@pytest.fixture
def browser_of_bob(bob, vapid_env, push_service) -> tuple[Client, FakeBrowser]:
    """bob logged in on a browser that checks CSRF as a real one is held to."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    client.get("/hitl/account/")  # sets the csrftoken cookie
    return client, FakeBrowser(push_service, "bob-phone")


def send(client: Client, method: str, body: dict, *, csrf: bool = True):
    headers = {"X-CSRFToken": client.cookies["csrftoken"].value} if csrf else {}
    if method == "DELETE":
        return client.delete(URL, QUERY_STRING=urlencode(body), headers=headers)
    return client.generic(method, URL, json.dumps(body), content_type="application/json", headers=headers)


def test_a_reviewer_subscribes_this_browser_from_the_session_and_takes_it_back(browser_of_bob, acme, bob):
    client, phone = browser_of_bob
    created = send(client, "POST", phone.subscription)
    assert created.status_code == 201, created.content
    assert created.json()["id"].startswith("psb_")
    assert created.json()["endpoint_host"] == "127.0.0.1"
    [stored] = PushSubscription.objects.all()
    assert (stored.workspace, stored.user, stored.endpoint) == (acme, bob, phone.subscription["endpoint"])
    assert stored.p256dh == phone.subscription["keys"]["p256dh"]

    again = send(client, "POST", phone.subscription)  # the page subscribes again on every visit: no new row
    assert again.status_code == 200 and PushSubscription.objects.count() == 1

    gone = send(client, "DELETE", {"endpoint": phone.subscription["endpoint"]})
    assert gone.status_code == 204
    assert not PushSubscription.objects.exists()


def test_without_the_csrf_token_a_session_cannot_subscribe(browser_of_bob):
    client, phone = browser_of_bob
    refused = send(client, "POST", phone.subscription, csrf=False)
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]["message"]
    assert not PushSubscription.objects.exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"endpoint": "javascript:alert(1)"}, "endpoint"),
        ({"endpoint": "ftp://push.example/abc"}, "endpoint"),
        ({"keys": {"p256dh": "not-a-key", "auth": "AAAAAAAAAAAAAAAAAAAAAA"}}, "keys.p256dh"),
        ({"keys": {"p256dh": None, "auth": "x"}}, "keys.p256dh"),
        ({"keys": {"auth": "x"}}, "keys.p256dh"),
        ({"keys": "nope"}, "keys"),
        ({"endpoint": 42}, "endpoint"),
    ],
)
def test_what_is_not_a_push_subscription_is_a_400_naming_the_field(browser_of_bob, change, field):
    client, phone = browser_of_bob
    body = {**phone.subscription, **change}
    response = send(client, "POST", body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert any(name == field or name.startswith(field) for name in error["fields"]), error
    assert not PushSubscription.objects.exists()


def test_a_short_auth_secret_is_refused(browser_of_bob):
    client, phone = browser_of_bob
    body = {**phone.subscription, "keys": {**phone.subscription["keys"], "auth": "c2hvcnQ"}}
    response = send(client, "POST", body)
    assert response.status_code == 400
    assert "keys.auth" in response.json()["error"]["fields"]


def test_a_plain_http_endpoint_is_refused_unless_allowed(browser_of_bob, settings):
    settings.HITL_PUSH_ALLOW_HTTP = False
    client, phone = browser_of_bob
    response = send(client, "POST", phone.subscription)
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["endpoint"].startswith("endpoint must be the https URL")


def test_an_engine_key_has_no_browser_to_subscribe(engine_api, bob, push_service, vapid_env):
    response = engine_api.post(URL, FakeBrowser(push_service, "engine").subscription)
    assert response.status_code == 403
    assert not PushSubscription.objects.exists()


def test_unsubscribing_touches_only_ones_own_browser_in_this_workspace(
    bob_api, alice, bob, charlie, globex, push_service, vapid_env
):
    alices = FakeBrowser(push_service, "alice")
    subscribe(alice, alices)
    response = bob_api.delete(URL, params={"endpoint": alices.subscription["endpoint"]})
    assert response.status_code == 204  # nothing to say about another's browser, not even that it exists
    assert PushSubscription.objects.filter(user=alice).exists()


def test_a_push_contact_names_no_address(alice_api, acme):
    config = make_config(acme)
    path = f"/api/v1/configs/{config.public_id}/contacts"
    created = alice_api.post(path, {"name": "Phones", "channel": "push"})
    assert created.status_code == 201, created.text
    assert (created.json()["channel"], created.json()["channel_ref"]) == ("push", "")
    refused = alice_api.post(path, {"name": "Phones", "channel": "push", "channel_ref": "${HITL_ACME_PHONES}"})
    assert refused.status_code == 400
    assert "takes no channel reference" in refused.json()["error"]["fields"]["channel_ref"]
    assert Contact.objects.filter(channel="push").count() == 1


def test_the_manifest_is_served_as_a_manifest_naming_icons_that_exist(client, db):
    response = client.get("/manifest.webmanifest")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/manifest+json"
    manifest = json.loads(response.content)
    assert (manifest["scope"], manifest["start_url"], manifest["display"]) == (
        "/hitl/",
        "/hitl/approvals/",
        "standalone",
    )
    sizes = {icon["sizes"] for icon in manifest["icons"]}
    assert {"192x192", "512x512"} <= sizes
    for icon in manifest["icons"]:  # served by WhiteNoise on the live server (tests/browser/test_pwa.py)
        assert finders.find(icon["src"].removeprefix("/static/")), icon["src"]


def test_the_service_worker_is_served_for_the_hitl_scope_and_never_cached(client, db):
    response = client.get("/hitl/sw.js")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    assert response["Service-Worker-Allowed"] == "/hitl/"
    assert "no-cache" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]
    assert b"notificationclick" in b"".join(response.streaming_content if response.streaming else [response.content])


def test_the_offline_page_holds_nobodys_data_and_no_form(client, bob):
    client.force_login(bob)
    response = client.get("/hitl/offline/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "You are offline" in html
    assert "bob@acme.test" not in html and "csrf" not in html.lower() and "<form" not in html


def test_the_account_page_offers_this_browser_with_the_portals_public_key(client, bob, vapid_env):
    client.force_login(bob)
    html = client.get("/hitl/account/").content.decode()
    assert f'data-push-key="{vapid_env["HITL_VAPID_PUBLIC_KEY"]}"' in html
    assert "Notify this browser" in html


def test_the_account_page_says_when_push_is_not_set_up(client, bob, monkeypatch):
    monkeypatch.delenv("HITL_VAPID_PRIVATE_KEY", raising=False)
    client.force_login(bob)
    html = client.get("/hitl/account/").content.decode()
    assert "Web Push is not set up" in html and "Notify this browser" not in html


def test_vapid_keys_new_prints_a_pair_that_belongs_together(monkeypatch):
    out = StringIO()
    call_command("hitl", "vapid-keys", "new", stdout=out)
    lines = dict(line.split("=", 1) for line in out.getvalue().split())
    assert set(lines) == {"HITL_VAPID_PRIVATE_KEY", "HITL_VAPID_PUBLIC_KEY"}
    assert len(b64url_decode(lines["HITL_VAPID_PRIVATE_KEY"])) == 32
    monkeypatch.setenv("HITL_VAPID_PRIVATE_KEY", lines["HITL_VAPID_PRIVATE_KEY"])
    monkeypatch.delenv("HITL_VAPID_PUBLIC_KEY", raising=False)
    from push.vapid import public_key

    assert public_key() == lines["HITL_VAPID_PUBLIC_KEY"]
    monkeypatch.setenv("HITL_VAPID_PUBLIC_KEY", keys_new()[1])  # half of another pair: push is off
    assert public_key() is None


def test_a_user_token_may_subscribe_too(acme, bob, push_service, vapid_env, make_api):
    api = make_api(make_token(acme, user=bob))
    response = api.post(URL, FakeBrowser(push_service, "cli").subscription)
    assert response.status_code == 201


def test_a_person_subscribes_at_most_twenty_browsers_here(browser_of_bob, bob, push_service):
    from push.services import SUBSCRIPTIONS_PER_USER

    client, _ = browser_of_bob
    for n in range(SUBSCRIPTIONS_PER_USER):
        subscribe(bob, FakeBrowser(push_service, f"b{n}"))
    refused = send(client, "POST", FakeBrowser(push_service, "one-too-many").subscription)
    assert refused.status_code == 400
    assert "unsubscribe one you no longer use" in refused.json()["error"]["fields"]["endpoint"]
    again = send(client, "POST", FakeBrowser(push_service, "b0").subscription)  # a known browser's new keys
    assert again.status_code == 200


def test_the_csp_lets_our_own_worker_and_manifest_in_and_nothing_else(client, bob):
    client.force_login(bob)
    policy = client.get("/hitl/approvals/")["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if " " in part.strip())
    assert directives["worker-src"] == "'self'"
    assert directives["manifest-src"] == "'self'"
    assert "'unsafe-inline'" not in policy
