"""Rule windows (API.md, "Policy"; seed 004's auto-approve windows): an admin approves every call under a
whole rule until a time, with a reason. A Grant of scope rule: registrations under it are approved in
their own statement (approvals/engine/insert.py), listed, revoked and audited with the run grants."""

from datetime import datetime, timedelta

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from approvals.grants.services import live_grants_until
from approvals.models import Grant, GrantScope
from audit.services import actor_of, audit_append
from common.ids import new_public_id
from rules.models import Rule
from workspaces.models import Workspace

WINDOW_MAX = timedelta(days=7)
REASON_MAX = 2000


def rule_window_create(
    *, workspace: Workspace, user: AbstractBaseUser, rule_id: str, expires_at: datetime, reason: str
) -> Grant:
    """Open a window on a rule of this workspace's configs (its draft names it): at most 7 days, with a reason."""
    now = timezone.now()
    rule = Rule.objects.select_related("config").filter(config__workspace=workspace, public_id=rule_id).first()
    if rule is None:
        raise ValidationError({"rule_id": f"No rule {rule_id} in this workspace: name a rule of one of its configs."})
    if rule.require_passkey or rule.approvals_required > 1:
        needs = "a passkey for each approval" if rule.require_passkey else f"{rule.approvals_required} approvals"
        raise ValidationError(
            {"rule_id": f"Rule {rule_id} needs {needs}; a window approves with no one's click, so it cannot open one."}
        )
    if expires_at <= now:
        raise ValidationError({"expires_at": "expires_at must be in the future: until when may the rule's calls pass?"})
    if expires_at > now + WINDOW_MAX:
        raise ValidationError({"expires_at": "A rule window is at most 7 days long: choose an earlier expires_at."})
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why the rule's calls may pass unasked: reason is required."})
    if len(reason) > REASON_MAX:
        raise ValidationError({"reason": f"reason is at most {REASON_MAX:,} characters."})
    with transaction.atomic():
        grant = Grant.objects.create(
            public_id=new_public_id("grt"),
            workspace=workspace,
            config=rule.config,
            rule_id=rule.public_id,
            scope=GrantScope.RULE,
            run_id="",
            reason=reason,
            granted_by=user,
            granted_by_email=getattr(user, "email", "") or "",
            created_at=now,
            expires_at=expires_at,
        )
        # Every process hears of it by NOTIFY (the grants trigger); this one knows at commit, before it answers.
        transaction.on_commit(live_grants_until.clear)
        audit_append(
            workspace_id=workspace.pk,
            actor=actor_of(user=user),
            action="grant.created",
            object=grant.public_id,
            data={
                "scope": GrantScope.RULE,
                "config_id": rule.config.public_id,
                "rule_id": rule.public_id,
                "expires_at": expires_at.isoformat(),
                "reason": reason,
            },
            at=now,
        )
    grant.config = rule.config
    grant.uses = 0
    return grant


def live_windows(*, config_pk: int, now: datetime | None = None) -> dict[str, list[Grant]]:
    """rule id → the config's live rule windows, for the Rules tab."""
    windows: dict[str, list[Grant]] = {}
    for grant in Grant.objects.live(now).filter(config_id=config_pk, scope=GrantScope.RULE).order_by("expires_at"):
        windows.setdefault(grant.rule_id, []).append(grant)
    return windows
