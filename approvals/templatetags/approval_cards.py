"""The presenters (approvals/presenters.py) as template filters, under the names the templates use."""

from collections.abc import Iterable

from django import template
from django.contrib.auth.base_user import AbstractBaseUser

from approvals import presenters, selectors
from approvals.models import ApprovalRequest
from approvals.permissions import refuses_self_approval
from approvals.selectors import approving_votes

register = template.Library()

for _name in (
    "card_title",
    "meter_percent",
    "cap_percent",
    "thousands",
    "point_words",
    "level_hint",
    "pretty_json",
    "duration",
    "waited",
    "decision_line",
    "decided_by",
    "outcome_word",
    "when",
    "outcome_line",
    "quorum_line",
    "visible",  # every engine-supplied string on a card or in the history
    "visible_lines",
    "facts",  # the card's facts, for every page that lists them
    "buttons",
    "edit_summary",  # approve with edits: a decided request's diff and digests
    "mismatch_warning",
    "edited_line",
    "answers_lines",  # a question's answers, as a person reads them
    "ask_card",  # a question's form or a plan's safe HTML, on its page once decided
):
    register.filter(_name, getattr(presenters, _name))


@register.filter
def self_refused(approval: ApprovalRequest, user: AbstractBaseUser) -> bool:
    """Four eyes: the card hides Approve from the person the run acts for."""
    return refuses_self_approval(approval=approval, user=user)


@register.filter
def voted(approval: ApprovalRequest, user: AbstractBaseUser) -> bool:
    """Has this reviewer already approved this quorum request (the card then hides Approve)?"""
    email = getattr(user, "email", "")
    return approval.approvals_required > 1 and any(vote["by"] == email for vote in approving_votes(approval))


@register.filter
def approvals(approval: ApprovalRequest) -> list[dict]:
    return approving_votes(approval)


@register.simple_tag
def still_may_approve(approval: ApprovalRequest, reviewers: Iterable[AbstractBaseUser]) -> str:
    return presenters.still_may_approve_line(selectors.may_still_approve(approval=approval, reviewers=reviewers))


@register.simple_tag
def grant_durations() -> list[tuple[int, str]]:
    return presenters.GRANT_DURATIONS
