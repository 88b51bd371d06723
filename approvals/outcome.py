"""What happened to an approved call, reported by its engine once."""

from django.db import transaction
from django.utils import timezone

from audit.services import SYSTEM, actor_of, audit_append

from .edits import decision_digest, digest_matches
from .exceptions import NotApproved
from .expire import approval_expire_if_overdue
from .models import ApprovalRequest, Status


def approval_report_outcome(
    *, approval: ApprovalRequest, status: str, execution_id: str = "", detail: str = "", call_digest: str = ""
) -> tuple[ApprovalRequest, bool]:
    """Record what happened to an approved call, once. Returns the request and whether it was already reported.

    Like a decision, the first report stands: the conditional UPDATE (approved, no outcome yet)
    lets exactly one report through; a later one gets the first back, unchanged.

    `call_digest`: what the engine says ran. One that is not the approved digest is recorded as it is
    (the report is a fact, not a request) and shown as a warning wherever the request is shown.
    """
    approval_expire_if_overdue(approval=approval)
    now = timezone.now()
    with transaction.atomic():
        reported = ApprovalRequest.objects.filter(pk=approval.pk, status=Status.APPROVED, execution_status="").update(
            execution_status=status,
            execution_id=execution_id,
            execution_detail=detail,
            executed_at=now,
            execution_digest=call_digest,
        )
        approval.refresh_from_db(from_queryset=ApprovalRequest.objects.select_related("config", "engine_key"))
        if reported:
            audit_append(
                workspace_id=approval.workspace_id,
                actor=actor_of(engine_key=approval.engine_key) if approval.engine_key else SYSTEM,
                action="approval.outcome",
                object=approval.public_id,
                data={
                    "status": status,
                    "execution_id": execution_id,
                    "detail": detail,
                    # Both digests: what was approved, and what the engine says ran (null: it did not say).
                    "approved_digest": decision_digest(approval),
                    "call_digest": call_digest or None,
                    "digest_matches": digest_matches(approval),
                },
                at=now,
            )
    if not reported and approval.status != Status.APPROVED:
        raise NotApproved(
            f"{approval.public_id} is {approval.status}, not approved: an outcome is reported only for an "
            "approved call, which must not run otherwise."
        )
    return approval, not reported
