"""CLI: `hitl halt`, `hitl resume`, `hitl freeze`, `hitl thaw` (docs/api.md, "Halting"; docs/cli.md)."""

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from approvals.exceptions import ReasonTooLong
from approvals.halts.services import (
    ReasonRequired,
    RunIdInvalid,
    run_halt,
    run_resume,
    workspace_freeze,
    workspace_thaw,
)
from approvals.review.permissions import may_decide
from rules.exceptions import ConfigNotFound
from rules.selectors import config_for
from workspaces.access import actor_for_user
from workspaces.cli import get_user, get_workspace


def _person(options: dict[str, Any], workspace, *, admin: bool):
    user = get_user(options["as_email"])
    actor = actor_for_user(user=user, workspace=workspace)
    if admin and (actor is None or not actor.is_admin):
        raise CommandError(f"{user.email} is not an admin of {workspace.slug}; only admins freeze or thaw it.")
    if not admin and not may_decide(actor):
        raise CommandError(f"{user.email} is not a reviewer or admin of {workspace.slug}; they cannot halt its runs.")
    return user


def _said(halted, what: str) -> str:
    grants = f", {halted.grants_revoked} run grant(s) revoked" if halted.grants_revoked else ""
    return f"{what}: {halted.rejected} pending request(s) rejected{grants}; later ones are stored rejected."


def halt(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = get_workspace(options["workspace"])
    user = _person(options, workspace, admin=False)
    config = None
    if options.get("config"):
        try:
            config = config_for(workspace=workspace, public_id=options["config"])
        except ConfigNotFound:
            raise CommandError(f"No config {options['config']!r} in {workspace.slug}.") from None
    try:
        halted = run_halt(
            workspace=workspace, user=user, run_id=options["run"], config=config, reason=options["reason"]
        )
    except (ReasonRequired, ReasonTooLong, RunIdInvalid) as refused:
        raise CommandError(refused.message) from None
    under = f" under {config.public_id}" if config is not None else ""
    cmd.stdout.write(_said(halted, f"Run {options['run']}{under} halted in {workspace.slug}"))
    cmd.stdout.write(f"Lift it with `hitl resume {options['run']} --workspace {workspace.slug} --as EMAIL`.")


def resume(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = get_workspace(options["workspace"])
    user = _person(options, workspace, admin=False)
    try:
        lifted = run_resume(workspace=workspace, user=user, run_id=options["run"])
    except RunIdInvalid as refused:
        raise CommandError(refused.message) from None
    if lifted:
        cmd.stdout.write(f"Run {options['run']} resumed in {workspace.slug}: later requests pend again.")
    else:
        cmd.stdout.write(f"Run {options['run']} was not halted in {workspace.slug}; nothing changed.")


def freeze(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = get_workspace(options["slug"])
    user = _person(options, workspace, admin=True)
    try:
        halted = workspace_freeze(workspace=workspace, user=user, reason=options["reason"])
    except (ReasonRequired, ReasonTooLong) as refused:
        raise CommandError(refused.message) from None
    cmd.stdout.write(_said(halted, f"{workspace.slug} frozen"))
    cmd.stdout.write(f"Thaw it with `hitl thaw {workspace.slug} --as EMAIL`.")


def thaw(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = get_workspace(options["slug"])
    user = _person(options, workspace, admin=True)
    if workspace_thaw(workspace=workspace, user=user):
        cmd.stdout.write(f"{workspace.slug} thawed: later requests pend again.")
    else:
        cmd.stdout.write(f"{workspace.slug} was not frozen; nothing changed.")


def register(subparsers: argparse._SubParsersAction) -> None:
    h = subparsers.add_parser("halt", help="halt a run: reject its pending requests and every later one")
    h.add_argument("run", metavar="RUN", help="the run id")
    h.add_argument("--workspace", metavar="SLUG", required=True)
    h.add_argument("--as", dest="as_email", metavar="EMAIL", required=True, help="the reviewer halting it")
    h.add_argument("--reason", required=True, help="why; passed back to every engine it stops")
    h.add_argument("--config", metavar="CFG", help="only the run's requests under this config")
    h.set_defaults(handler=halt)

    r = subparsers.add_parser("resume", help="lift a run's halt: later requests pend again")
    r.add_argument("run", metavar="RUN")
    r.add_argument("--workspace", metavar="SLUG", required=True)
    r.add_argument("--as", dest="as_email", metavar="EMAIL", required=True)
    r.set_defaults(handler=resume)

    f = subparsers.add_parser("freeze", help="freeze a workspace: halt every run (admins)")
    f.add_argument("slug", metavar="SLUG")
    f.add_argument("--as", dest="as_email", metavar="EMAIL", required=True, help="the admin freezing it")
    f.add_argument("--reason", required=True, help="why; passed back to every engine it stops")
    f.set_defaults(handler=freeze)

    t = subparsers.add_parser("thaw", help="thaw a frozen workspace: later requests pend again (admins)")
    t.add_argument("slug", metavar="SLUG")
    t.add_argument("--as", dest="as_email", metavar="EMAIL", required=True)
    t.set_defaults(handler=thaw)
