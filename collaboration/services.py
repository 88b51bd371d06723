"""Comments, claims and snoozes: the one place each is written, for the API, the pages, the CLI and the chats.

None of them decides anything: a comment is words, a claim says who is on it (another reviewer may still
decide), a snooze hides a request from one reviewer's queue. Each write is audited in its transaction.
"""

from datetime import datetime, timedelta
from functools import partial

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from approvals.models import ApprovalRequest
from audit.services import actor_of, audit_append
from collaboration.exceptions import ClaimedByAnother, NotPending, TextInvalid, UntilInvalid
from collaboration.models import COMMENT_MAX, Claim, Comment, CommentVia, Snooze
from collaboration.signals import claim_changed

# "Not now" is for hours or days; a longer one is a request nobody means to answer.
SNOOZE_MAX = timedelta(days=7)


def comment_add(*, approval: ApprovalRequest, user: AbstractBaseUser, text: str, via: str = CommentVia.API) -> Comment:
    """Add `user`'s comment to `approval` (pending or decided: a comment may explain a decision afterwards)."""
    text = (text or "").strip()
    if not text:
        raise TextInvalid("Write something: a comment cannot be empty.")
    if len(text) > COMMENT_MAX:
        raise TextInvalid(f"The comment is {len(text):,} characters; keep it to {COMMENT_MAX:,}.")
    if "\x00" in text:
        raise TextInvalid("A comment cannot contain a NUL character.")
    now = timezone.now()
    with transaction.atomic():
        comment = Comment.objects.create(
            workspace_id=approval.workspace_id,
            approval=approval,
            author=user,
            author_email=user.email,
            text=text,
            via=via,
            created_at=now,
        )
        audit_append(
            workspace_id=approval.workspace_id,
            actor=actor_of(user=user),
            action="approval.commented",
            object=approval.public_id,
            data={"comment_id": comment.public_id, "via": via, "text": text},
            at=now,
        )
    return comment


def claim_take(*, approval: ApprovalRequest, user: AbstractBaseUser) -> tuple[Claim, bool]:
    """Claim a pending request for `user`; returns the claim and whether it was already theirs.

    One claimant, decided by the claim's primary key (the request): of two racing, one is refused.
    """
    _still_pending(approval)
    now = timezone.now()
    try:
        with transaction.atomic():
            claim = Claim.objects.create(
                approval=approval, workspace_id=approval.workspace_id, user=user, user_email=user.email, claimed_at=now
            )
            audit_append(
                workspace_id=approval.workspace_id,
                actor=actor_of(user=user),
                action="approval.claimed",
                object=approval.public_id,
                at=now,
            )
            _changed(approval)
    except IntegrityError:
        claim = Claim.objects.filter(approval=approval).first()
        if claim is None:  # released between the two statements: try once more
            return claim_take(approval=approval, user=user)
        if claim.user_id != user.pk:
            raise ClaimedByAnother(f"{claim.user_email} is on it already; they (or an admin) may release it.") from None
        return claim, True
    return claim, False


def claim_release(*, approval: ApprovalRequest, user: AbstractBaseUser, is_admin: bool = False) -> bool:
    """Release the claim on `approval` (its claimant, or an admin); False when there was none."""
    with transaction.atomic():
        claim = Claim.objects.select_for_update().filter(approval=approval).first()
        if claim is None:
            return False
        if claim.user_id != user.pk and not is_admin:
            raise ClaimedByAnother(f"{claim.user_email} is on it; only they or an admin may release the claim.")
        claim.delete()
        audit_append(
            workspace_id=approval.workspace_id,
            actor=actor_of(user=user),
            action="approval.unclaimed",
            object=approval.public_id,
            data={"claimed_by": claim.user_email},
        )
        _changed(approval)
    return True


def snooze_set(*, approval: ApprovalRequest, user: AbstractBaseUser, until: datetime) -> Snooze:
    """Hide a pending request from `user`'s queue until `until` (at most SNOOZE_MAX ahead); undecided."""
    now = timezone.now()
    if timezone.is_naive(until):
        raise UntilInvalid("Give `until` with its time zone (ISO 8601, e.g. 2026-12-05T09:00:00Z).")
    if until <= now:
        raise UntilInvalid("`until` is in the past; snooze until a later time.")
    if until > now + SNOOZE_MAX:
        raise UntilInvalid(f"Snooze for at most {SNOOZE_MAX.days} days.")
    _still_pending(approval)
    with transaction.atomic():
        snooze, _ = Snooze.objects.update_or_create(
            approval=approval,
            user=user,
            defaults={"workspace_id": approval.workspace_id, "until": until, "created_at": now},
        )
        audit_append(
            workspace_id=approval.workspace_id,
            actor=actor_of(user=user),
            action="approval.snoozed",
            object=approval.public_id,
            data={"until": until.isoformat()},
            at=now,
        )
    return snooze


def _changed(approval: ApprovalRequest) -> None:
    """Everyone sees who is on it: whatever shows the claim outside the portal hears of it once it commits."""
    transaction.on_commit(partial(claim_changed.send, sender=Claim, approval_id=approval.pk))


def _still_pending(approval: ApprovalRequest) -> None:
    if not approval.is_pending():
        raise NotPending(f"{approval.public_id} is no longer pending; there is nothing left to claim or snooze.")
