"""The presenters (approvals/presenters/) as template filters, under the names the templates use."""

from collections.abc import Iterable

from django import template
from django.contrib.auth.base_user import AbstractBaseUser

from approvals.models import ApprovalRequest
from approvals.presenters import card, facts, page, text
from approvals.review import selectors
from approvals.review.permissions import refuses_self_approval
from approvals.review.selectors import approving_votes

register = template.Library()

FILTERS = {
    facts: (
        "card_title",
        "point_words",
        "level_hint",
        "waited",
        "decision_line",
        "decided_by",
        "outcome_word",
        "outcome_line",
        "quorum_line",
        "facts",  # the card's facts, for every page that lists them
        "buttons",
        "mismatch_warning",
        "edited_line",
        "answers_lines",  # a question's answers, as a person reads them
    ),
    text: (
        "thousands",
        "pretty_json",
        "duration",
        "when",
        "visible",  # every engine-supplied string on a card or in the history
        "visible_lines",
    ),
    card: (
        "meter_percent",
        "cap_percent",
        "ask_card",  # a question's form or a plan's safe HTML, on its page once decided
    ),
    page: ("edit_summary",),  # approve with edits: a decided request's diff and digests
}
for _module, _names in FILTERS.items():
    for _name in _names:
        register.filter(_name, getattr(_module, _name))


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
    return facts.still_may_approve_line(selectors.may_still_approve(approval=approval, reviewers=reviewers))


@register.simple_tag
def grant_durations() -> list[tuple[int, str]]:
    return card.GRANT_DURATIONS
