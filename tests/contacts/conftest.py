"""Notifications end to end: a loopback webhook receiver, an SMTP server, the django-q2 cluster."""

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.faults.conftest import ROOT, stop, subprocess_env

from ..helpers import make_config, make_member, make_rule, make_token, make_workspace, publish
from .receiver import SECRET, Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


@pytest.fixture
def hook_env(receiver, monkeypatch) -> dict[str, str]:
    """The variables a webhook contact names, set here and for the cluster (values never stored)."""
    env = {"HITL_TEST_HOOK": receiver.url, "HITL_TEST_HOOK_SECRET": SECRET}
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
        channel_ref="${HITL_TEST_HOOK}",
        secret_ref="${HITL_TEST_HOOK_SECRET}",
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


def register(world: dict, **fields):
    """A gate request through the registration service, as the engine API makes it."""
    from approvals.services import approval_register

    data = {
        "kind": "gate",
        "config_id": world["config"].public_id,
        "config_version": world["version"].number,
        "rule_id": world["rule"].public_id,
        "run_id": "run_1",
        "thread_id": "thr_1",
        "caller": "support-bot",
        "target": "customer T-4821",
        "operation": "delete",
        **fields,
    }
    return approval_register(workspace=world["workspace"], engine_key=world["engine_key"], **data).approval


class Cluster:
    """`manage.py qcluster` on the test database, with the contacts' variables in its environment."""

    def __init__(self, **env: str) -> None:
        self.env = env
        self.process: subprocess.Popen | None = None
        artifacts = ROOT / "test-artifacts"
        self.log = open(artifacts / "notify-cluster.log", "a") if artifacts.is_dir() else subprocess.DEVNULL

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=subprocess_env(Q_WORKERS="2", Q_POLL="0.1", HITL_DELIVERY_RETRY_BASE_SECONDS="1", **self.env),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self, sig) -> None:
        assert self.process is not None
        stop(self.process, sig)

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)


@pytest.fixture
def cluster(hook_env) -> Iterator[Cluster]:
    running = Cluster(**hook_env)
    running.start()
    try:
        yield running
    finally:
        running.stop()


class Mailbox:
    """An SMTP server on loopback (aiosmtpd) keeping every message it is given."""

    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        from tests.faults.conftest import free_port

        self.messages: list = []
        mailbox = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                import email

                mailbox.messages.append((envelope.rcpt_tos, email.message_from_bytes(envelope.content)))
                return "250 OK"

        self.port = free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)


@pytest.fixture
def mailbox(settings) -> Iterator[Mailbox]:
    """Django's SMTP backend pointed at the loopback server (the settings an operator would set)."""
    box = Mailbox()
    box.controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = box.port
    try:
        yield box
    finally:
        box.controller.stop()


def parts(message) -> dict[str, str]:
    """The text and HTML parts of a received message, by content type."""
    return {
        part.get_content_type(): part.get_payload(decode=True).decode()
        for part in message.walk()
        if part.get_content_type() in ("text/plain", "text/html")
    }
