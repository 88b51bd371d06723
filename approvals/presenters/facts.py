"""How a request reads to a person, whatever the surface — its title, facts, decision and outcome lines,
buttons — worded once: the card, the page, the CLI and every channel place these.

The API's shape is not here: that is `presenters/api.py`'s `approval_as_dict`, the contract engines read.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.urls import reverse

from approvals.edits import checks as edits
from approvals.models import ApprovalKind, ApprovalRequest, ExecutionStatus, Status
from approvals.presenters.text import duration, pretty_json, thousands, visible, visible_lines, when
from approvals.questions.validate import answer_words, option_label
from approvals.review.permissions import approver_groups_of
from approvals.review.selectors import approving_votes
from passkeys.policy import needs_passkey
from people.selectors import group_names

if TYPE_CHECKING:  # for the annotation only
    from approvals.presenters.card import CardUrls


POINT_WORDS = {"entry": "before the call", "exit": "before its result returns"}

LEVEL_HINTS = {
    "none": "This config passes only the target and operation (level none), so there is no summary or arguments.",
    "summary": "This config passes a short summary, not the exact arguments (level summary).",
    "full": "This config passes the exact arguments (level full): this is what will run.",
}

EXPIRED_LINE = "Expired — nobody answered; counted as rejected"
# approvals/expiry/undeliverable.py: no notification could be delivered and nobody opened it — not a person's "no".
UNDELIVERABLE_LINE = "Undeliverable — nobody could be reached; counted as rejected"


def is_undeliverable(approval: ApprovalRequest) -> bool:
    return approval.status == Status.EXPIRED and approval.undeliverable


# A question nobody answered: nobody declined it, and no option was chosen for anyone.
QUESTION_EXPIRED_WORDS = "nobody answered; no option was chosen for anyone"
QUESTION_EXPIRED_LINE = f"Expired — {QUESTION_EXPIRED_WORDS}"


def _named(noun: str, target: str) -> str:
    """'cell 12' stays 'cell 12'; '12' becomes 'cell 12'."""
    if target.lower().startswith(noun + " "):
        return target
    return f"{noun} {target}".strip()


def card_title(approval: ApprovalRequest) -> str:
    """An imperative naming the act and its object (seed 000's card vocabulary), engine text made visible."""
    return visible(_card_title(approval))


def _card_title(approval: ApprovalRequest) -> str:
    if approval.kind == ApprovalKind.TOKEN_CAP:
        return "Token cap reached"
    if approval.is_question:
        return approval.title or ("Review a plan" if approval.kind == ApprovalKind.PLAN else "A question")
    target = approval.target or "(no target given)"
    if approval.boundary == "delete":
        return f"Delete {target}"
    if approval.boundary == "mcp_server":
        return f"Call {approval.operation} on {target}" if approval.operation else f"Call {target}"
    if approval.boundary == "cell":
        return f"Run {_named('cell', approval.target)}"
    if approval.boundary == "worker":
        return f"Start {_named('worker', approval.target)}"
    return f"{approval.operation or 'Act on'} {target}"


def point_words(point: str) -> str:
    return POINT_WORDS.get(point, "")


def level_hint(level: str) -> str:
    return LEVEL_HINTS.get(level, "")


def waited_for(approval: ApprovalRequest, now: datetime | None = None) -> timedelta | None:
    """How long the request waited for its answer (to the deadline, for an expired one)."""
    status = approval.effective_status(now)
    if is_undeliverable(approval) and approval.decided_at:
        return approval.decided_at - approval.created_at
    if status == Status.EXPIRED:
        return approval.expires_at - approval.created_at
    if approval.decided_at:
        return approval.decided_at - approval.created_at
    return None


def waited(approval: ApprovalRequest) -> str:
    return duration(waited_for(approval))


def outcome_word(approval: ApprovalRequest) -> str:
    """What was decided, in the words of the buttons: a token cap is proceeded past or stopped, not approved."""
    status = approval.effective_status()
    if is_undeliverable(approval):
        return "Undeliverable"
    if approval.kind == ApprovalKind.TOKEN_CAP and status in (Status.APPROVED, Status.REJECTED):
        return "Proceeded past cap" if status == Status.APPROVED else "Stopped"
    if approval.kind == ApprovalKind.PLAN and status == Status.REJECTED:
        return "Changes asked"
    return Status(status).label


def decided_by(approval: ApprovalRequest) -> str:
    """'by X at T' (after the outcome's badge in the history), or why nobody did."""
    if is_undeliverable(approval):
        return f"nobody could be reached; counted as rejected at {when(approval.decided_at)}"
    if approval.effective_status() == Status.EXPIRED:
        if approval.kind == ApprovalKind.QUESTION:
            return QUESTION_EXPIRED_WORDS
        return "nobody answered; counted as rejected"
    if approval.is_pending():
        return ""
    on_behalf = f" on behalf of {approval.on_behalf_of}" if approval.on_behalf_of else ""
    return f"by {approval.decided_by_email or 'a deleted user'}{on_behalf} at {when(approval.decided_at)}"


def decision_line(approval: ApprovalRequest) -> str:
    """'Approved by X at T', 'Stopped by X at T' (a token cap), or the expired line."""
    status = approval.effective_status()
    if is_undeliverable(approval):
        return UNDELIVERABLE_LINE
    if status == Status.EXPIRED:
        return QUESTION_EXPIRED_LINE if approval.kind == ApprovalKind.QUESTION else EXPIRED_LINE
    if status == Status.PENDING:
        return "Waiting for a decision"
    return f"{outcome_word(approval)} {decided_by(approval)}"


def decided_line(approval: ApprovalRequest, *, already: bool) -> str:
    """What the person who pressed a button is told: their decision, or the first one if it came too late."""
    line = decision_line(approval)
    if already and approval.effective_status() != Status.EXPIRED:
        return f"Already {line[0].lower()}{line[1:]}"
    return line


def outcome_line(approval: ApprovalRequest) -> str:
    """What the engine reported after an approval: a separate fact from the decision."""
    if approval.kind == ApprovalKind.QUESTION:  # nothing runs: what it got back is the answers
        return "; ".join(answers_lines(approval)) or "no answers"
    if approval.kind == ApprovalKind.PLAN:
        status = approval.effective_status()
        return {Status.APPROVED: "the run goes on with the plan", Status.REJECTED: "sent back to revise"}.get(
            status, "not run (halted)"
        )
    if approval.effective_status() != Status.APPROVED:
        return "not run (halted)"
    if not approval.execution_status:
        return "outcome not reported"
    if approval.execution_status == ExecutionStatus.STARTED:
        return "outcome unknown: started, never reported"
    line = approval.get_execution_status_display().lower()
    if approval.execution_id:
        line += f" · {visible(approval.execution_id)}"
    return line


# The card's facts: one list for every surface a person reads ----------------------------------
# The request page, the one-click confirm page, email (text and HTML), Slack, and any channel
# added later read a request's facts here, engine text already made visible: a surface only
# places them (and escapes them for its own markup).


@dataclass(frozen=True)
class Fact:
    key: str  # stable, for a surface that places some facts apart (Slack's fields, a page's <code>)
    label: str
    value: str  # visible text, never marked safe
    url: str = ""  # where the value links, if anywhere (the frozen version)
    long: bool = False  # multi-line text (line breaks kept): the rule's message, a summary, the arguments
    code: bool = False  # an identifier or a call's text, set in monospace where the surface can


def approvers_facts(approval: ApprovalRequest) -> list[Fact]:
    """Who is needed, where the rule names approver groups: only their members (and their stand-ins) decide
    (people/deciders.py)."""
    groups = approver_groups_of(approval)
    if not groups:
        return []
    names = ", ".join(visible(name) for name in group_names(workspace_id=approval.workspace_id, ids=groups))
    return [Fact("approvers", "Who decides", f"members of {names} (or their delegates)")]


def facts(approval: ApprovalRequest, *, urls: "CardUrls | None" = None) -> list[Fact]:
    """What a person is shown of a request before deciding it, in this order (`urls`: a page's
    links reversed once, for a page drawing many cards)."""
    config = approval.config
    version = (
        urls.fill(urls.version, config.public_id, approval.config_version)
        if urls
        else reverse("rules:version", args=[config.public_id, approval.config_version])
    )
    shown = [Fact("caller", "Caller", visible(approval.caller) or "—")]
    if approval.is_question:
        shown += question_facts(approval)
    elif approval.is_token_cap:
        shown.append(
            Fact("tokens", "Tokens used", f"{thousands(approval.tokens_used)} of {thousands(approval.token_cap)}")
        )
        shown.append(Fact("scope", "Scope", approval.get_scope_display() if approval.scope else "—"))
    else:
        shown.append(Fact("target", "Target", visible(approval.target) or "—", code=True))
        if approval.operation:
            shown.append(Fact("operation", "Operation", visible(approval.operation), code=True))
        boundary = approval.get_boundary_display() if approval.boundary else ""
        shown.append(Fact("boundary", "Boundary", " · ".join(filter(None, [boundary, point_words(approval.point)]))))
    shown += [
        Fact(
            "config",
            "Config",
            f"{config.public_id}@{approval.config_version} · {visible(config.name)}",
            url=settings.HITL_BASE_URL + version,
        ),
        Fact("run", "Run", visible(approval.run_id), code=True),
    ]
    if not approval.is_question:  # a question carries no call, so no level of a call's information
        shown.insert(-1, Fact("level", "Level", approval.get_pass_information_level_display()))
    if approval.requested_by:
        shown.append(Fact("requested_by", "Acts for", visible(approval.requested_by)))
    shown += approvers_facts(approval)
    shown.append(Fact("created", "Created", when(approval.created_at)))
    shown.append(Fact("expires", "Expires", when(approval.expires_at)))
    if approval.message:
        shown.append(Fact("message", "Rule says", visible_lines(approval.message), long=True))
    if approval.condition_error:
        # Failed closed: the rule's condition could not say whether to ask, so a person is asked.
        shown.append(
            Fact("condition_error", "Condition failed", f"Asked because {visible(approval.condition_error)}", long=True)
        )
    if approval.summary:
        shown.append(Fact("summary", "Summary", visible_lines(approval.summary), long=True))
    edited = edits.was_edited(approval)
    if approval.arguments is not None:
        label = "Proposed arguments" if edited else "Arguments"  # edited, the approved ones are what runs
        shown.append(Fact("arguments", label, pretty_json(approval.arguments), long=True))
    if edited:
        approved = pretty_json(edits.decision_arguments(approval))
        shown.append(Fact("approved_arguments", "Approved arguments (edited)", approved, long=True))
    if warning := edits.mismatch_warning(approval):
        shown.append(Fact("digest_warning", "Warning", warning, long=True))
    if needs_passkey(approval):
        shown.append(Fact("step_up", "Step-up", STEP_UP_WORDS))
    return shown


# Said wherever a step-up request is shown (page, Slack, email): only its page, with a passkey, approves it.
STEP_UP_WORDS = "Approving needs your passkey, on the request's page in the portal; rejecting needs none"


def question_facts(approval: ApprovalRequest) -> list[Fact]:
    """What a question or a plan asks, as text for every surface (a page draws its form instead)."""
    if approval.kind == ApprovalKind.PLAN:
        return [Fact("plan", "Plan", visible_lines(approval.plan), long=True)]
    lines = []
    for number, question in enumerate(approval.questions or [], start=1):
        line = f"{number}. {question['prompt']}"
        if question["type"] == "choice":
            labels = [option_label(option) for option in question["options"]]
            line += f" ({' / '.join(labels)}{' — several' if question['multi'] else ''})"
        elif question["type"] == "boolean":
            line += " (yes / no)"
        elif question["type"] == "number":
            low, high = question.get("min"), question.get("max")
            line += " (a number" + (f", {low}–{high}" if low is not None or high is not None else "") + ")"
        lines.append(visible(line))
    return [Fact("questions", "Questions", "\n".join(lines), long=True)]


def answers_lines(approval: ApprovalRequest) -> list[str]:
    """'Which environment…? — Staging' per answered question (history, CLI, Slack's updated message)."""
    if not approval.answers:
        return []
    return [
        visible(f"{question['prompt']} — {answer_words(question, approval.answers.get(question['id']))}")
        for question in approval.questions or []
        if question["id"] in approval.answers
    ]


# The decision words of the one decide service as a person's buttons, (word, label, style), the
# refusal first and the approval rightmost.
BUTTONS = {
    ApprovalKind.GATE: [("reject", "Reject", "danger"), ("approve", "Approve", "primary")],
    ApprovalKind.TOKEN_CAP: [("stop", "Stop the run", "danger"), ("proceed", "Proceed past cap", "primary")],
    ApprovalKind.QUESTION: [("decline", "Decline", "danger"), ("answer", "Answer", "primary")],
    ApprovalKind.PLAN: [("revise", "Ask for changes", "danger"), ("approve", "Approve", "primary")],
}
# These ask for a reason first, passed back to the agent ("revise" must have one).
ASKS_REASON = {"reject", "stop", "revise"}


def buttons(approval: ApprovalRequest) -> list[tuple[str, str, str]]:
    return BUTTONS[approval.kind]


def quorum_line(approval: ApprovalRequest) -> str:
    """'1 of 2 approvals — ana@acme.test' (the approving votes so far, oldest first)."""
    votes = approving_votes(approval)
    required = approval.approvals_required
    line = f"{len(votes)} of {required} approval{'s' if required != 1 else ''}"
    names = ", ".join(vote["by"] or "a deleted user" for vote in votes)
    return f"{line} — {names}" if names else line


def still_may_approve_line(emails: list[str]) -> str:
    return ", ".join(emails) if emails else "nobody else — no reviewer is left who may approve"


def mismatch_warning(approval: ApprovalRequest) -> str:
    """The warning shown wherever a request is shown when its engine reported running another call."""
    return edits.mismatch_warning(approval)


def edited_line(approval: ApprovalRequest) -> str:
    return "Approved with edits" if edits.was_edited(approval) else ""
