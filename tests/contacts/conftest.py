"""Notifications end to end: a loopback webhook receiver, an SMTP server (tests/loopback.py), the django-q2 cluster."""

from collections.abc import Iterator

import pytest

from tests.loopback import SECRET, Cluster

from ..helpers import make_config, make_member, make_rule, make_token, make_workspace, publish


@pytest.fixture
def hook_env(receiver, monkeypatch) -> dict[str, str]:
    """The variables a webhook contact names, set here and for the cluster (values never stored)."""
    env = {"HITL_ACME_TEST_HOOK": receiver.url, "HITL_ACME_TEST_HOOK_SECRET": SECRET}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def notified(db) -> dict:
    """acme (Pro), bob a reviewer, an engine key, a config whose rule notifies a webhook contact."""
    from contacts.services import contact_create
    from workspaces.models import ApiToken

    acme = make_workspace("acme", plan="pro")
    bob = make_member(acme, "bob@acme.test", "reviewer")
    config = make_config(acme, pass_information_level="summary")
    hook = contact_create(
        config=config,
        name="On-call hook",
        channel="webhook",
        channel_ref="${HITL_ACME_TEST_HOOK}",
        secret_ref="${HITL_ACME_TEST_HOOK_SECRET}",
    )
    rule = make_rule(config, message="Check before deleting", notify=[hook.public_id])
    version = publish(config)
    make_token(acme, engine="support-engine")
    return {
        "workspace": acme,
        "bob": bob,
        "config": config,
        "rule": rule,
        "hook": hook,
        "version": version,
        "engine_key": ApiToken.objects.get(workspace=acme, kind="engine"),
    }


@pytest.fixture
def cluster(hook_env) -> Iterator[Cluster]:
    running = Cluster(**hook_env).start()
    try:
        yield running
    finally:
        running.stop()
