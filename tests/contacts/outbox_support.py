"""Worlds for the outbox's fairness and burst tests: a workspace whose rule tells given contacts, and an
endpoint that accepts connections and never answers."""

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from tests.loopback import SECRET

from ..helpers import make_config, make_rule, make_token, make_workspace, publish


def notifying_world(slug: str, monkeypatch, **contacts: tuple[str, str]) -> dict:
    """Workspace `slug` whose rule tells each contact: name → (channel, address). Each address is put in
    the workspace's own HITL_<SLUG>_… variable, as an operator would."""
    from contacts.services import contact_create
    from workspaces.models import ApiToken

    workspace = make_workspace(slug, plan="pro")
    config = make_config(workspace, pass_information_level="summary")
    made = {}
    for name, (channel, address) in contacts.items():
        variable = f"HITL_{slug.upper()}_{name.upper()}"
        monkeypatch.setenv(variable, address)
        secret = {}
        if channel == "webhook":
            monkeypatch.setenv(f"{variable}_SECRET", SECRET)
            secret = {"secret_ref": f"${{{variable}_SECRET}}"}
        made[name] = contact_create(config=config, name=name, channel=channel, channel_ref=f"${{{variable}}}", **secret)
    rule = make_rule(config, message="Check before deleting", notify=[c.public_id for c in made.values()])
    version = publish(config)
    make_token(workspace, engine=f"{slug}-engine")
    return {
        "workspace": workspace,
        "config": config,
        "rule": rule,
        "version": version,
        "contacts": made,
        "engine_key": ApiToken.objects.get(workspace=workspace, kind="engine"),
    }


@contextmanager
def silent_endpoint() -> Iterator[str]:
    """A URL whose server accepts every connection (the kernel's backlog does) and never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
    finally:
        listener.close()
