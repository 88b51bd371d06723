""" "I'm on it" from a chat card, and every card brought up to date when a claim is taken or released.

A press claims through collaboration's one `claim_take` (the page, the API and the CLI call it too), as the
member the press is (Slack's email, Telegram's linked account) and only if they may review the request, the
check the decide buttons make. A claim never decides. Everyone sees who: collaboration sends `claim_changed`
once a claim commits, wherever it was taken or released, and the cards of that request on every Slack
channel and Telegram chat are refreshed on the django-q2 cluster (the refresh a decision uses, which also
compares the claimant each card shows).
"""

import logging

from django.contrib.auth.base_user import AbstractBaseUser
from django_q.tasks import async_task

from approvals.models import ApprovalRequest
from collaboration.services import claim_take
from common.exceptions import DomainError

from . import slack, telegram
from .outbound import slack_messages_refresh
from .telegram_outbound import telegram_messages_refresh

logger = logging.getLogger(__name__)

TASK = "integrations.chat_claims.cards_refresh"
NOTHING_CLAIMED = "Nothing changed."


def chat_claim(*, approval: ApprovalRequest, user: AbstractBaseUser) -> tuple[bool, str]:
    """(this press claimed it, what to tell the presser): another reviewer's claim is refused naming them."""
    try:
        _claim, already = claim_take(approval=approval, user=user)
    except DomainError as refused:  # claimed by another, no longer pending: the claim service's own words
        return False, f"{refused.message.rstrip('.')}. {NOTHING_CLAIMED}"
    if already:
        return False, "You are on it already; anyone may still decide it."
    return True, f"You are on it: every card of {approval.public_id} says so. Anyone may still decide it."


def queue_cards_refresh(sender: object, approval_id: int, **kwargs: object) -> None:
    """collaboration's `claim_changed` (sent on commit; IntegrationsConfig.ready connects it): the cards' refresh
    goes on the cluster, so no page, API call or chat press waits on Slack or Telegram."""
    async_task(TASK, approval_id)


def cards_refresh(approval_id: int) -> int:
    """Every Slack and Telegram card of the request, brought up to date (who is on it); how many changed.

    A chat that refuses now is logged, not retried: the request's next claim or its decision refreshes the
    card again, and the page always shows the claim.
    """
    approval = ApprovalRequest.objects.filter(pk=approval_id).first()
    if approval is None:
        return 0
    changed = 0
    try:
        changed += slack_messages_refresh(approval=approval)
    except slack.SlackError as error:
        logger.warning("Could not show the claim on %s's Slack cards: %s", approval.public_id, error.message)
    try:
        changed += telegram_messages_refresh(approval=approval)
    except telegram.TelegramError as error:
        logger.warning("Could not show the claim on %s's Telegram cards: %s", approval.public_id, error.message)
    return changed
