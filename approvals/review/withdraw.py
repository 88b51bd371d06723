"""Withdrawing a pending request: its requester (the member named in `requested_by`) or the engine key that
registered it takes it back (docs/api.md, "People").

The request ends `withdrawn` — `decision.outcome` rejected, `action` halt (`stop_run` for a token cap),
`decision.withdrawn` true — through the one statement that ends a pending request (approvals/ending.py):
the UPDATE that re-checks `pending`, its `approval.withdrawn` audit record and the NOTIFY that wakes its
waiting engines, which halt. Nothing decides it afterwards: every decision finds it ended.
"""

from django.db import transaction
from django.utils import timezone

from approvals.ending import end_pending, ending_statement
from approvals.exceptions import ReasonTooLong
from approvals.models import Action, ApprovalKind, ApprovalRequest, Status
from approvals.review.decide import REASON_MAX
from audit.services import actor_of, record_cte
from common.exceptions import DomainError
from contacts.models import DeliveryEvent
from contacts.outbox import deliveries_for_resolution
from workspaces.access import Actor


class NotTheRequester(DomainError):
    status = 403
    code = "forbidden"
    default_message = (
        "Only the person the run acts for (the request's requested_by) or the engine key that registered it "
        "may withdraw it."
    )


def may_withdraw(actor: Actor | None, approval: ApprovalRequest) -> bool:
    """The request's requester (a member of its workspace), or the engine key that registered it."""
    if actor is None or actor.workspace.pk != approval.workspace_id:
        return False
    if actor.engine_key is not None:
        return approval.engine_key_id == actor.engine_key.pk
    email = getattr(actor.user, "email", "") or ""
    return bool(email) and bool(approval.requested_by) and email.casefold() == approval.requested_by.casefold()


_WITHDRAW_SQL = ending_statement(
    set_="""status = %(withdrawn)s,
        decision_action = CASE WHEN kind = %(token_cap)s THEN %(stop_run)s ELSE %(halt)s END,
        decided_at = %(now)s, decided_by_id = %(user)s, decided_by_email = %(email)s, reason = %(reason)s""",
    where="apr.id = %(id)s",
    audit=record_cte(
        "audit_record",
        "SELECT %(workspace)s, %(now)s, %(actor)s, 'approval.withdrawn', public_id, "
        "jsonb_build_object('outcome', 'rejected', 'action', decision_action, 'reason', %(reason)s, "
        "'withdrawn', true) FROM ended",
    ),
    audited=("decision_action",),
)


def approval_withdraw(*, approval: ApprovalRequest, actor: Actor, reason: str = "") -> tuple[ApprovalRequest, bool]:
    """Withdraw `approval` for `actor`; returns the request as it now is and whether it had ended before."""
    if not may_withdraw(actor, approval):
        raise NotTheRequester()
    reason = (reason or "").strip()
    if len(reason) > REASON_MAX:
        raise ReasonTooLong(f"The reason is {len(reason):,} characters; keep it to {REASON_MAX:,}.")
    if not approval.is_pending():
        return approval, True
    now = timezone.now()
    params = {
        "withdrawn": Status.WITHDRAWN,
        "token_cap": ApprovalKind.TOKEN_CAP,
        "stop_run": Action.STOP_RUN,
        "halt": Action.HALT,
        "now": now,
        "user": getattr(actor.user, "pk", None),
        "email": getattr(actor.user, "email", "") or "",
        "reason": reason,  # the clients say "withdrawn by the requester", and these words after it
        "id": approval.pk,
        "workspace": approval.workspace_id,
        "actor": actor_of(user=actor.user, engine_key=actor.engine_key),
    }
    with transaction.atomic():
        ended = end_pending(_WITHDRAW_SQL, params)
        approval.refresh_from_db()
        if ended:
            deliveries_for_resolution(approvals=[approval], event=DeliveryEvent.DECIDED)
    return approval, not ended
