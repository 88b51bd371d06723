"""Worlds for the outbox's fairness and burst tests: a workspace whose rule tells given contacts (the
endpoint that never answers is bench.channels.silent_endpoint, the bench's burst uses it too)."""

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
