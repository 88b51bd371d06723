"""Run grants: "approve for the rest of this run" — checked, created with a decision, revoked, and
the per-process knowledge of which runs have a live one (for the registration statement)."""

from datetime import datetime, timedelta

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from approvals.exceptions import GrantNotAllowed, GrantTtlOutOfRange
from approvals.models import ApprovalRequest, Grant
from audit.services import actor_of, audit_append
from common.listened import ListenedCache

# How long one lives (API.md, Reviewers).
GRANT_TTL_DEFAULT = 3600
GRANT_TTL_MIN = 60
GRANT_TTL_MAX = 8 * 3600


def grant_check(*, approval: ApprovalRequest, decision: str, ttl_seconds: int) -> None:
    """Refuse a grant the request's rule does not allow, or one with a lifetime out of range."""
    if decision != "approve":
        raise GrantNotAllowed("A run grant comes with an approval: send decision approve with grant run.")
    if not approval.allow_run_grant:
        why = (
            f"its rule needs {approval.approvals_required} approvals"
            if approval.approvals_required > 1
            else "its rule does not allow run grants"
        )
        raise GrantNotAllowed(f"{approval.public_id} cannot be approved for the rest of its run: {why}.")
    if not GRANT_TTL_MIN <= ttl_seconds <= GRANT_TTL_MAX:
        raise GrantTtlOutOfRange(
            f"grant_ttl_seconds is from {GRANT_TTL_MIN} to {GRANT_TTL_MAX:,} seconds (8 hours); "
            f"leave it out for {GRANT_TTL_DEFAULT:,}."
        )


def grant_create(*, public_id: str, approval: ApprovalRequest, user, now: datetime, ttl_seconds: int) -> Grant:
    """The grant an approval just made (call inside the deciding transaction, after it won)."""
    grant = Grant.objects.create(
        public_id=public_id,
        workspace_id=approval.workspace_id,
        config_id=approval.config_id,
        rule_id=approval.rule_id,
        run_id=approval.run_id,
        approval=approval,
        granted_by=user,
        granted_by_email=getattr(user, "email", "") or "",
        created_at=now,
        expires_at=now + timedelta(seconds=ttl_seconds),
    )
    # Every process hears of the grant by NOTIFY; this one knows at commit, before it answers.
    transaction.on_commit(live_grants_until.clear)
    audit_append(
        workspace_id=approval.workspace_id,
        actor=actor_of(user=user),
        action="grant.created",
        object=public_id,
        data={"approval": approval.public_id, "run_id": approval.run_id, "expires_at": grant.expires_at.isoformat()},
        at=now,
    )
    return grant


@transaction.atomic
def grant_revoke(*, grant: Grant, user: AbstractBaseUser | None = None) -> Grant:
    """Revoke at once: the next registration of that run pends again. Revoking twice changes nothing."""
    if Grant.objects.filter(pk=grant.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()):
        audit_append(
            workspace_id=grant.workspace_id,
            actor=actor_of(user=user),
            action="grant.revoked",
            object=grant.public_id,
            data={"run_id": grant.run_id} if grant.run_id else {"scope": grant.scope, "rule_id": grant.rule_id},
        )
    grant.refresh_from_db()
    return grant


# Per process, while it hears every new grant (common/listened.py; the hub LISTENs on GRANTS_CHANNEL):
# (config pk, rule id) → {run id: when the last of its unrevoked grants expires} for the runs whose
# grants were live when read. A request of a run-grant rule usually has no live grant for its run,
# and then registers through the plain statement, skipping the grant probe (bench/policy.py). Only a
# new grant can make a kept value wrong — revoked and expired grants never come back — and each one
# empties the cache. Were it ever wrong, the request would wait for a person instead of being
# approved by the grant: the safe side.
live_grants_until = ListenedCache()


def grant_may_approve(approval: ApprovalRequest) -> bool:
    """A grant stands in for one reviewer's plain click: it never approves what needs more than that — a
    passkey, or several approvals — whatever the rule said when the grant was made (rules change by
    version; the request carries its version's)."""
    return approval.approvals_required == 1 and not approval.require_passkey


def may_have_live_grant(approval: ApprovalRequest, *, now: datetime) -> bool:
    """False only when this process knows the request has no live grant under its rule: neither a run
    grant of its run (where the rule allows them) nor a rule window (kept under the run id "")."""
    key = (approval.config_id, approval.rule_id)
    runs = live_grants_until.get(key)
    if runs is None:
        if not live_grants_until.live:
            return True  # nothing is kept in this process: the statement probes
        generation = live_grants_until.generation
        live = Grant.objects.live(now).filter(config_id=approval.config_id, rule_id=approval.rule_id)
        runs = dict(live.values("run_id").annotate(until=Max("expires_at")).values_list("run_id", "until"))
        live_grants_until.put(key, runs, generation)
    untils = [runs.get(""), runs.get(approval.run_id) if approval.allow_run_grant else None]
    return any(until is not None and until > now for until in untils)
