"""A notification, composed: what one message of the outbox says (contacts send it; contacts.messages
hands them this composer).

Every fact a person reads comes from the one presenter (engine text made visible there); this
module only chooses which: the subject naming the act, the card's facts, and — while the request
waits — a one-click link for a recipient who reviews the workspace.
"""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse

from approvals.models import ApprovalRequest
from approvals.presenters.api import approval_as_dict
from approvals.presenters.channels import act_subject, edit_in_portal_url, notification_body, review_url
from approvals.presenters.facts import facts
from approvals.review.links import link_reviewer, link_url_signed
from contacts.batch import shared
from contacts.models import Delivery, DeliveryEvent
from contacts.transports import Notice, Recipient, address_of

# The events that ask a person to decide: only they carry a one-click link.
ASKING = (DeliveryEvent.REQUESTED, DeliveryEvent.REMINDER, DeliveryEvent.ESCALATED)


def notice_for(*, delivery: Delivery, recipient: Recipient, digest: list[Delivery] = ()) -> Notice:
    source = settings.HITL_BASE_URL
    approval = delivery.approval
    if approval is None:
        return Notice(
            delivery_id=delivery.public_id,
            event=DeliveryEvent.TEST,
            subject=f"Test from HITL Portal: {recipient.name}",
            body="Notifications from this contact reach you.",
            approval=None,
            review_url=None,
            source=source,
            workspace_id=delivery.workspace_id,
        )
    if len(digest) > 1:
        return Notice(
            delivery_id=delivery.public_id,
            event="digest",
            subject=f"{len(digest)} more requests wait for approval",
            body="Open the Approvals tab to decide them.",
            approval=None,
            review_url=settings.HITL_BASE_URL + reverse("approvals:queue"),
            digest=[
                {"subject": act_subject(d.approval, d.event), "review_url": review_url(d.approval)} for d in digest
            ],
            source=source,
            workspace_id=delivery.workspace_id,
        )
    # The row was claimed (with its request) moments ago: the decision is as it now is.
    return Notice(
        delivery_id=delivery.public_id,
        event=delivery.event,
        subject=act_subject(approval, delivery.event),
        body=notification_body(approval, delivery.event),
        approval=approval_as_dict(approval),
        review_url=review_url(approval),
        decide_url=_one_click(delivery=delivery, approval=approval, recipient=recipient),
        edit_url=edit_in_portal_url(approval),
        facts=[(fact.label, fact.value) for fact in facts(approval)],
        source=source,
        workspace_id=delivery.workspace_id,
        request=approval,
    )


def _one_click(*, delivery: Delivery, approval: ApprovalRequest, recipient: Recipient) -> str | None:
    """A one-click link, only while pending and only for an email address that reviews the workspace."""
    if delivery.event not in ASKING or not approval.is_pending():
        return None
    if approval.is_question:  # answered on its page (a form), not by an approve / reject link
        return None
    address = address_of(recipient)
    if not address:
        return None
    workspace_id = delivery.workspace_id
    reviewer = shared(
        ("link_reviewer", workspace_id, address.lower()),  # iexact: one reviewer whatever the address's case
        lambda: link_reviewer(workspace_id=workspace_id, email=address),
    )
    return link_url_signed(delivery=delivery, user_id=reviewer)
