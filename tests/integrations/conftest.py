import hashlib
import hmac
import json
import time
from urllib.parse import urlencode

import pytest
import requests
from django.test.utils import override_settings

from tests.chat_fixtures import config, request_for_deletion  # noqa: F401 — this folder's fixtures
from tests.helpers import chat_world, make_member
from tests.loopback import FakeSlack

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-test-bot-token"
CHANNEL_REF = "${HITL_ACME_SLACK_APPROVERS}"
CHANNEL = "C0APPROVERS"

# Slack users of the tests, by Slack id: bob is acme's reviewer, charlie an admin of globex only.
BOB_SLACK = "U0BOB"
ALICE_SLACK = "U0ALICE"
CHARLIE_SLACK = "U0CHARLIE"


@pytest.fixture(scope="module")
def _slack_api():
    """The fake Slack Web API, one per module: the portal's server below is pointed at it when it starts."""
    fake = FakeSlack().start()
    yield fake
    fake.stop()


SLACK_ENV = {
    "HITL_SLACK_BOT_TOKEN": BOT_TOKEN,
    "HITL_SLACK_SIGNING_SECRET": SIGNING_SECRET,
    "HITL_BASE_URL": "https://portal.example",
    "HITL_ACME_SLACK_APPROVERS": CHANNEL,
    "HITL_ACME_SLACK_LEADS": "C0LEADS",
}


@pytest.fixture(scope="module")
def live_server(django_db_setup, django_db_blocker, _slack_api):
    """The portal as `make serve` runs it, set up with the Slack app's variables: a test's `settings`
    cannot reach a server in another process, so the server is started with them."""
    from tests.asgi import AsgiServer

    with django_db_blocker.unblock(), AsgiServer(HITL_SLACK_API_URL=_slack_api.url, **SLACK_ENV) as server:
        server._live_server_modified_settings = override_settings()  # pytest-django enables it per test: nothing
        yield server


@pytest.fixture
def fake_slack(_slack_api, settings, monkeypatch, alice, bob, charlie):
    fake = _slack_api
    fake.reset()  # what the module's earlier tests left
    settings.HITL_SLACK_API_URL = fake.url
    settings.HITL_SLACK_BOT_TOKEN = BOT_TOKEN
    settings.HITL_SLACK_SIGNING_SECRET = SIGNING_SECRET
    settings.HITL_BASE_URL = "https://portal.example"
    monkeypatch.setenv("HITL_ACME_SLACK_APPROVERS", CHANNEL)
    monkeypatch.setenv("HITL_ACME_SLACK_LEADS", "C0LEADS")
    fake.add_user(ALICE_SLACK, "Alice@Acme.test")  # Slack's case, not the portal's: emails match regardless
    fake.add_user(BOB_SLACK, "bob@acme.test")
    fake.add_user(CHARLIE_SLACK, "charlie@globex.test")
    yield fake


@pytest.fixture
def slack_world(acme, bob):
    """acme's config whose delete rule tells the #approvers Slack contact of every event."""
    return chat_world(
        acme, channel="slack", approvers=("#approvers", CHANNEL_REF), leads=("#leads", "${HITL_ACME_SLACK_LEADS}")
    )


def sign(body: str, *, timestamp: int | None = None, secret: str = SIGNING_SECRET) -> dict:
    """The headers Slack sends with a request body."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {
        "X-Slack-Request-Timestamp": str(timestamp),
        "X-Slack-Signature": f"v0={digest}",
        "Content-Type": "application/x-www-form-urlencoded",
    }


def form(payload: dict) -> str:
    return urlencode({"payload": json.dumps(payload)})


def post_signed(base_url: str, payload: dict, **signing) -> requests.Response:
    body = form(payload)
    return requests.post(
        f"{base_url}/integrations/slack/interactions", data=body, headers=sign(body, **signing), timeout=10
    )


def click(approval, action: str, *, slack_user: str, channel: str = CHANNEL, ts: str = "1764480000.000001") -> dict:
    """A block_actions payload as Slack sends it when someone presses a button on the request's message."""
    return {
        "type": "block_actions",
        "team": {"id": "T0ACME", "domain": "acme"},
        "user": {"id": slack_user, "username": slack_user.lower(), "team_id": "T0ACME"},
        "api_app_id": "A0HITL",
        "trigger_id": f"trigger-{slack_user}-{action}",
        "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": False},
        "channel": {"id": channel, "name": "approvers"},
        "response_url": "https://hooks.slack.invalid/actions/T0ACME/1/xyz",
        "actions": [
            {
                "type": "button",
                "block_id": "hitl_decision",
                "action_id": action,
                "value": approval.public_id,
                "action_ts": "1764480001.000100",
            }
        ],
    }


def submit_reason(view: dict, reason: str, *, slack_user: str) -> dict:
    """The view_submission Slack sends when the reason modal the portal opened is submitted."""
    return {
        "type": "view_submission",
        "team": {"id": "T0ACME"},
        "user": {"id": slack_user, "team_id": "T0ACME"},
        "view": {
            "id": "V0001",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "state": {"values": {"reason": {"reason": {"type": "plain_text_input", "value": reason}}}},
        },
    }


def member(workspace, email, role):
    return make_member(workspace, email, role)
