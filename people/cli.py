"""CLI: `hitl groups …` and `hitl delegation …` (docs/api.md, CLI) — the same services as the API and pages."""

import argparse
from datetime import datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from common.exceptions import DomainError
from people import selectors, services
from workspaces.access import actor_for_user
from workspaces.cli import get_user, get_workspace


def _admin(options: dict[str, Any]):
    workspace, user = get_workspace(options["workspace"]), get_user(options["as_email"])
    actor = actor_for_user(user=user, workspace=workspace)
    if actor is None or not actor.is_admin:
        raise CommandError(f"{user.email} is not an admin of {workspace.slug}; only admins keep approver groups.")
    return workspace, user


def _member(options: dict[str, Any]):
    workspace, user = get_workspace(options["workspace"]), get_user(options["as_email"])
    if actor_for_user(user=user, workspace=workspace) is None:
        raise CommandError(f"{user.email} is not a member of {workspace.slug}.")
    return workspace, user


def _refused(refusal: DomainError) -> CommandError:
    return CommandError(f"{refusal.field}: {refusal.message}" if refusal.field else refusal.message)


def groups_list(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = get_workspace(options["workspace"])
    groups = list(selectors.groups_for(workspace))
    for group in groups:
        members = ", ".join(sorted(member.user.email for member in group.members.all())) or "(no members)"
        cmd.stdout.write(f"{group.public_id}\t{group.name}\t{members}")
    if not groups:
        cmd.stdout.write("No approver groups.")


def groups_create(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace, user = _admin(options)
    try:
        group = services.group_create(workspace=workspace, name=options["name"], user=user)
    except DomainError as refusal:
        raise _refused(refusal) from None
    cmd.stdout.write(group.public_id)


def groups_member(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace, user = _admin(options)
    try:
        group = selectors.group_get(workspace=workspace, public_id=options["group"])
        if options["adding"]:
            services.group_member_add(group=group, email=options["email"], user=user)
        else:
            services.group_member_remove(group=group, email=options["email"], user=user)
    except DomainError as refusal:
        raise _refused(refusal) from None
    cmd.stdout.write(f"{options['email']} {'added to' if options['adding'] else 'removed from'} {group.name}.")


def _until(options: dict[str, Any]) -> datetime:
    if options.get("days") is not None:
        return timezone.now() + timedelta(days=options["days"])
    until = parse_datetime(options.get("until") or "")
    if until is None or until.tzinfo is None:
        raise CommandError("until: give --until as an ISO 8601 time with its zone (2026-12-24T18:00:00Z), or --days N.")
    return until


def delegation_set(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace, user = _member(options)
    try:
        delegation = services.delegation_start(
            workspace=workspace,
            delegator=user,
            delegate_email=options["to"],
            until=_until(options),
            reason=options.get("reason") or "",
        )
    except DomainError as refusal:
        raise _refused(refusal) from None
    cmd.stdout.write(f"{delegation.delegate.email} stands in for {user.email} until {delegation.until.isoformat()}.")


def delegation_show(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace, user = _member(options)
    delegation = selectors.delegation_of(workspace=workspace, user=user)
    if delegation is None:
        cmd.stdout.write(f"{user.email} has no live delegation.")
        return
    cmd.stdout.write(f"{delegation.delegate.email} stands in for {user.email} until {delegation.until.isoformat()}.")


def delegation_end(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace, user = _member(options)
    delegation = selectors.delegation_of(workspace=workspace, user=user)
    if delegation is not None:
        services.delegation_end(delegation=delegation, user=user)
    cmd.stdout.write(f"{user.email} has no live delegation now.")


def delegation_list(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = get_workspace(options["workspace"])
    delegations = list(selectors.delegations_for(workspace=workspace, live=True))
    for delegation in delegations:
        cmd.stdout.write(
            f"{delegation.public_id}\t{delegation.delegator.email} → {delegation.delegate.email}\t"
            f"until {delegation.until.isoformat()}"
        )
    if not delegations:
        cmd.stdout.write("No live delegations.")


def register(subparsers: argparse._SubParsersAction) -> None:
    groups = subparsers.add_parser("groups", help="approver groups: list, create, add or remove a member")
    gs = groups.add_subparsers(dest="groups_command", required=True, metavar="list|create|add|remove")
    glist = gs.add_parser("list", help="a workspace's groups and their members")
    glist.add_argument("--workspace", metavar="SLUG", required=True)
    glist.set_defaults(handler=groups_list)
    gcreate = gs.add_parser("create", help="create a group; prints its id (grp_…)")
    gcreate.add_argument("name")
    for parser, adding in (
        (gs.add_parser("add", help="add a member"), True),
        (gs.add_parser("remove", help="remove a member"), False),
    ):
        parser.add_argument("group", metavar="GRP")
        parser.add_argument("email")
        parser.set_defaults(handler=groups_member, adding=adding)
    gcreate.set_defaults(handler=groups_create)
    for parser in gs.choices.values():
        if parser is not glist:
            parser.add_argument("--workspace", metavar="SLUG", required=True)
            parser.add_argument("--as", dest="as_email", metavar="EMAIL", required=True, help="the admin doing it")

    delegation = subparsers.add_parser("delegation", help="a reviewer's stand-in: set, show, end, list")
    ds = delegation.add_subparsers(dest="delegation_command", required=True, metavar="set|show|end|list")
    dset = ds.add_parser("set", help="name a stand-in until a time (at most 30 days)")
    dset.add_argument("--to", metavar="EMAIL", required=True, help="the delegate, a member of the workspace")
    when = dset.add_mutually_exclusive_group(required=True)
    when.add_argument("--until", metavar="ISO", help="the end, an ISO 8601 time with its zone")
    when.add_argument("--days", type=float, help="the end, this many days from now")
    dset.add_argument("--reason", default="")
    dset.set_defaults(handler=delegation_set)
    ds.add_parser("show", help="the person's live delegation").set_defaults(handler=delegation_show)
    ds.add_parser("end", help="end the person's delegation now").set_defaults(handler=delegation_end)
    dlist = ds.add_parser("list", help="every live delegation of a workspace")
    dlist.add_argument("--workspace", metavar="SLUG", required=True)
    dlist.set_defaults(handler=delegation_list)
    for name in ("set", "show", "end"):
        ds.choices[name].add_argument("--workspace", metavar="SLUG", required=True)
        ds.choices[name].add_argument("--as", dest="as_email", metavar="EMAIL", required=True, help="the delegator")
