"""Deciding a request — through the tab, the API, the CLI, Slack or a one-click link: one service.

The database, not Python, decides who wins a race: a conditional UPDATE on (pending, not yet
expired) lets exactly one decision through, and a quorum's votes queue on the request's row lock.
"""

from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from approvals.edits.checks import ApprovedCall, approved_call
from approvals.ending import end_pending, ending_statement
from approvals.exceptions import (
    GrantNotAllowed,
    ReasonRequired,
    ReasonTooLong,
    RequestHalted,
    SelfApproval,
    WrongDecision,
)
from approvals.expiry.expire import approval_expire_if_overdue
from approvals.grants.services import grant_check, grant_create
from approvals.halts.covering import NOT_HALTED, halt_covering
from approvals.models import Action, ApprovalKind, ApprovalRequest, Status, Vote
from approvals.presenters.channels import review_url
from approvals.questions.validate import AUDIT_ACTIONS, QUESTION_DECISIONS, answers_check
from approvals.review.links import LinkRefused, link_open
from approvals.review.permissions import approver_groups_of, refuses_self_approval
from audit.chain import canonical
from audit.services import actor_of, audit_append, record_cte
from common.ids import new_public_id
from contacts.models import Delivery, DeliveryEvent
from contacts.outbox import deliveries_for_resolution
from passkeys.stepup import StepUp, step_up_check
from people.deciders import Decider, decider_check

# The decision words, once: word → (the kind it decides, resulting status, the action the engine takes).
DECISIONS: dict[str, tuple[str, str, str]] = {
    "approve": (ApprovalKind.GATE, Status.APPROVED, Action.RESUME),
    "reject": (ApprovalKind.GATE, Status.REJECTED, Action.HALT),
    "proceed": (ApprovalKind.TOKEN_CAP, Status.APPROVED, Action.PROCEED_PAST_CAP),
    "stop": (ApprovalKind.TOKEN_CAP, Status.REJECTED, Action.STOP_RUN),
}
# A reason (or a vote's note) is passed back to the agent; the model's column holds this much.
REASON_MAX = ApprovalRequest._meta.get_field("reason").max_length


def approval_decide(
    *,
    approval: ApprovalRequest,
    user: AbstractBaseUser,
    decision: str,
    reason: str = "",
    grant_ttl_seconds: int | None = None,
    step_up: StepUp | None = None,
    arguments: object = None,
    edit: bool = False,
    answers: dict | None = None,
) -> tuple[ApprovalRequest, bool]:
    """Decide, or vote on, a request. Returns it as it now is, and whether nothing changed.

    Nothing changed (`True`) when the request was already decided or expired (the first decision
    stands), or — the request still pending — when this reviewer had already voted on it.

    - One approval needed: a conditional UPDATE on (pending, not yet expired) is the arbiter; of two
      reviewers deciding at once exactly one updates the row, the other gets the first decision.
    - A quorum (approvals_required N > 1): `approve` records a Vote; the N-th flips the request (see
      _approval_vote). One `reject` decides it rejected, through the same conditional UPDATE.
    - Four eyes: the person the run acts for may not approve unless the rule allows it (SelfApproval).
    - `grant_ttl_seconds`: approve and grant the rest of the run (config, rule, run id) that long.
    - `reason`: at most REASON_MAX characters (ReasonTooLong), whichever door it came through.
    - Step-up: approving under a rule with `require_passkey` needs `step_up`, a passkey assertion bound to
      this request, which only its page can give (passkeys.stepup; PasskeyRequired / PasskeyRefused).
    - `edit`: approve `arguments` instead of the proposal (approvals/edits/checks.py says where that is allowed
      and checks them); the request keeps its proposal, the decision records what was approved.
    - A question or a plan is answered once by whoever answers first (`question_decide`).
    - Approver groups and delegations (people/deciders.py): only a member of the rule's groups, or a live
      delegate of one (recorded `on_behalf_of` them), decides (NotAnApprover); a delegate never approves
      what its delegator requested (SelfApproval).
    """
    # Long: its docstring states every rule of deciding; the body checks them in that order.
    decider = decider_check(workspace_id=approval.workspace_id, user=user, groups=approver_groups_of(approval))
    if approval.is_question:
        if grant_ttl_seconds is not None:
            raise GrantNotAllowed("A question or a plan takes no run grant: answer it, or approve the plan alone.")
        return question_decide(approval=approval, user=user, decision=decision, reason=reason, answers=answers)
    if decision not in DECISIONS:
        raise WrongDecision(f"decision must be one of {', '.join(DECISIONS)}")
    kind, status, action = DECISIONS[decision]
    if approval.kind != kind:
        pair = "approve or reject" if approval.kind == ApprovalKind.GATE else "proceed or stop"
        raise WrongDecision(f"A {approval.get_kind_display().lower()} request is decided with {pair}, not {decision}")
    if len(reason) > REASON_MAX:
        raise ReasonTooLong(f"The reason is {len(reason):,} characters; keep it to {REASON_MAX:,}.")
    if grant_ttl_seconds is not None:
        grant_check(approval=approval, decision=decision, ttl_seconds=grant_ttl_seconds)
    approved = approved_call(approval=approval, decision=decision, arguments=arguments, edit=edit)
    if status == Status.APPROVED and refuses_self_approval(approval=approval, user=user):
        raise SelfApproval(
            f"{approval.public_id} acts for {approval.requested_by}, and its rule needs another reviewer's "
            "approval (four eyes). You may reject it; ask another reviewer to approve it."
        )
    if status == Status.APPROVED and decider.requested_by_delegator(approval.requested_by):
        raise SelfApproval(
            f"{approval.public_id} was requested by {approval.requested_by}, for whom you stand in: a delegate "
            "never approves its delegator's requests (four eyes). You may reject it; ask another reviewer."
        )
    now = timezone.now()
    if status == Status.APPROVED:
        step_up_check(
            approval=approval,
            user=user,
            step_up=step_up,
            approved_digest=approved.digest,
            now=now,
            page_url=review_url(approval),
        )
    if status == Status.APPROVED and approval.approvals_required > 1:
        return _approval_vote(approval=approval, user=user, reason=reason, now=now, decider=decider)
    grant_id = new_public_id("grt") if grant_ttl_seconds is not None else None
    with transaction.atomic():
        won = _decided(
            approval=approval,
            user=user,
            status=status,
            action=action,
            reason=reason,
            now=now,
            grant_id=grant_id,
            approved=approved if status == Status.APPROVED else None,
            on_behalf_of=decider.on_behalf_of,
        )
        if won:
            if grant_id:
                grant_create(public_id=grant_id, approval=approval, user=user, now=now, ttl_seconds=grant_ttl_seconds)
            # Every way a request resolves tells its contacts, in the deciding transaction.
            deliveries_for_resolution(approvals=[approval], event=DeliveryEvent.DECIDED)
    if not won:
        approval_expire_if_overdue(approval=approval)
    approval.refresh_from_db()
    if not won:
        _refuse_if_halted(approval)
    return approval, not won


# The UPDATE, its audit record and the NOTIFY in one statement (approvals/ending.py), so auditing a
# decision costs no round trip (bench/audit.py). grant_id is only ever set by a decision that grants
# (NULL otherwise, as every pending request has it). A single decision must not be overdue yet; a
# quorum's flip must have as many votes as it needs — the database compares.
_DECIDE_SET = """status = %(status)s, decision_action = %(action)s, decided_at = %(now)s, decided_by_id = %(user)s,
        decided_by_email = %(email)s, on_behalf_of = %(on_behalf_of)s, reason = %(reason)s, grant_id = %(grant)s,
        approved_arguments = %(approved_arguments)s::jsonb, approved_digest = %(approved_digest)s"""
_DECIDED_AUDIT = record_cte(
    "audit_record",
    "SELECT %(workspace)s, %(now)s, %(actor)s, 'approval.decided', %(public_id)s, %(data)s::jsonb FROM ended",
)
_DECIDE_SQL = ending_statement(set_=_DECIDE_SET, where="id = %(id)s AND expires_at > %(now)s", audit=_DECIDED_AUDIT)
# An approval also needs no halt in force over the request (approvals/halts/covering.py): asked by the
# database under the halt lock, so a halt committing meanwhile is seen.
_APPROVE_SQL = ending_statement(
    set_=_DECIDE_SET, where=f"id = %(id)s AND expires_at > %(now)s AND {NOT_HALTED}", audit=_DECIDED_AUDIT
)
_QUORUM_MET = f"approvals_required <= (SELECT count(*) FROM {Vote._meta.db_table} WHERE approval_id = %(id)s)"
_FLIP_SQL = ending_statement(
    set_=_DECIDE_SET, where=f"id = %(id)s AND {_QUORUM_MET} AND {NOT_HALTED}", audit=_DECIDED_AUDIT
)


def _decided(
    *,
    approval: ApprovalRequest,
    user,
    status: str,
    action: str,
    reason: str,
    now: datetime,
    grant_id: str | None = None,
    quorum: bool = False,
    approved: ApprovedCall | None = None,
    on_behalf_of: str = "",
) -> bool:
    """Decide a pending request if it still is one; returns whether this call decided it.

    The conditional UPDATE is the arbiter (a decided request is never overwritten). When it wins,
    the same statement appends its `approval.decided` record and wakes its long-polls (NOTIFY, sent
    at commit). Call inside the deciding transaction. `approved`: the call an approval lets run; only
    an edited one is stored (unedited, the decision's arguments are the proposal's).
    """
    edited = approved is not None and approved.edited
    params = {
        "id": approval.pk,
        "pending": Status.PENDING,
        "status": status,
        "action": action,
        "now": now,
        "user": getattr(user, "pk", None),
        "email": getattr(user, "email", "") or "",
        "on_behalf_of": on_behalf_of,
        "reason": reason,
        "grant": grant_id,
        "approved_arguments": canonical(approved.arguments) if edited else None,
        "approved_digest": approved.digest if edited else "",
        "public_id": approval.public_id,
    }
    params.update(
        workspace=approval.workspace_id,
        actor=actor_of(user=user),
        data=canonical(
            {
                "outcome": status,
                "action": action,
                "reason": reason,
                **({"on_behalf_of": on_behalf_of} if on_behalf_of else {}),
                **_digests(approval, approved),
            }
        ),
    )
    statement = _FLIP_SQL if quorum else _APPROVE_SQL if status == Status.APPROVED else _DECIDE_SQL
    return bool(end_pending(statement, params))


def _refuse_if_halted(approval: ApprovalRequest) -> None:
    """A request left pending by an approval the database refused, because a halt covers it: say so."""
    if approval.status == Status.PENDING and halt_covering(config_id=approval.config_id, run_id=approval.run_id):
        raise RequestHalted()


def _digests(approval: ApprovalRequest, approved: ApprovedCall | None) -> dict:
    """A gate decision's audit record names both digests: the proposed call's and the approved one's."""
    if approval.kind != ApprovalKind.GATE:
        return {}
    return {
        "call_digest": approval.call_digest,
        "approved_digest": approved.digest if approved is not None else None,
        "edited": approved is not None and approved.edited,
    }


def _approval_vote(
    *, approval: ApprovalRequest, user, reason: str, now, decider: Decider
) -> tuple[ApprovalRequest, bool]:
    """Record one reviewer's approval of a quorum request; the N-th flips it, exactly once.

    The request's row lock queues every vote behind the one before, so each sees all earlier votes
    and the pending check and vote INSERT cannot outrun a decision. The flip is a conditional UPDATE
    over the vote count — the database compares, never Python — and only it wakes long-polls.
    """
    with transaction.atomic():
        # The halt lock before the row's (a halt takes them in that order): a vote never deadlocks a halt.
        halted = halt_covering(config_id=approval.config_id, run_id=approval.run_id)
        pending = ApprovalRequest.objects.select_for_update().filter(pk=approval.pk).pending(now)
        if pending.values_list("pk", flat=True):
            if halted:
                raise RequestHalted()
            if Vote.objects.filter(approval_id=approval.pk, reviewer=user).exists():
                approval.refresh_from_db()
                return approval, True  # already voted: nothing changes
            Vote.objects.create(
                approval_id=approval.pk,
                reviewer=user,
                reviewer_email=user.email,
                at=now,
                note=reason,
                on_behalf_of=decider.on_behalf_of,
            )
            on_behalf = {"on_behalf_of": decider.on_behalf_of} if decider.on_behalf_of else {}
            audit_append(
                workspace_id=approval.workspace_id,
                actor=actor_of(user=user),
                action="approval.voted",
                object=approval.public_id,
                data={"vote": "approve", "reason": reason, "call_digest": approval.call_digest, **on_behalf},
                at=now,
            )
            flipped = _decided(
                approval=approval,
                user=user,
                status=Status.APPROVED,
                action=Action.RESUME,
                reason=reason,
                now=now,
                quorum=True,
                approved=approved_call(approval=approval, decision="approve"),  # a quorum approves as proposed
                on_behalf_of=decider.on_behalf_of,
            )
            if flipped:
                deliveries_for_resolution(approvals=[approval], event=DeliveryEvent.DECIDED)
            approval.refresh_from_db()
            if not flipped:
                _refuse_if_halted(approval)
            return approval, False
    approval_expire_if_overdue(approval=approval)
    approval.refresh_from_db()
    return approval, True


# A question's or a plan's answer: the same end as _DECIDE_SQL (pending, not yet overdue), which also
# records the answers, with its audit record in its own words.
_ANSWER_SQL = ending_statement(
    set_="""status = %(status)s, decision_action = %(action)s, decided_at = %(now)s, decided_by_id = %(user)s,
        decided_by_email = %(email)s, reason = %(reason)s, answers = %(answers)s::jsonb""",
    where=f"id = %(id)s AND expires_at > %(now)s AND {NOT_HALTED}",
    audit=record_cte(
        "audit_record",
        "SELECT %(workspace)s, %(now)s, %(actor)s, %(audit_action)s, %(public_id)s, %(data)s::jsonb FROM ended",
    ),
)


def question_decide(
    *, approval: ApprovalRequest, user: AbstractBaseUser, decision: str, reason: str = "", answers: dict | None = None
) -> tuple[ApprovalRequest, bool]:
    """Answer or decline a question, approve a plan or ask for changes: once, whoever is first.

    No quorum and no four eyes (a question asks for knowledge, not consent). The answers are checked
    against the questions (approvals.questions.validate.answers_check) before the conditional UPDATE, which
    lets exactly one of two reviewers answering at once through; the other gets the first answer.
    """
    words = QUESTION_DECISIONS[approval.kind]
    if decision not in words:
        raise WrongDecision(
            f"A {approval.get_kind_display().lower()} is decided with {' or '.join(words)}, not {decision or 'nothing'}"
        )
    status, action = words[decision]
    if len(reason) > REASON_MAX:
        raise ReasonTooLong(f"The reason is {len(reason):,} characters; keep it to {REASON_MAX:,}.")
    if decision == "revise" and not reason.strip():
        raise ReasonRequired("Say what to change in the plan: a reason is required to ask for changes.")
    checked = None
    if decision == "answer":
        checked = answers_check(questions=approval.questions or [], answers=answers if answers is not None else {})
    now = timezone.now()
    params = {
        "id": approval.pk,
        "pending": Status.PENDING,
        "status": status,
        "action": action,
        "now": now,
        "user": getattr(user, "pk", None),
        "email": getattr(user, "email", "") or "",
        "reason": reason,
        "answers": None if checked is None else canonical(checked),
        "public_id": approval.public_id,
    }
    data = {"outcome": status, "action": action, "reason": reason}
    if checked is not None:
        data["answers"] = checked
    params.update(
        workspace=approval.workspace_id,
        actor=actor_of(user=user),
        audit_action=AUDIT_ACTIONS[decision],
        data=canonical(data),
    )
    with transaction.atomic():
        won = bool(end_pending(_ANSWER_SQL, params))
        if won:
            deliveries_for_resolution(approvals=[approval], event=DeliveryEvent.DECIDED)
    if not won:
        approval_expire_if_overdue(approval=approval)
    approval.refresh_from_db()
    if not won:
        _refuse_if_halted(approval)
    return approval, not won


def link_decide(*, token: str, decision: str, reason: str = "") -> tuple[ApprovalRequest, bool]:
    """Decide through a one-click link, once: the conditional UPDATE on `link_used_at` is the arbiter."""
    link = link_open(token)
    with transaction.atomic():
        won = Delivery.objects.filter(pk=link.delivery.pk, link_used_at__isnull=True).update(
            link_used_at=timezone.now()
        )
        if not won:
            raise LinkRefused("used", "This link was already used: each one-click link works once.")
        return approval_decide(approval=link.approval, user=link.user, decision=decision, reason=reason)
