"""Deciding several requests at once: each through `approval_decide`, as if alone, answered item by item.

Each item is its own decision with its own receipt and audit record; an item whose policy needs more
(a quorum's further votes, a passkey on its page, four eyes, an approver group) is answered with its
code and left as it is, never decided silently. Nothing is decided when an id names no request of
the workspace. Items commit in small chunks, so the first engines are woken before the last item is
decided and no transaction holds a hundred row locks.
"""

from dataclasses import dataclass, field

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from approvals.exceptions import ApprovalsNotFound
from approvals.models import ApprovalRequest
from approvals.review.decide import approval_decide
from common.exceptions import DomainError
from workspaces.models import Workspace

BATCH_MAX = 100
CHUNK = 10


@dataclass
class BatchResult:
    id: str
    status: str
    code: str = ""  # absent: decided by this call; else why not (already_decided, voted, a refusal's code)
    message: str = ""
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        answer = {"id": self.id, "status": self.status}
        if self.code:
            answer.update(code=self.code, message=self.message, **self.extra)
        return answer


def approvals_decide_batch(
    *, workspace: Workspace, user: AbstractBaseUser, ids: list[str], decision: str, reason: str = ""
) -> list[BatchResult]:
    """Decide each request `ids` names (in its order, each once); ApprovalsNotFound before anything if one is
    not this workspace's."""
    ids = list(dict.fromkeys(ids))
    rows = {
        approval.public_id: approval
        for approval in ApprovalRequest.objects.for_workspace(workspace)
        .filter(public_id__in=ids)
        .select_related("config", "workspace")
    }
    missing = [public_id for public_id in ids if public_id not in rows]
    if missing:
        raise ApprovalsNotFound(f"No request {', '.join(missing[:10])} in this workspace: nothing was decided.")
    results = []
    for start in range(0, len(ids), CHUNK):
        with transaction.atomic():
            results += [
                _one(rows[public_id], user=user, decision=decision, reason=reason)
                for public_id in ids[start : start + CHUNK]
            ]
    return results


def _one(approval: ApprovalRequest, *, user: AbstractBaseUser, decision: str, reason: str) -> BatchResult:
    try:
        decided, already = approval_decide(approval=approval, user=user, decision=decision, reason=reason)
    except DomainError as refusal:
        return BatchResult(
            approval.public_id,
            approval.effective_status(timezone.now()),
            code=refusal.code,
            message=refusal.message,
            extra=dict(getattr(refusal, "extra", {})),
        )
    status = decided.effective_status(timezone.now())
    if already:
        code, message = (
            ("already_voted", "You had approved it already; it waits for more approvals.")
            if decided.is_pending()
            else ("already_decided", "It was decided (or expired) before: the first decision stands.")
        )
        return BatchResult(decided.public_id, status, code=code, message=message)
    if decided.is_pending():
        return BatchResult(
            decided.public_id, status, code="voted", message="Your approval is recorded; it needs more approvals."
        )
    return BatchResult(decided.public_id, status)
