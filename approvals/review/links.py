"""One-click links `/hitl/r/<token>`: signed for one reviewer, one request and its call_digest.

The token is a signature, never stored: it names the delivery that carried it (whose
`link_used_at` makes it single-use), the reviewer, the request and the call it was sent for.
GET shows a confirm page (mail scanners open links); only POST decides, through the one
decide service, as that reviewer (approvals.review.decide.link_decide). This module only signs and opens.
"""

from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.urls import reverse

from approvals.models import ApprovalRequest, Status
from approvals.review.permissions import may_decide
from contacts.models import Delivery
from workspaces.access import actor_for_membership
from workspaces.models import Membership, Role

SALT = "hitl.one-click-link"


class LinkRefused(Exception):
    """Why a link does not work, in words for its page: `reason` is tampered / used / expired / decided."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Link:
    delivery: Delivery
    approval: ApprovalRequest
    user: object


def link_url_for(*, delivery: Delivery, email: str) -> str | None:
    """A link for the reviewer (or admin) of the workspace whose address this is; None for anyone else."""
    return link_url_signed(delivery=delivery, user_id=link_reviewer(workspace_id=delivery.workspace_id, email=email))


def link_reviewer(*, workspace_id: int, email: str) -> int | None:
    """The id of the active reviewer (or admin) of the workspace with this address, if there is one."""
    return (
        Membership.objects.filter(
            workspace_id=workspace_id,
            user__email__iexact=email,
            user__is_active=True,
            role__in=[Role.ADMIN, Role.REVIEWER],
        )
        .values_list("user_id", flat=True)
        .first()
    )


def link_url_signed(*, delivery: Delivery, user_id: int | None) -> str | None:
    """The link carried by `delivery` for the reviewer `link_reviewer` found; None when it found nobody."""
    if user_id is None:
        return None
    approval = delivery.approval
    token = signing.dumps(
        {"d": delivery.public_id, "u": user_id, "a": approval.public_id, "c": approval.call_digest},
        salt=SALT,
        compress=True,
    )
    return settings.HITL_BASE_URL + reverse("approvals:link", args=[token])


def link_open(token: str) -> Link:
    """The link's delivery, request and reviewer, or LinkRefused saying why it does not work."""
    try:
        claims = signing.loads(token, salt=SALT)
        delivery = Delivery.objects.select_related("approval__config").get(
            public_id=claims["d"], approval__public_id=claims["a"]
        )
        membership = Membership.objects.select_related("user").get(
            workspace_id=delivery.workspace_id, user_id=claims["u"], user__is_active=True
        )
    except (signing.BadSignature, KeyError, TypeError, Delivery.DoesNotExist, Membership.DoesNotExist):
        raise LinkRefused("tampered", "This link was altered, or is not one the portal sent.") from None
    approval = delivery.approval
    if not may_decide(actor_for_membership(membership), approval):
        raise LinkRefused("tampered", "This link's reviewer no longer reviews this workspace.")
    if delivery.link_used_at is not None:
        raise LinkRefused("used", "This link was already used: each one-click link works once.")
    status = approval.effective_status()
    if status == Status.EXPIRED and approval.undeliverable:
        raise LinkRefused("expired", "This request ended undeliverable (nobody could be reached), so its link died.")
    if status == Status.EXPIRED:
        raise LinkRefused("expired", "This request expired before anyone answered, so its link died with it.")
    if status != Status.PENDING:
        raise LinkRefused(
            "decided",
            f"This request was already {status} by {approval.decided_by_email or 'someone'}, so its link died.",
        )
    if approval.call_digest != claims.get("c"):
        raise LinkRefused("tampered", "The call this link was signed for is not the call the request now holds.")
    return Link(delivery=delivery, approval=approval, user=membership.user)
