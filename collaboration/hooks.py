"""What collaboration adds to approvals' pages (approvals/extensions.py): the request page's sections, the
Approvals tab's strip under each card, the reviewer's snoozed requests hidden from their queue, and who is on a
request in a person's API read of it."""

from django.db.models import Count, F, OuterRef, Subquery
from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from approvals.extensions import Hooks
from approvals.models import ApprovalRequest
from approvals.review.permissions import may_decide
from approvals.review.withdraw import may_withdraw
from collaboration import selectors
from collaboration.models import Claim, Comment
from collaboration.presenters import claim_line, claimed, comment_line
from collaboration.story import run_story


def page_sections(request: HttpRequest, approval: ApprovalRequest) -> list[SafeString]:
    """The request's people (claim, snooze) and comments, then "This run so far" — for members who may review it."""
    if not may_decide(request.actor, approval):
        return []
    pending = approval.is_pending()
    claim = selectors.claim_of(approval) if pending else None
    ctx = {
        "approval": approval,
        "pending": pending,
        "claim": claim_line(claim, user=request.user),
        "mine": claim is not None and claim.user_id == request.user.pk,
        "snooze": selectors.snooze_of(approval=approval, user=request.user) if pending else None,
        "requester": pending and may_withdraw(request.actor, approval),
        "comments": [comment_line(comment) for comment in selectors.comments_of(approval)],
        "story": run_story(workspace=request.actor.workspace, approval=approval),
    }
    return [SafeString(render_to_string("collaboration/_page_sections.html", ctx, request=request))]


def _comment_count() -> Subquery:
    comments = Comment.objects.filter(approval=OuterRef("pk")).order_by().values("approval").annotate(n=Count("id"))
    return Subquery(comments.values("n")[:1])


def queue_extra() -> dict[str, Subquery]:
    """Who claimed each card and how many comments it has, read in the queue's own query (no query more)."""
    return {
        "claimed_by": Subquery(Claim.objects.filter(approval=OuterRef("pk")).values("user_email")[:1]),
        "comment_count": _comment_count(),
        "card_public_id": F("public_id"),  # what the strip's forms post to
    }


def api_extra(approvals: list[ApprovalRequest]) -> dict[int, dict]:
    """A person's API read of requests: who is on each (`claimed_by`, as the claim endpoints say it), one query.
    Only while a request is pending, as its page and cards say it: a claim is about work still to do."""
    pending = [approval.pk for approval in approvals if approval.is_pending()]
    claims = selectors.claims_of(pending) if pending else {}
    return {approval.pk: claimed(claims.get(approval.pk)) for approval in approvals}


def history_extra() -> dict[str, Subquery]:
    """How many comments each History row has, read in the page's own query (no query more)."""
    return {"comment_count": _comment_count()}


def history_note(request: HttpRequest, read: dict) -> SafeString:
    comments = read.get("comment_count") or 0
    if not comments:
        return SafeString("")
    said = f"{comments} comment{'s' if comments != 1 else ''}"
    return format_html('<span class="muted comment-count">{}</span>', said)


def queue_strip(request: HttpRequest, read: dict) -> SafeString:
    """Under each pending card: who is on it, its comments, and "I'm on it" / "Not now (4 h)" for reviewers."""
    claimed_by, comments = read.get("claimed_by"), read.get("comment_count") or 0
    mine = claimed_by is not None and claimed_by == getattr(request.user, "email", None)
    line = ("You are on it" if mine else f"{claimed_by} is on it") if claimed_by else ""
    said = f"{comments} comment{'s' if comments != 1 else ''}" if comments else ""
    ctx = {
        "line": line,
        "said": said,
        "public_id": read.get("card_public_id"),
        "actions": may_decide(request.actor) and bool(read.get("card_public_id")),
        "claimable": not claimed_by,
        "next": reverse("approvals:queue"),
        # The token itself, not the request: with it, each strip would run the page's context processors.
        "csrf_token": get_token(request),
    }
    return SafeString(render_to_string("collaboration/_strip.html", ctx))


HOOKS = Hooks(
    page_sections=page_sections,
    queue_hidden=selectors.snoozed_for,
    queue_extra=queue_extra,
    queue_strip=queue_strip,
    history_extra=history_extra,
    history_note=history_note,
    api_extra=api_extra,
)
