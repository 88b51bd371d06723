"""CLI: `hitl pending`, `hitl approve`, `hitl deny`, `hitl answer`, `hitl decline` (docs/api.md, CLI) — the
reviewer's queue on the host."""

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from approvals.edits import checks as edits
from approvals.exceptions import (
    ApprovalNotFound,
    EditedArgumentsInvalid,
    EditNotAllowed,
    ReasonTooLong,
    SelfApproval,
    WrongDecision,
)
from approvals.models import ApprovalKind, ApprovalRequest, Status
from approvals.presenters.facts import (
    EXPIRED_LINE,
    UNDELIVERABLE_LINE,
    answers_lines,
    card_title,
    decision_line,
    quorum_line,
)
from approvals.presenters.text import duration, visible
from approvals.questions.validate import answer_from_text
from approvals.review import selectors
from approvals.review.batch import BATCH_MAX, approvals_decide_batch
from approvals.review.decide import approval_decide
from approvals.review.permissions import may_decide
from passkeys.exceptions import PasskeyRequired
from people.exceptions import NotAnApprover
from workspaces.access import actor_for_user
from workspaces.cli import get_user, get_workspace


def pending(cmd: BaseCommand, options: dict[str, Any]) -> None:
    rows = ApprovalRequest.objects.pending().select_related("workspace", "config").order_by("created_at", "id")
    if options.get("workspace"):
        rows = rows.filter(workspace=get_workspace(options["workspace"]))
    now = timezone.now()
    count = 0
    for approval in rows.iterator(chunk_size=500):
        count += 1
        cmd.stdout.write(
            "\t".join(
                [
                    approval.public_id,
                    approval.workspace.slug,
                    f"{approval.config.public_id}@{approval.config_version}",
                    card_title(approval),
                    visible(approval.caller) or "—",
                    f"expires in {duration(approval.expires_at - now)}",
                ]
            )
        )
    if not count:
        cmd.stdout.write("No pending requests.")


def _approval_and_user(options: dict[str, Any]):
    """The request named and the reviewer deciding it, or a one-line refusal."""
    try:
        approval = selectors.approval_get(workspace=None, public_id=options["id"])
    except ApprovalNotFound:
        raise CommandError(f"No approval request {options['id']!r}; list them with `hitl pending`.") from None
    user = get_user(options["as_email"])
    if not may_decide(actor_for_user(user=user, workspace=approval.workspace), approval):
        raise CommandError(f"{user.email} is not a reviewer or admin of {approval.workspace.slug}; they cannot decide.")
    return approval, user


def _decide(
    cmd: BaseCommand,
    options: dict[str, Any],
    *,
    yes: bool | None,
    reason: str,
    answers: dict | None = None,
    edited: str | None = None,
) -> None:
    approval, user = _approval_and_user(options)
    if answers is not None or yes is None:
        decision = "answer" if answers is not None else "decline"
    elif approval.kind == ApprovalKind.TOKEN_CAP:
        decision = "proceed" if yes else "stop"
    elif approval.kind == ApprovalKind.PLAN:
        decision = "approve" if yes else "revise"
    elif approval.kind == ApprovalKind.QUESTION:
        raise CommandError(f"{approval.public_id} is a question: answer it with `hitl answer`, or `hitl decline` it.")
    else:
        decision = "approve" if yes else "reject"
    try:
        # --arguments: approve these instead of the proposal (rules with allow_edit; edits/checks.py checks them).
        arguments = edits.parse_edited(edited) if edited is not None else None
        approval, already = approval_decide(
            approval=approval,
            user=user,
            decision=decision,
            reason=reason,
            answers=answers,
            arguments=arguments,
            edit=edited is not None,
        )
    except EditedArgumentsInvalid as invalid:
        raise CommandError("; ".join(f"{path}: {message}" for path, message in invalid.fields.items())) from None
    except (ReasonTooLong, PasskeyRequired, EditNotAllowed, NotAnApprover) as refused:
        raise CommandError(refused.message) from None
    except (SelfApproval, WrongDecision) as refused:
        named = (refused.field or "").startswith("answers")  # which answer, as the API names it
        raise CommandError(f"{refused.field}: {refused.message}" if named else refused.message) from None
    title = card_title(approval)
    line = decision_line(approval)
    if approval.status == Status.PENDING:
        # A vote on a quorum request: recorded (or recorded before), the request still waits.
        done = "already approved" if already else "approved"
        cmd.stdout.write(f"{user.email} {done} {approval.public_id} ({title}): {quorum_line(approval)}.")
        return
    if already:
        # The first decision stands; say what it was rather than failing.
        first = line if line in (EXPIRED_LINE, UNDELIVERABLE_LINE) else f"already {line[0].lower()}{line[1:]}"
        cmd.stdout.write(f"{approval.public_id} ({title}) was {first}; nothing changed.")
    else:
        action = approval.get_decision_action_display().lower()
        cmd.stdout.write(f"{line}: {approval.public_id} ({title}) — the engine will {action}.")
    if approval.reason and approval.effective_status() != Status.EXPIRED:
        cmd.stdout.write(f"Reason: {visible(approval.reason)}")
    for answer_line in answers_lines(approval):
        cmd.stdout.write(answer_line)
    if edits.was_edited(approval):
        cmd.stdout.write(f"Approved with edits: the engine runs call digest {edits.decision_digest(approval)}.")


def batch(cmd: BaseCommand, options: dict[str, Any], *, decision: str, reason: str) -> None:
    """`hitl approve|deny APR APR …`: the API's batch (approvals/review/batch.py), one line per request.

    Gate requests only (approve / reject); a token cap, a question or a plan is decided alone. Exit 2 when
    any request was not decided by this call, after every line is printed.
    """
    ids = list(dict.fromkeys(options["ids"]))
    if len(ids) > BATCH_MAX:
        raise CommandError(f"A batch decides at most {BATCH_MAX} requests; you named {len(ids)}.")
    approvals = ApprovalRequest.objects.filter(public_id__in=ids).select_related("workspace")
    workspaces = {approval.workspace for approval in approvals}
    missing = sorted(set(ids) - {approval.public_id for approval in approvals})
    if missing:
        raise CommandError(f"No approval request {', '.join(missing)}; nothing was decided.")
    if len(workspaces) > 1:
        raise CommandError("The requests belong to several workspaces: decide each workspace's in its own batch.")
    [workspace] = workspaces
    user = get_user(options["as_email"])
    if not may_decide(actor_for_user(user=user, workspace=workspace)):
        raise CommandError(f"{user.email} is not a reviewer or admin of {workspace.slug}; they cannot decide.")
    results = approvals_decide_batch(workspace=workspace, user=user, ids=ids, decision=decision, reason=reason)
    for result in results:
        said = f": {result.code} — {result.message}" if result.code else ""
        cmd.stdout.write(f"{result.id}\t{result.status}{said}")
    undecided = [result for result in results if result.code]
    if undecided:
        raise CommandError(f"{len(undecided)} of {len(results)} requests were not decided by this call (see above).")


def _answers_given(approval: ApprovalRequest, settings: list[str]) -> dict:
    """`--set ID=VALUE …` as the question reads each value; an ID given twice is several options (multi)."""
    questions = {question["id"]: question for question in approval.questions or []}
    answers: dict = {}
    for setting in settings:
        qid, sep, raw = setting.partition("=")
        if not sep:
            raise CommandError(f"--set takes ID=VALUE, not {setting!r}.")
        question = questions.get(qid)
        if question is None:
            raise CommandError(f"answers.{qid}: not a question of {approval.public_id} ({', '.join(questions)}).")
        value = answer_from_text(question, raw)
        if qid in answers and question.get("multi"):
            answers[qid] = [*answers[qid], *(value or [])]
        else:
            answers[qid] = value
    return answers


def answer(cmd: BaseCommand, options: dict[str, Any]) -> None:
    approval, _ = _approval_and_user(options)
    if approval.kind != ApprovalKind.QUESTION:
        raise CommandError(f"{approval.public_id} is not a question: decide it with `hitl approve` or `hitl deny`.")
    _decide(cmd, options, yes=True, reason="", answers=_answers_given(approval, options.get("set") or []))


def decline(cmd: BaseCommand, options: dict[str, Any]) -> None:
    _decide(cmd, options, yes=None, reason=options.get("reason") or "")


def approve(cmd: BaseCommand, options: dict[str, Any]) -> None:
    if len(options["ids"]) > 1:
        if options.get("arguments") is not None:
            raise CommandError("--arguments edits one request: name one APR with it.")
        batch(cmd, options, decision="approve", reason=options.get("note") or "")
        return
    _decide(
        cmd,
        {**options, "id": options["ids"][0]},
        yes=True,
        reason=options.get("note") or "",
        edited=options.get("arguments"),
    )


def deny(cmd: BaseCommand, options: dict[str, Any]) -> None:
    if len(options["ids"]) > 1:
        batch(cmd, options, decision="reject", reason=options["reason"])
        return
    _decide(cmd, {**options, "id": options["ids"][0]}, yes=False, reason=options["reason"])


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("pending", help="list pending approval requests, oldest first")
    p.add_argument("--workspace", metavar="SLUG", help="only this workspace's requests")
    p.set_defaults(handler=pending)

    a = subparsers.add_parser("approve", help="approve a request (proceed past cap, for a token cap request)")
    a.add_argument("ids", metavar="APR", nargs="+", help="one request, or several (each decided as if alone)")
    a.add_argument("--as", dest="as_email", metavar="EMAIL", required=True, help="the reviewer deciding")
    a.add_argument("--note", default="", help="an optional note, recorded with the decision")
    a.add_argument(
        "--arguments",
        metavar="JSON",
        help="approve these arguments instead of the proposal (rules with allow_edit; checked against the schema)",
    )
    a.set_defaults(handler=approve)

    d = subparsers.add_parser("deny", help="reject a request (stop the run, for a token cap request)")
    d.add_argument("ids", metavar="APR", nargs="+", help="one request, or several (each decided as if alone)")
    d.add_argument("--as", dest="as_email", metavar="EMAIL", required=True, help="the reviewer deciding")
    d.add_argument("--reason", required=True, help="why; passed back to the agent")
    d.set_defaults(handler=deny)

    q = subparsers.add_parser("answer", help="answer a question a run asked")
    q.add_argument("id", metavar="APR")
    q.add_argument("--as", dest="as_email", metavar="EMAIL", required=True, help="the reviewer answering")
    q.add_argument(
        "--set",
        action="append",
        metavar="ID=VALUE",
        help="one answer; repeat it for each question (and for each option of a multiple choice)",
    )
    q.set_defaults(handler=answer)

    n = subparsers.add_parser("decline", help="decline to answer a question")
    n.add_argument("id", metavar="APR")
    n.add_argument("--as", dest="as_email", metavar="EMAIL", required=True, help="the reviewer declining")
    n.add_argument("--reason", default="", help="why, passed back to the agent")
    n.set_defaults(handler=decline)
