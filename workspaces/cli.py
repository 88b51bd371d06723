"""CLI: `hitl workspace …`, `hitl member add`, `hitl token create|revoke` (docs/api.md, CLI)."""

import argparse
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from . import services
from .models import HINT_RANDOM_CHARS, ApiToken, Plan, Role, Workspace, hash_token


def get_workspace(slug: str) -> Workspace:
    try:
        return Workspace.objects.get(slug=slug)
    except Workspace.DoesNotExist:
        raise CommandError(f"No workspace with slug {slug!r}; create it with `hitl workspace create {slug}`.") from None


def get_user(email: str) -> AbstractBaseUser:
    user = get_user_model().objects.filter(email__iexact=email).first()
    if user is None:
        raise CommandError(f"No user with email {email!r}; add one with `hitl member add {email} …`.")
    if not user.is_active:
        # Deactivated people act nowhere: not through a page, a token or the CLI.
        raise CommandError(f"{user.email} is deactivated; reactivate them in Django admin first.")
    return user


def workspace_create(cmd: BaseCommand, options: dict[str, Any]) -> None:
    slug = options["slug"]
    if Workspace.objects.filter(slug=slug).exists():
        raise CommandError(f"A workspace with slug {slug!r} already exists.")
    workspace = services.workspace_create(slug=slug, plan=options["plan"], name=options.get("name") or "")
    cmd.stdout.write(f"Created workspace {workspace.slug} on the {workspace.plan} plan.")


def workspace_plan(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = services.workspace_set_plan(workspace=get_workspace(options["slug"]), plan=options["plan"])
    cmd.stdout.write(f"Workspace {workspace.slug} is now on the {workspace.plan} plan.")


def member_add(cmd: BaseCommand, options: dict[str, Any]) -> None:
    try:
        membership = services.member_add(
            workspace=get_workspace(options["workspace"]),
            email=options["email"],
            role=options["role"],
            password=options.get("password"),
        )
    except ValidationError as error:
        refusals = error.message_dict.items()
        raise CommandError(" ".join(f"{field}: {' '.join(messages)}" for field, messages in refusals)) from None
    cmd.stdout.write(f"{membership.user.email} is {membership.role} of {membership.workspace.slug}.")


def token_create(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = get_workspace(options["workspace"])
    if bool(options.get("user")) == bool(options.get("engine")):
        raise CommandError("Pass exactly one of --user EMAIL or --engine NAME.")
    user = None
    if options.get("user"):
        user = get_user(options["user"])
        if not user.memberships.filter(workspace=workspace).exists():
            raise CommandError(f"{user.email} is not a member of {workspace.slug}; add them with `hitl member add`.")
    _, raw = services.token_create(workspace=workspace, user=user, engine_name=options.get("engine") or "")
    # The token alone on stdout, so scripts can capture it; it is never shown again.
    cmd.stdout.write(raw)


def token_revoke(cmd: BaseCommand, options: dict[str, Any]) -> None:
    given = options["key"].strip()
    shown = len(ApiToken.PREFIX) + HINT_RANDOM_CHARS
    if len(given) > shown:
        # Longer than the stored hint: only the whole key can say which token it is (by its hash);
        # a longer prefix cannot be checked past the hint, so it is refused rather than guessed.
        tokens = list(ApiToken.objects.active().filter(digest=hash_token(given)))
        if not tokens:
            raise CommandError(
                f"No active token is the key starting {given[:shown]!r}; give the whole key as it was printed, "
                f"or its first {shown} characters."
            )
    else:
        tokens = list(ApiToken.objects.active().filter(hint__startswith=given))
        if len(tokens) != 1:
            raise CommandError(
                f"{len(tokens)} active tokens start with {given!r}; give the whole key or its first {shown} characters."
            )
    services.token_revoke(token=tokens[0])
    cmd.stdout.write(f"Revoked {tokens[0]}.")


def register(subparsers: argparse._SubParsersAction) -> None:
    workspace = subparsers.add_parser("workspace", help="create a workspace or change its plan")
    ws = workspace.add_subparsers(dest="workspace_command", required=True, metavar="create|plan")
    create = ws.add_parser("create", help="create a workspace")
    create.add_argument("slug")
    create.add_argument("--plan", choices=Plan.values, default=Plan.FREE)
    create.add_argument("--name", help="display name (defaults from the slug)")
    create.set_defaults(handler=workspace_create)
    plan = ws.add_parser("plan", help="set a workspace's plan (staff only)")
    plan.add_argument("slug")
    plan.add_argument("plan", choices=Plan.values)
    plan.set_defaults(handler=workspace_plan)

    member = subparsers.add_parser("member", help="add a member to a workspace")
    ms = member.add_subparsers(dest="member_command", required=True, metavar="add")
    add = ms.add_parser("add", help="add (or re-role) a member, creating the user if needed")
    add.add_argument("email")
    add.add_argument("--workspace", required=True)
    add.add_argument("--role", choices=Role.values, required=True)
    add.add_argument("--password", help="set the user's password (for a first login)")
    add.set_defaults(handler=member_add)

    token = subparsers.add_parser("token", help="create or revoke an API token")
    ts = token.add_subparsers(dest="token_command", required=True, metavar="create|revoke")
    tcreate = ts.add_parser("create", help="print a new token once: a user's (--user) or an engine key (--engine)")
    tcreate.add_argument("--workspace", required=True)
    tcreate.add_argument("--user", metavar="EMAIL")
    tcreate.add_argument("--engine", metavar="NAME")
    tcreate.set_defaults(handler=token_create)
    trevoke = ts.add_parser("revoke", help="revoke a token: the whole key, or its first 11 characters (hitl_xxxxxx)")
    trevoke.add_argument("key", metavar="KEY_OR_PREFIX")
    trevoke.set_defaults(handler=token_revoke)


__all__ = ["register", "get_workspace", "get_user"]
