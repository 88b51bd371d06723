"""CLI: `hitl refs grant|revoke|list` — the variables a workspace's contacts may name beyond its own
`HITL_<SLUG>_…` (contacts/refs.py, docs/notifications.md)."""

import argparse
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from rules.models import ConfigVersion
from workspaces.cli import get_workspace
from workspaces.models import Workspace

from .models import Contact, ReferenceGrant
from .refs import contact_names, reference_refusal, refs_grant, refs_revoke


def grant(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = get_workspace(options["slug"])
    try:
        new = refs_grant(workspace=workspace, names=options["names"])
    except ValidationError as error:
        raise CommandError(" ".join(error.messages)) from None
    for name in options["names"]:
        cmd.stdout.write(f"{workspace.slug} {name} {'granted' if name in new else 'already granted'}")


def revoke(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = get_workspace(options["slug"])
    gone = refs_revoke(workspace=workspace, names=options["names"])
    for name in options["names"]:
        cmd.stdout.write(f"{workspace.slug} {name} {'revoked' if name in gone else 'was not granted'}")


def named_by(workspace: Workspace) -> dict[str, list[str]]:
    """Every variable the workspace's contacts name — draft, and as every published version froze them —
    with the contacts naming it."""
    found: dict[str, list[str]] = {}

    def add(contact_id: str, refs: list[str]) -> None:
        for name in contact_names(refs):
            found.setdefault(name, [])
            if contact_id not in found[name]:
                found[name].append(contact_id)

    for contact in Contact.objects.filter(config__workspace=workspace).order_by("pk"):
        add(contact.public_id, [contact.channel_ref, contact.secret_ref])
    for frozen in ConfigVersion.objects.filter(config__workspace=workspace).values_list("contacts", flat=True):
        for contact in frozen:
            add(contact.get("id", "?"), [contact.get("channel_ref", ""), contact.get("secret_ref", "")])
    return found


def listing(cmd: BaseCommand, options: dict[str, Any]) -> None:
    """One line per grant (`granted`) and per variable a contact names that the workspace may not use
    (`refused`, with the contacts naming it): after an upgrade, what the host has to decide on."""
    workspaces = [get_workspace(options["slug"])] if options["slug"] else list(Workspace.objects.order_by("slug"))
    for workspace in workspaces:
        for grant_row in ReferenceGrant.objects.filter(workspace=workspace):
            cmd.stdout.write(f"{workspace.slug} {grant_row.name} granted")
        for name, contacts in sorted(named_by(workspace).items()):
            if reference_refusal(workspace=workspace, name=name):
                cmd.stdout.write(f"{workspace.slug} {name} refused, named by {', '.join(contacts)}")


def register(subparsers: argparse._SubParsersAction) -> None:
    refs = subparsers.add_parser("refs", help="the ${HITL_…} variables a workspace's contacts may name")
    rs = refs.add_subparsers(dest="refs_command", required=True, metavar="grant|revoke|list")
    granting = rs.add_parser("grant", help="let a workspace's contacts name these variables (audited)")
    granting.add_argument("slug")
    granting.add_argument("names", nargs="+", metavar="NAME")
    granting.set_defaults(handler=grant)
    revoking = rs.add_parser("revoke", help="take grants back: deliveries naming them fail from now on (audited)")
    revoking.add_argument("slug")
    revoking.add_argument("names", nargs="+", metavar="NAME")
    revoking.set_defaults(handler=revoke)
    listed = rs.add_parser("list", help="grants, and variables contacts name that their workspace may not use")
    listed.add_argument("slug", nargs="?", default="")
    listed.set_defaults(handler=listing)


__all__ = ["register"]
