"""What a config's rules and a version's frozen rules and contacts are made of: the choices they take,
what a rule's `match` is compared with, the approver policy's limits, a contact's channels, and the
defaults a frozen rule or contact published before a key existed reads with. Models, forms,
serializers, the served gates and contacts all read them here.
"""

import copy
import re

from django.db import models


class PassInformationLevel(models.TextChoices):
    NONE = "none", "None — target and operation"
    SUMMARY = "summary", "Summary — plus a short summary"
    FULL = "full", "Full — plus the exact arguments"


class TokenCapMode(models.TextChoices):
    PROMPT = "prompt", "Prompt — park the run in the Approvals queue"
    STOP = "stop", "Stop — end the run"


class RuleKind(models.TextChoices):
    DELETE = "delete", "Delete"
    MCP_SERVER = "mcp_server", "MCP server"
    CELL = "cell", "Cell"
    WORKER = "worker", "Worker"


class RulePoint(models.TextChoices):
    ENTRY = "entry", "Entry — ask before the call"
    EXIT = "exit", "Exit — ask before its result returns"


class AskIn(models.TextChoices):
    CONSOLE = "console", "Console"


class OnReject(models.TextChoices):
    HALT = "halt", "Halt"


class OnUnreachable(models.TextChoices):
    """What a request does when none of its notifications could be delivered and nobody opened it."""

    WAIT = "wait", "Wait for its deadline"
    REJECT = "reject", "End it as undeliverable"


class RuleMode(models.TextChoices):
    GATE = "gate", "Gate — pause the call for a person"
    SHADOW = "shadow", "Shadow — never pause; count what it would have asked"


ANY = "*"
MCP_SERVER_ID = re.compile(r"^mcp_[A-Za-z0-9_-]+$")
# The noun each kind's message uses ("A worker rule needs its match selector …").
KIND_NOUN = {
    RuleKind.DELETE: "A delete rule",
    RuleKind.MCP_SERVER: "An MCP server rule",
    RuleKind.CELL: "A cell rule",
    RuleKind.WORKER: "A worker rule",
}
# What a rule's `match` is compared with, per kind (docs/api.md, "Engines"): a delete rule names the
# operation (delete_file, drop_table) on any target; the others name the call's target — an MCP server's
# id, a notebook or cell, a worker. Served on every gate as `match_field`, applied by registration
# (rule_gates) and by the clients' find_gate: one table, so they agree by construction.
MATCH_FIELDS = {
    RuleKind.DELETE: "operation",
    RuleKind.MCP_SERVER: "target",
    RuleKind.CELL: "target",
    RuleKind.WORKER: "target",
}


def match_field(kind: str) -> str:
    """`operation` or `target`: the field of a call a rule of this kind's `match` is compared with."""
    return MATCH_FIELDS.get(kind, "target")


def rule_gates(rule: dict, *, target: str, operation: str) -> bool:
    """Does this (frozen) rule's `match` take in the call: `*`, or the call's field its kind names?"""
    value = operation if match_field(rule["kind"]) == "operation" else target
    return rule["match"] in (ANY, value)


NEVER_A_TOOL = "Name an MCP server by its mcp_… id, or pick Any (*): a rule gates a whole server, never one tool"

# The approver policy (SPEC.md, "Approver policy").
MAX_APPROVALS_REQUIRED = 5
NO_GRANT_WITH_QUORUM = (
    "A run grant approves later requests on one reviewer's word, so a rule that needs more than one "
    "approval cannot allow it: set approvals_required to 1, or allow_run_grant to false."
)
# Approve with edits (docs/api.md): one reviewer's changed arguments run, so one reviewer decides, and
# only a config passing the exact arguments (level full) shows the reviewer anything to edit.
EDIT_NEEDS_ONE_APPROVAL = (
    "Approving with edits runs one reviewer's changed arguments, so a rule that needs more than one approval "
    "cannot allow it: set approvals_required to 1, or allow_edit to false."
)
EDIT_NEEDS_FULL = (
    "Approving with edits needs the exact arguments on the card: set the config's pass information level to "
    "full first, or allow_edit to false."
)

NO_GRANT_WITH_PASSKEY = (
    "A run grant approves the run's later calls, which nobody has seen, without a passkey, so a rule that "
    "needs a passkey for each approval cannot allow it: set allow_run_grant or require_passkey to false."
)


def match_error(kind: str, match: str) -> str | None:
    """The message for a rule's `match`, or None when it is valid for its kind."""
    if not match:
        noun = KIND_NOUN.get(kind, "A rule")
        return f"{noun} needs its match selector: fill in Which one, or pick Any (*)"
    if kind == RuleKind.MCP_SERVER and match != ANY and not MCP_SERVER_ID.match(match):
        return NEVER_A_TOOL
    return None


# Keys added to frozen rules and contacts after the first versions were published. A version
# published before a key existed reads as if it had it at this value (nobody to tell, one approval,
# four eyes, no run grants, no secret reference), so the served gates, the API, the pages, the
# versions diff and "does the draft match" all see one shape. ConfigVersion.from_db fills them in
# as a version is loaded: the one place this happens.
FROZEN_RULE_DEFAULTS = {
    "notify": [],
    "escalate_to": [],
    "escalate_after_seconds": None,
    "approvals_required": 1,
    "self_approval": False,
    "allow_run_grant": False,
    "require_passkey": False,
    "on_unreachable": "wait",
    "condition": "",
    "mode": "gate",
    "allow_edit": False,
    "approver_groups": [],
}
FROZEN_CONTACT_DEFAULTS = {"secret_ref": ""}


def with_defaults(frozen: dict, defaults: dict) -> dict:
    """A frozen rule or contact with each key it lacks at its default (lists are fresh copies)."""
    missing = {key: copy.copy(value) for key, value in defaults.items() if key not in frozen}
    return {**frozen, **missing} if missing else frozen


# A contact's channel: how a (frozen) contact is reached; contacts send through it.
class Channel(models.TextChoices):
    EMAIL = "email", "Email"
    SLACK = "slack", "Slack"
    WEBHOOK = "webhook", "Webhook"
    PUSH = "push", "Web Push"
    TELEGRAM = "telegram", "Telegram"
    NONE = "none", "None"
