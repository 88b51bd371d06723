"""Web Push end to end: a push service on loopback (tests/loopback.py), browsers' keys made as a browser makes them."""

import pytest

from push.vapid import keys_new
from tests.loopback import FakeBrowser, PushService, push_service  # noqa: F401 — the fixture

from ..helpers import make_config, make_member, make_rule, make_token, publish


@pytest.fixture
def vapid_env(monkeypatch, settings) -> dict[str, str]:
    """The portal's VAPID key pair and subject, set here (and for a cluster); http endpoints allowed for loopback."""
    private, public = keys_new()
    env = {
        "HITL_VAPID_PRIVATE_KEY": private,
        "HITL_VAPID_PUBLIC_KEY": public,
        "HITL_VAPID_SUBJECT": "mailto:ops@acme.test",
        "HITL_PUSH_ALLOW_HTTP": "true",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings.HITL_PUSH_ALLOW_HTTP = True
    return env


@pytest.fixture
def pushed(acme, alice, bob, vapid_env) -> dict:
    """acme with a config whose rule notifies a `push` contact; an engine key."""
    from contacts.services import contact_create
    from workspaces.models import ApiToken

    config = make_config(acme, pass_information_level="full")
    phones = contact_create(config=config, name="Reviewers' phones", channel="push")
    rule = make_rule(config, message="Check before deleting", notify=[phones.public_id])
    version = publish(config)
    make_token(acme, engine="support-engine")
    return {
        "workspace": acme,
        "alice": alice,
        "bob": bob,
        "config": config,
        "rule": rule,
        "contact": phones,
        "version": version,
        "engine_key": ApiToken.objects.get(workspace=acme, kind="engine"),
        "fields": {"arguments": {"customer_id": "T-4821", "api_key": "sk-live-do-not-show"}},
    }


def subscribe(user, browser: FakeBrowser, workspace=None):
    """As the account page's script does it, minus the browser: the service the API calls."""
    from push.services import push_subscription_save

    keys = browser.subscription["keys"]
    subscription, _ = push_subscription_save(
        workspace=workspace or user.memberships.get().workspace,
        user=user,
        endpoint=browser.subscription["endpoint"],
        p256dh=keys["p256dh"],
        auth=keys["auth"],
    )
    return subscription


__all__ = ["FakeBrowser", "PushService", "make_member", "subscribe"]
