"""`hitl demo`: a small demo workspace so the portal is worth looking at in its first minute."""

import argparse
import os
import sys
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand
from django.utils import timezone

from approvals.engine.digest import call_digest
from approvals.models import ApprovalKind, ApprovalRequest
from contacts.refs import refs_grant
from contacts.services import contact_create
from rules import services as rule_services
from rules.models import Config
from workspaces import services as ws_services
from workspaces.models import Plan, Workspace

ADMIN = ("admin@acme.test", "acme-admin-demo")
REVIEWER = ("reviewer@acme.test", "acme-reviewer-demo")


def _seed() -> Workspace:
    # Long: the demo workspace is one story (members, configs, rules, requests), seeded top to bottom.
    acme = ws_services.workspace_create(slug="acme", plan=Plan.PRO, name="Acme Support")
    hobby = ws_services.workspace_create(slug="hobby", plan=Plan.FREE, name="Hobby (Free plan)")
    admin = ws_services.member_add(workspace=acme, email=ADMIN[0], role="admin", password=ADMIN[1]).user
    # The README sends staff to Django admin (plans, tokens, history): the demo admin can go there.
    admin.is_staff = admin.is_superuser = True
    admin.save(update_fields=["is_staff", "is_superuser"])
    ws_services.member_add(workspace=acme, email=REVIEWER[0], role="reviewer", password=REVIEWER[1])
    ws_services.member_add(workspace=hobby, email=ADMIN[0], role="admin")

    support = rule_services.config_create(workspace=acme, name="Support agent")
    rule_services.config_update(config=support, pass_information_level="full", token_cap_per_turn=50_000)
    # make run sets these variables: a receiver it starts on loopback, and the reviewer's address
    # (email goes to the console backend there), so a newcomer sees a notification happen. They are not
    # acme's own (HITL_ACME_…): the demo host grants them, as a host grants any shared variable.
    refs_grant(workspace=acme, names=["HITL_DEMO_WEBHOOK", "HITL_DEMO_WEBHOOK_SECRET", "HITL_DEMO_REVIEWER_EMAIL"])
    hook = contact_create(
        config=support,
        name="Demo webhook",
        channel="webhook",
        channel_ref="${HITL_DEMO_WEBHOOK}",
        secret_ref="${HITL_DEMO_WEBHOOK_SECRET}",
    )
    mail = contact_create(
        config=support, name="Reviewer by email", channel="email", channel_ref="${HITL_DEMO_REVIEWER_EMAIL}"
    )
    rule_services.rule_create(
        config=support,
        message="Deletes of customer data need a second pair of eyes.",
        notify=[hook.public_id, mail.public_id],
    )
    contact_create(
        config=support, name="Support leads", channel="slack", channel_ref="${HITL_ACME_SUPPORT_LEADS_SLACK}"
    )
    rule_services.config_publish(config=support, user=admin, note="Gate every delete")
    # A rule that allows run grants, so a newcomer sees "Approve for the rest of this run" on the refund card.
    rule_services.rule_create(
        config=support,
        kind="mcp_server",
        match="mcp_billing",
        message="Refunds move real money. A reviewer may approve the rest of a run's refunds at once.",
        order=20,
        allow_run_grant=True,
    )
    rule_services.rule_create(config=support, kind="worker", match="*", enabled=False, order=30)
    contact_create(
        config=support, name="Finance on call", channel="email", channel_ref="${HITL_ACME_FINANCE_ONCALL_EMAIL}"
    )
    v2 = rule_services.config_publish(config=support, user=admin, note="Also gate the billing MCP server")

    notebook = rule_services.config_create(workspace=acme, name="Data notebook")
    rule_services.rule_create(
        config=notebook, kind="cell", match="*", point="entry", message="Cells write to the warehouse."
    )

    _, engine_key = ws_services.token_create(workspace=acme, engine_name="demo-engine")
    now = timezone.now()
    calls = [
        ("support-bot", "customer T-4821", "delete", None, "Delete the customer record and their tickets", 3),
        (
            "support-bot",
            "mcp_billing",
            "issue_refund",
            {"ticket_id": "T-4821", "amount_cents": 4900},
            "Refund 49.00 USD",
            1,
        ),
    ]
    for index, (caller, target, operation, arguments, summary, minutes_ago) in enumerate(calls):
        rule = v2.rules[index]
        ApprovalRequest.objects.create(
            workspace=acme,
            kind=ApprovalKind.GATE,
            config=support,
            config_version=v2.number,
            rule_id=rule["id"],
            boundary=rule["kind"],
            point=rule["point"],
            message=rule["message"],
            allow_run_grant=rule.get("allow_run_grant", False),
            run_id=f"run_demo_{index}",
            thread_id="thr_demo",
            caller=caller,
            target=target,
            operation=operation,
            pass_information_level=v2.pass_information_level,
            summary=summary,
            arguments=arguments,
            call_digest=call_digest(target=target, operation=operation, arguments=arguments),
            created_at=now - timedelta(minutes=minutes_ago),
            expires_at=now + timedelta(hours=24, minutes=-minutes_ago),
        )
    ApprovalRequest.objects.create(
        workspace=acme,
        kind=ApprovalKind.TOKEN_CAP,
        config=support,
        config_version=v2.number,
        run_id="run_demo_cap",
        thread_id="thr_demo",
        caller="support-bot",
        pass_information_level=v2.pass_information_level,
        tokens_used=51_200,
        token_cap=50_000,
        scope="turn",
        created_at=now,
        expires_at=now + timedelta(hours=24),
    )
    return acme, engine_key


def python() -> str:
    """This interpreter as the reader should type it: `.venv/bin/python` works without activating the venv."""
    path = os.path.relpath(sys.executable)
    return path if not path.startswith("..") else sys.executable


def demo(cmd: BaseCommand, options: dict[str, Any]) -> None:
    url = options["url"]
    if Workspace.objects.filter(slug="acme").exists():
        cmd.stdout.write("The demo workspace is already loaded.")
        engine_key = None
    else:
        _, engine_key = _seed()
        cmd.stdout.write("Loaded the demo workspace 'Acme Support' (Pro) and 'Hobby' (Free).")
    support = Config.objects.filter(workspace__slug="acme", name="Support agent").first()
    lines = [
        "",
        f"  HITL Portal is starting at {url}",
        f"  Admin:    {ADMIN[0]} / {ADMIN[1]}",
        f"  Reviewer: {REVIEWER[0]} / {REVIEWER[1]}",
    ]
    if engine_key:
        lines.append(f"  Engine key (shown once): {engine_key}")
    else:
        # Only a hash of the first key is stored: say how to make another rather than print nothing.
        engine_key = "KEY"
        lines.append(
            f"  Engine key: shown once, on the first run. A new one: "
            f"{python()} manage.py hitl token create --workspace acme --engine demo-engine"
        )
    if support:
        lines.append(
            f"  Try: {python()} manage.py hitl demo-engine --url {url} --key {engine_key} --config {support.public_id}"
        )
    lines.append(f"  Django admin: {url.rstrip('/')}/admin/ (as {ADMIN[0]})")
    cmd.stdout.write("\n".join(lines) + "\n")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="load the demo workspace (once) and print the logins")
    parser.add_argument("--url", default="http://127.0.0.1:8000/")
    parser.set_defaults(handler=demo)
