"""django-q2 tasks for Slack: thin, take ids, safe to run twice."""

from approvals.models import ApprovalRequest

from .services import slack_messages_refresh


def refresh_slack_messages(approval_id: int) -> int:
    """Update the request's Slack messages to how it is now (buttons gone once it is resolved)."""
    approval = ApprovalRequest.objects.select_related("config", "workspace").filter(pk=approval_id).first()
    if approval is None:
        return 0
    return slack_messages_refresh(approval=approval)
