"""Telling the person a run acted for how their request ended, on their own channels (email, push, Telegram).

A request whose `requested_by` names a member of its workspace was asked on that member's behalf: when it
ends — approved, rejected, answered, declined, expired, halted — they hear it where they are, through the
personal-notice path passkey changes use (integrations/personal.py), not the workspace's contacts. A request
its requester (or its engine) withdrew is not told: they ended it. The ending statement hands what ended to
`queue_requester_notices` (approvals/extensions.py `ended`); the notice goes on the django-q2 cluster once
the end commits, so nothing is sent for an end that rolled back.
"""

from django.contrib.auth import get_user_model
from django.db import transaction
from django_q.tasks import async_task

from approvals.extensions import Ended
from approvals.models import ApprovalRequest, Status
from approvals.presenters.channels import review_url
from approvals.presenters.facts import card_title, decision_line
from approvals.presenters.text import visible
from integrations.personal import Notice, person_tell

TASK = "integrations.requester_notices.requester_notify"


def queue_requester_notices(rows: list[Ended]) -> None:
    """approvals' `ended` hook (IntegrationsConfig.ready): a notice per request asked for someone, on commit."""
    ids = [row.id for row in rows if row.requested_by and row.status != Status.WITHDRAWN]
    for approval_id in ids:
        transaction.on_commit(lambda approval_id=approval_id: async_task(TASK, approval_id))


def requester_notify(approval_id: int) -> list[str]:
    """Tell the member named in the request's `requested_by` how it ended; the channels it reached.

    Nobody is told when `requested_by` names no member of the request's workspace (an address the engine
    passed that nobody there signs in with) or when the request is pending again or gone.
    """
    approval = ApprovalRequest.objects.filter(pk=approval_id).first()
    if approval is None or approval.status in (Status.PENDING, Status.WITHDRAWN) or not approval.requested_by:
        return []
    requester = (
        get_user_model()
        .objects.filter(
            email__iexact=approval.requested_by, is_active=True, memberships__workspace_id=approval.workspace_id
        )
        .first()
    )
    if requester is None:
        return []
    return person_tell(user=requester, notice=requester_notice(approval), workspace_id=approval.workspace_id)


def requester_notice(approval: ApprovalRequest) -> Notice:
    title = card_title(approval)
    line = decision_line(approval)
    subject = f"{approval.get_status_display()}: {title}"
    text = f"An agent asked on your behalf: {title}\n{line}."
    if approval.reason:
        text += f"\nReason: {visible(approval.reason)}"
    return Notice(subject, text, review_url(approval))
