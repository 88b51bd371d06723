"""How comments and claims read: the API's dicts, and the page's lines (engine and people's text through `visible`)."""

import datetime

from approvals.models import ApprovalRequest
from approvals.presenters.text import visible_lines, when
from collaboration.models import Claim, Comment


def _iso(value: datetime.datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


def comment_as_dict(comment: Comment, approval: ApprovalRequest) -> dict:
    return {
        "id": comment.public_id,
        "approval_id": approval.public_id,
        "author": comment.author_email,
        "text": comment.text,
        "via": comment.via,
        "created_at": _iso(comment.created_at),
    }


def claimed(claim: Claim | None) -> dict:
    """Who is on a request, as every API answer says it: the claim endpoints' and a person's read of the request."""
    return {"claimed_by": claim.user_email if claim else None}


def claim_as_dict(approval: ApprovalRequest, claim: Claim | None) -> dict:
    return {
        "id": approval.public_id,
        **claimed(claim),
        "claimed_at": _iso(claim.claimed_at) if claim else None,
    }


def comment_line(comment: Comment) -> dict:
    """A comment as a page, a card or History shows it: who, when, and the words made visible."""
    return {
        "author": comment.author_email,
        "at": when(comment.created_at),
        "text": visible_lines(comment.text),
        "via": comment.get_via_display(),
    }


def claim_line(claim: Claim | None, *, user=None) -> str:
    if claim is None:
        return ""
    if user is not None and claim.user_id == getattr(user, "pk", None):
        return f"You are on it (since {when(claim.claimed_at)})"
    return f"{claim.user_email} is on it (since {when(claim.claimed_at)})"
