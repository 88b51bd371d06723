"""What Slack's and Telegram's button presses share: the request pressed on, the person who may decide it,
who is on it, and the words for a request already decided — one check and one wording for every chat."""

from django.contrib.auth.base_user import AbstractBaseUser

from approvals.models import ApprovalRequest, Status
from approvals.presenters.facts import decided_line
from approvals.review.permissions import may_decide
from collaboration.selectors import claim_of
from workspaces.access import actor_for_membership
from workspaces.models import Membership

NOTHING_DECIDED = "Nothing was decided."
CLAIM_LABEL = "I’m on it"  # the page's words (collaboration's strip)


def approval_pressed(public_id: str) -> ApprovalRequest | None:
    return ApprovalRequest.objects.select_related("workspace", "config").filter(public_id=public_id).first()


def may_press(user: AbstractBaseUser | None, approval: ApprovalRequest) -> bool:
    """The one "may this person decide it" check, as for the page, the API and the CLI: an active
    member of the request's workspace who may decide it."""
    if user is None or not user.is_active:
        return False
    membership = (
        Membership.objects.select_related("workspace", "user").filter(user=user, workspace=approval.workspace).first()
    )
    return membership is not None and may_decide(actor_for_membership(membership), approval)


def already_words(approval: ApprovalRequest) -> str:
    line = decided_line(approval, already=True)
    if approval.effective_status() == Status.EXPIRED:
        return f"{line}. {NOTHING_DECIDED}"
    return f"{line}; the first decision stands. {NOTHING_DECIDED}"


def claimant(approval: ApprovalRequest) -> str:
    """Who a card shows on it: the claimant's email while the request is pending, else "" (a decided card
    shows its decision, and no claim)."""
    if not approval.is_pending():
        return ""
    claim = claim_of(approval)
    return claim.user_email if claim is not None else ""
