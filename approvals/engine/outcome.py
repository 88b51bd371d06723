"""What happened to an approved call: `started` by its engine before it runs, then `executed` or `failed`.

Run once (docs/receipts.md): the engine records `started` before it runs the call, so an engine that
restarts and finds `started` without a final outcome knows the call may have run, and does not run it
again. Such a request is *in doubt*; a reviewer may record what happened (`record_in_doubt_outcome`).
"""

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from approvals.edits.checks import decision_digest, digest_matches
from approvals.exceptions import NotApproved, NotInDoubt, OutcomeDetailRequired
from approvals.expiry.expire import approval_expire_if_overdue
from approvals.models import ApprovalRequest, ExecutionStatus, Status
from audit.services import SYSTEM, actor_of, audit_append

# The outcomes that end a call; `started` only promises one.
FINAL = (ExecutionStatus.EXECUTED, ExecutionStatus.FAILED)


def approval_report_outcome(
    *, approval: ApprovalRequest, status: str, execution_id: str = "", detail: str = "", call_digest: str = ""
) -> tuple[ApprovalRequest, bool]:
    """The engine's report. Returns the request and whether it was already reported.

    Like a decision, the first report stands: the conditional UPDATE lets exactly one `started` through
    (on an approved request with no outcome yet) and exactly one final outcome (on one with none, or
    `started`); a later one gets the request back unchanged. So of two engines that both found the call
    approved, only the one whose `started` went through runs it.

    `call_digest`: what the engine says ran. One that is not the approved digest is recorded as it is
    (the report is a fact, not a request) and shown as a warning wherever the request is shown.
    """
    approval_expire_if_overdue(approval=approval)
    if status == ExecutionStatus.STARTED:
        before = Q(execution_status="")
    else:
        before = Q(execution_status="") | Q(execution_status=ExecutionStatus.STARTED)
    approval, reported = _record(
        approval,
        before,
        actor=actor_of(engine_key=approval.engine_key) if approval.engine_key else SYSTEM,
        status=status,
        execution_id=execution_id,
        detail=detail,
        call_digest=call_digest,
    )
    if not reported and approval.status != Status.APPROVED:
        raise NotApproved(
            f"{approval.public_id} is {approval.status}, not approved: an outcome is reported only for an "
            "approved call, which must not run otherwise."
        )
    return approval, not reported


def record_in_doubt_outcome(*, approval: ApprovalRequest, user, status: str, detail: str) -> ApprovalRequest:
    """A reviewer says what happened to a call its engine started and never reported: audited as theirs.

    Only an in-doubt request (`started`, no final outcome) takes one; the engine's own late report and
    the reviewer's are decided by the same conditional UPDATE — the first stands.
    """
    if approval.execution_status != ExecutionStatus.STARTED:  # first: on any other request there is nothing to say
        raise _not_in_doubt(approval)
    if status not in FINAL:
        raise OutcomeDetailRequired("status", "Record what happened: executed or failed.")
    detail = (detail or "").strip()
    if not detail:
        raise OutcomeDetailRequired("detail", "Say what you checked, so the record shows how the outcome is known.")
    approval, reported = _record(
        approval,
        Q(execution_status=ExecutionStatus.STARTED),
        actor=actor_of(user=user),
        status=status,
        detail=detail,
        recorded_by=getattr(user, "email", ""),
    )
    if not reported:  # the engine's own report (or another reviewer's) came first
        raise _not_in_doubt(approval)
    return approval


def _not_in_doubt(approval: ApprovalRequest) -> NotInDoubt:
    return NotInDoubt(
        f"{approval.public_id} is not in doubt (its outcome is {approval.execution_status or 'not started'}): "
        "a reviewer records an outcome only for a call its engine started and never reported."
    )


def _record(
    approval: ApprovalRequest,
    before: Q,
    *,
    actor: str,
    status: str,
    execution_id: str = "",
    detail: str = "",
    call_digest: str = "",
    recorded_by: str = "",
) -> tuple[ApprovalRequest, bool]:
    now = timezone.now()
    with transaction.atomic():
        reported = ApprovalRequest.objects.filter(before, pk=approval.pk, status=Status.APPROVED).update(
            execution_status=status,
            execution_id=execution_id,
            execution_detail=detail,
            executed_at=now,
            execution_digest=call_digest,
        )
        approval.refresh_from_db(from_queryset=ApprovalRequest.objects.select_related("config", "engine_key"))
        if reported:
            data = {
                "status": status,
                "execution_id": execution_id,
                "detail": detail,
                # Both digests: what was approved, and what the engine says ran (null: it did not say).
                "approved_digest": decision_digest(approval),
                "call_digest": call_digest or None,
                "digest_matches": digest_matches(approval),
            }
            if recorded_by:
                data["recorded_by"] = recorded_by  # a reviewer, for a call whose engine never said
            audit_append(
                workspace_id=approval.workspace_id,
                actor=actor,
                action="approval.outcome",
                object=approval.public_id,
                data=data,
                at=now,
            )
    return approval, bool(reported)
