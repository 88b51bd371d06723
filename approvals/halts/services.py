"""Halting a run, freezing a workspace (docs/api.md, "Halting"; docs/halting.md): one service for the
API, the CLI and the pages.

A halt takes its workspace's halt lock (approvals/halts/covering.py), rejects every pending request it
covers in one statement — the UPDATE, each request's `approval.decided` record and the NOTIFY that wakes
its waiting engines, as a decision does (approvals/review/decide.py) — revokes the run grants it covers,
and stays in force: the registration statement (approvals/engine/insert.py) stores every later request
it covers already rejected, and no approval goes through, until it is lifted.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from approvals.ending import end_pending, ending_statement
from approvals.exceptions import ReasonTooLong, WrongDecision
from approvals.grants.services import live_grants_until
from approvals.halts.covering import halt_lock
from approvals.models import Action, ApprovalKind, ApprovalRequest, Grant, Halt, Status
from approvals.review.decide import REASON_MAX
from audit.services import actor_of, audit_append, record_cte
from common.listened import ListenedCache
from contacts.models import DeliveryEvent
from contacts.outbox import deliveries_for_resolution
from rules.models import Config
from workspaces.models import Workspace


class ReasonRequired(WrongDecision):
    """A halt says why: the reason is what every engine it stops (and its model) is told."""

    field = "reason"


class RunIdInvalid(WrongDecision):
    """A run id no request could carry: blank, or longer than a registration's `run_id` may be."""

    field = "run_id"


# A registration's run_id may be this long (docs/api.md, Limits), so every run that exists can be halted.
RUN_ID_MAX = 500


@dataclass(frozen=True)
class Halted:
    """What a halt or freeze did: the halt in force, and what it stopped at once."""

    halt: Halt
    rejected: int
    grants_revoked: int


def run_halt(*, workspace: Workspace, user, run_id: str, reason: str, config: Config | None = None) -> Halted:
    """Halt `run_id` (under `config` only, when given): reject its pending requests, revoke its grants,
    and store its later registrations already rejected with `reason`, until `run_resume`."""
    return _halt(workspace=workspace, user=user, run_id=run_id, config=config, reason=reason, action="run.halted")


def workspace_freeze(*, workspace: Workspace, user, reason: str) -> Halted:
    """Halt every run of the workspace at once, until `workspace_thaw`."""
    return _halt(workspace=workspace, user=user, run_id="", config=None, reason=reason, action="workspace.frozen")


def run_resume(*, workspace: Workspace, user, run_id: str) -> int:
    """Lift the run's halts (under any config); later registrations pend again. Returns how many were lifted."""
    return _lift(workspace=workspace, user=user, run_id=run_id, action="run.resumed")


def workspace_thaw(*, workspace: Workspace, user) -> int:
    return _lift(workspace=workspace, user=user, run_id="", action="workspace.thawed")


def workspace_frozen(workspace: Workspace) -> Halt | None:
    """The freeze in force, for the banner every page shows while there is one (no query where this
    process knows there is no halt at all: halts_in_force)."""
    if not _halts_possible(workspace.pk):
        return None
    return Halt.objects.in_force().filter(workspace=workspace, run_id="").first()


def run_halted(*, workspace: Workspace, run_id: str) -> Halt | None:
    return Halt.objects.in_force().filter(workspace=workspace, run_id=run_id).first()


def _checked_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ReasonRequired("Say why: the reason is passed back to every engine the halt stops.")
    if len(reason) > REASON_MAX:
        raise ReasonTooLong(f"The reason is {len(reason):,} characters; keep it to {REASON_MAX:,}.")
    return reason


def _checked_run_id(run_id: str) -> str:
    if len(run_id) > RUN_ID_MAX:
        raise RunIdInvalid(f"A run id is at most {RUN_ID_MAX} characters; this one has {len(run_id):,}.")
    return run_id


def _halt(*, workspace: Workspace, user, run_id: str, config: Config | None, reason: str, action: str) -> Halted:
    reason = _checked_reason(reason)
    run_id = _checked_run_id(run_id)
    if config is not None and config.workspace_id != workspace.pk:
        raise ValueError("the config is another workspace's")
    now = timezone.now()
    email = getattr(user, "email", "") or ""
    with transaction.atomic():
        halt_lock(workspace.pk)  # before anything is read: see approvals/halts/covering.py
        halt = Halt.objects.create(
            workspace=workspace,
            run_id=run_id,
            config=config,
            reason=reason,
            halted_by=user,
            halted_by_email=email,
            created_at=now,
        )
        rejected = _reject_pending(workspace=workspace, user=user, run_id=run_id, config=config, reason=reason, now=now)
        grants = Grant.objects.live(now).filter(workspace=workspace)
        if run_id:
            grants = grants.filter(run_id=run_id)
        if config is not None:
            grants = grants.filter(config=config)
        revoked = list(grants.values_list("public_id", "run_id"))
        Grant.objects.filter(public_id__in=[public_id for public_id, _ in revoked]).update(revoked_at=now)
        for public_id, grant_run in revoked:
            audit_append(
                workspace_id=workspace.pk,
                actor=actor_of(user=user),
                action="grant.revoked",
                object=public_id,
                data={"run_id": grant_run, "halted": True},
                at=now,
            )
        if rejected:
            # Slack messages and emails of the rejected requests say so, as for any decision.
            rows = ApprovalRequest.objects.filter(pk__in=rejected)
            deliveries_for_resolution(approvals=list(rows), event=DeliveryEvent.DECIDED)
        audit_append(
            workspace_id=workspace.pk,
            actor=actor_of(user=user),
            action=action,
            object=run_id or workspace.slug,
            data={
                "run_id": run_id or None,
                "config_id": config.public_id if config is not None else None,
                "reason": reason,
                "rejected": len(rejected),
                "grants_revoked": len(revoked),
            },
            at=now,
        )
        transaction.on_commit(halts_in_force.clear)  # this process knows before it answers
        if revoked:
            transaction.on_commit(live_grants_until.clear)
    return Halted(halt=halt, rejected=len(rejected), grants_revoked=len(revoked))


# The rejections, their audit records and the NOTIFY that wakes each one's waiting engines, in one
# statement (approvals/ending.py), as a decision is for one request. The scope: the run (and config),
# or nothing more for a freeze.
_REJECT_SET = """status = %(rejected)s,
        decision_action = CASE WHEN kind = %(token_cap)s THEN %(stop_run)s ELSE %(halt)s END,
        decided_at = %(now)s, decided_by_id = %(user)s, decided_by_email = %(email)s, reason = %(reason)s"""
_REJECT_AUDIT = record_cte(
    "audit_record",
    "SELECT %(workspace)s, %(now)s, %(actor)s, 'approval.decided', public_id, "
    "jsonb_build_object('outcome', %(rejected)s, 'action', decision_action, 'reason', %(reason)s, 'halted', true) "
    "FROM ended",
)
_IN_WORKSPACE = "workspace_id = %(workspace)s AND expires_at > %(now)s"
_REJECT_SQL = {
    (run, config): ending_statement(
        set_=_REJECT_SET,
        where=_IN_WORKSPACE
        + (" AND run_id = %(run)s" if run else "")
        + (" AND config_id = %(config)s" if config else ""),
        audit=_REJECT_AUDIT,
        audited=("decision_action",),
    )
    for run in (False, True)
    for config in (False, True)
}


def _reject_pending(*, workspace: Workspace, user, run_id: str, config: Config | None, reason: str, now: datetime):
    params = {
        "rejected": Status.REJECTED,
        "token_cap": ApprovalKind.TOKEN_CAP,
        "stop_run": Action.STOP_RUN,
        "halt": Action.HALT,
        "now": now,
        "user": getattr(user, "pk", None),
        "email": getattr(user, "email", "") or "",
        "reason": reason,
        "workspace": workspace.pk,
        "run": run_id,
        "config": getattr(config, "pk", None),
    }
    params["actor"] = actor_of(user=user)
    return [row[0] for row in end_pending(_REJECT_SQL[bool(run_id), config is not None], params)]


def _lift(*, workspace: Workspace, user, run_id: str, action: str) -> int:
    run_id = _checked_run_id(run_id)
    now = timezone.now()
    email = getattr(user, "email", "") or ""
    with transaction.atomic():
        lifted = (
            Halt.objects.in_force()
            .filter(workspace=workspace, run_id=run_id)
            .update(lifted_at=now, lifted_by_email=email)
        )
        if lifted:
            audit_append(
                workspace_id=workspace.pk,
                actor=actor_of(user=user),
                action=action,
                object=run_id or workspace.slug,
                data={"run_id": run_id or None},
                at=now,
            )
            transaction.on_commit(halts_in_force.clear)
    return lifted


# Per process, while it hears every halt made or lifted (NOTIFY on HALTS_CHANNEL, approvals/migrations/0010):
# workspace id → whether any halt is in force there, for the frozen banner every page shows. Never for
# what a request becomes: the registration and every approval ask the database (approvals/halts/covering.py).
halts_in_force = ListenedCache()


def _halts_possible(workspace_id: int) -> bool:
    known = halts_in_force.get(workspace_id)
    if known is None:
        if not halts_in_force.live:
            return True  # nothing is kept in this process: ask the database
        generation = halts_in_force.generation
        known = Halt.objects.in_force().filter(workspace_id=workspace_id).exists()
        halts_in_force.put(workspace_id, known, generation)
    return known
