"""How a request reads to a person — card, history, CLI, messages (and notifications) — in one place.

The API's shape is not here: that is `serializers.approval_as_dict`, the contract engines read.
"""

import json
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from passkeys.policy import needs_passkey

from . import edits
from .models import ApprovalKind, ApprovalRequest, ExecutionStatus, Status
from .questions import answer_words, option_label

# Engine-supplied text shown to people: control and bidi characters made visible, never obeyed.
# A `\r` or an ANSI escape in a target rewrites a line of `hitl pending`; a U+202E turns
# "prod_db.\u202egnp.tmp_" into what looks like "prod_db._pmt.png". Every surface that shows engine
# text (CLI, cards, history, notifications) passes it through `visible()`, so a reviewer sees `\r`,
# `\x1b`, `\u202e` where those characters are. The stored text is untouched (the call digest is
# over the exact bytes).
#
# Cc: C0/C1 controls and DEL; Cf: format characters (bidi embeddings, overrides and isolates,
# zero-width joiners and spaces, BOM, tags); Zl/Zp: line and paragraph separators.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_char(char: str) -> str:
    if char in NAMED:
        return NAMED[char]
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: object, *, keep_newlines: bool = False) -> str:
    """`text` with every control, bidi and invisible format character written as its escape.

    keep_newlines: leave "\\n" as a line break (multi-line text in a page's <pre>); the CLI,
    whose rows are one line each, escapes it like the rest.
    """
    if text is None:
        return ""
    text = str(text)
    if text.isprintable():  # the common case (no Cc/Cf/Zl/Zp among its characters): nothing to do
        return text
    if keep_newlines and text.replace("\n", "").isprintable():
        # Multi-line text whose only controls are its line breaks (every card's pretty-printed
        # arguments): the per-character walk below was a fifth of the Approvals tab's time.
        return text
    return "".join(
        char
        if (keep_newlines and char == "\n") or unicodedata.category(char) not in HIDDEN_CATEGORIES
        else escape_char(char)
        for char in text
    )


POINT_WORDS = {"entry": "before the call", "exit": "before its result returns"}

LEVEL_HINTS = {
    "none": "This config passes only the target and operation (level none), so there is no summary or arguments.",
    "summary": "This config passes a short summary, not the exact arguments (level summary).",
    "full": "This config passes the exact arguments (level full): this is what will run.",
}

EXPIRED_LINE = "Expired — nobody answered; counted as rejected"
# approvals/undeliverable.py: no notification could be delivered and nobody opened it — not a person's "no".
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


def duration(value: timedelta | None) -> str:
    """3m 12s · 1h 02m · 2d 3h."""
    if value is None:
        return "—"
    seconds = max(0, int(value.total_seconds()))
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


def meter_percent(approval: ApprovalRequest) -> int:
    """The share of the cap used, for the meter (which stops at 100%)."""
    if not approval.token_cap or approval.tokens_used is None:
        return 100
    return max(0, min(100, round(approval.tokens_used * 100 / approval.token_cap)))


def cap_percent(approval: ApprovalRequest) -> int:
    """The share of the cap used, unclamped (the meter itself stops at 100%)."""
    if not approval.token_cap or approval.tokens_used is None:
        return 0
    return round(approval.tokens_used * 100 / approval.token_cap)


def thousands(value: int | None) -> str:
    """51200 → 51,200: token counts are read at a glance."""
    return f"{value:,}" if isinstance(value, int) else ""


def pretty_json(value: object) -> str:
    # JSON escapes control characters itself; bidi and zero-width ones it leaves raw.
    return visible(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False), keep_newlines=True)


def visible_lines(text: str | None) -> str:
    """Multi-line text (a summary, a rule's message): line breaks kept, every other control made visible."""
    return visible(text, keep_newlines=True)


def when(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    return timezone.localtime(moment, timezone.get_fixed_timezone(0)).strftime("%Y-%m-%d %H:%M:%S UTC")


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
    return f"by {approval.decided_by_email or 'a deleted user'} at {when(approval.decided_at)}"


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


def review_url(approval: ApprovalRequest) -> str:
    """The request's page in the portal (behind the normal login), as every notification links it."""
    return settings.HITL_BASE_URL + reverse("approvals:detail", args=[approval.public_id])


def act_subject(approval: ApprovalRequest, event: str) -> str:
    """A notification's subject names the act: "Approve: Delete customer T-4821?"."""
    title = card_title(approval)
    verb = {ApprovalKind.TOKEN_CAP: "Decide", ApprovalKind.QUESTION: "Answer", ApprovalKind.PLAN: "Review the plan"}
    ask = f"{verb.get(approval.kind, 'Approve')}: {title}?"
    if event == "reminder":
        return f"Reminder — {ask}"
    if event == "escalated":
        return f"Escalated — {ask}"
    if event == "decided":
        return f"{approval.get_status_display()}: {title}"
    if event == "expired":
        if is_undeliverable(approval):
            return f"Undeliverable, nobody could be reached: {title}"
        return f"Expired, nobody answered: {title}"
    return ask


def notification_body(approval: ApprovalRequest, event: str) -> str:
    """The one line under a notification's subject (a push notification's body): who asks and until
    when, or how it ended — never the arguments or summary, which a locked phone's screen would show."""
    if event in ("decided", "expired") or not approval.is_pending():
        return decision_line(approval)
    asker = visible(approval.caller) or "An agent"
    return f"{asker} asks · run {visible(approval.run_id)} · expires {when(approval.expires_at)}"


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


# The approver policy: quorum progress, who may still approve, run grant durations -----------

GRANT_DURATIONS = [(900, "15 minutes"), (3600, "1 hour"), (7200, "2 hours"), (14400, "4 hours"), (28800, "8 hours")]


def quorum_line(approval: ApprovalRequest) -> str:
    """'1 of 2 approvals — ana@acme.test' (the approving votes so far, oldest first)."""
    from .selectors import approving_votes

    votes = approving_votes(approval)
    required = approval.approvals_required
    line = f"{len(votes)} of {required} approval{'s' if required != 1 else ''}"
    names = ", ".join(vote["by"] or "a deleted user" for vote in votes)
    return f"{line} — {names}" if names else line


def still_may_approve_line(emails: list[str]) -> str:
    return ", ".join(emails) if emails else "nobody else — no reviewer is left who may approve"


# The Approvals tab's cards ----------------------------------------------------------------------
# The queue draws up to 100 cards on every htmx refresh. Django's template engine is slow at what a
# card template did per card (dotted lookups on a model, ~20 filters, three {% url %} reversals, a
# missing variable's exception path) made 100 cards CPU-bound (bench/tab_render.py). So each
# card's values are worked out here once, into a dict (the template engine's cheapest lookup), and
# _card.html only places them. Every string stays plain (not marked safe): the template escapes it.


class CardUrls:
    """The card's links, reversed once per page: each card fills in its ids (reverse() per card was ~30 %)."""

    MARKER = "cardmarker"
    NUMBER = 918273645  # the version's <int:number>: a marker reverse() accepts

    def __init__(self) -> None:
        from django.urls import reverse

        self.decide = reverse("approvals:decide", args=[self.MARKER]).split(self.MARKER)
        version = reverse("rules:version", args=[self.MARKER, self.NUMBER])
        self.version = version.replace(str(self.NUMBER), self.MARKER).split(self.MARKER)
        self.settings = reverse("rules:settings", args=[self.MARKER]).split(self.MARKER)

    @staticmethod
    def fill(parts: list[str], *values: object) -> str:
        out = parts[0]
        for value, rest in zip(values, parts[1:], strict=True):
            out += f"{value}{rest}"
        return out


def expires_in(expires_at: datetime) -> str:
    """The card's countdown, as the template filter `timeuntil` writes it ("23 hours, 59 minutes")."""
    from django.template.defaultfilters import timeuntil_filter

    return timeuntil_filter(expires_at)


def card(
    approval: ApprovalRequest, *, user, reviewers: list[str], urls: CardUrls | None = None, versions: dict | None = None
) -> dict:
    """Everything a pending request's card shows to `user`, worked out once (templates/approvals/_card.html)."""
    from django.template.defaultfilters import date as date_filter
    from django.utils.timezone import template_localtime

    from .always import always_suggestion
    from .permissions import refuses_self_approval
    from .selectors import may_still_approve

    urls = urls or CardUrls()
    config = approval.config
    token_cap = approval.is_token_cap
    # The facts every surface shows, worded once (facts()); the rest is the card's own layout.
    shown = {fact.key: fact.value for fact in facts(approval, urls=urls)}
    if approval.is_question:
        asked = ask_card(approval)
        return {
            **asked,
            "id": approval.public_id,
            "title": card_title(approval),
            "expires_iso": date_filter(template_localtime(approval.expires_at), "c"),
            "expires_when": shown["expires"],
            "expires_in": expires_in(approval.expires_at),
            "caller": shown["caller"],
            "config_id": config.public_id,
            "config_version": approval.config_version,
            "config_name": config.name,
            "version_url": urls.fill(urls.version, config.public_id, approval.config_version),
            "run_id": shown["run"],
            "thread_id": visible(approval.thread_id) if approval.thread_id else "",
            "requested_by": shown.get("requested_by", ""),
            "decide_url": urls.fill(urls.decide, approval.public_id),
        }
    self_refused = refuses_self_approval(approval=approval, user=user)
    quorum = approval.approvals_required > 1
    email = getattr(user, "email", "")
    voted = quorum and any(vote.reviewer_email == email for vote in approval.votes.all())
    return {
        "id": approval.public_id,
        "token_cap": token_cap,
        "title": card_title(approval),
        # As the template filters `date:'c'`, `when` and `timeuntil` wrote them.
        "expires_iso": date_filter(template_localtime(approval.expires_at), "c"),
        "expires_when": shown["expires"],
        "expires_in": expires_in(approval.expires_at),
        "message": shown.get("message", ""),
        "condition_error": shown.get("condition_error", ""),
        "caller": shown["caller"],
        "workspace_scope": approval.scope == "workspace",
        "target": shown.get("target", "—"),
        "operation": shown.get("operation", ""),
        "boundary": approval.get_boundary_display(),
        "point": approval.point,
        "point_words": point_words(approval.point),
        "config_id": config.public_id,
        "config_version": approval.config_version,
        "config_name": config.name,
        "version_url": urls.fill(urls.version, config.public_id, approval.config_version),
        "caps_url": urls.fill(urls.settings, config.public_id),
        "run_id": shown["run"],
        "thread_id": visible(approval.thread_id) if approval.thread_id else "",
        "requested_by": shown.get("requested_by", ""),
        "level": approval.pass_information_level,
        "level_hint": level_hint(approval.pass_information_level),
        "tokens_used": approval.tokens_used,
        "token_cap_value": approval.token_cap,
        "tokens_used_text": thousands(approval.tokens_used),
        "token_cap_text": thousands(approval.token_cap),
        "cap_percent": cap_percent(approval),
        "meter_percent": meter_percent(approval),
        "summary": shown.get("summary", ""),
        "arguments": shown.get("arguments"),
        "approvals_required": approval.approvals_required,
        "quorum_line": quorum_line(approval) if quorum else "",
        "still_may_approve": (
            still_may_approve_line(may_still_approve(approval=approval, reviewers=reviewers)) if quorum else ""
        ),
        "self_refused": self_refused,
        "voted": voted,
        "decide_url": urls.fill(urls.decide, approval.public_id),
        "grant": approval.allow_run_grant and not self_refused and not token_cap,
        # "Approve always": the condition the box starts with (approvals/always.py).
        "always": ""
        if token_cap or self_refused or (quorum and voted)
        else always_suggestion(approval, versions=versions),
        "edit": None if self_refused else edit_box(approval),
        "durations": GRANT_DURATIONS,
        "passkey": "step_up" in shown,
    }


def question_form(approval: ApprovalRequest) -> list[dict]:
    """A question's form fields (templates/approvals/_ask_card.html): one per question, named by position.

    Fields are named `answer-<n>` (and `answer-<n>-own` for words of one's own), never by the engine's
    id, so no id can clash with another field; approvals.questions.answers_from_form reads them back.
    """
    fields = []
    for index, question in enumerate(approval.questions or []):
        name = f"answer-{index}"
        field = {
            "name": name,
            "html_id": f"{approval.public_id}-q{index}",
            "prompt": visible(question["prompt"]),
            "type": question["type"],
            "required": question["required"],
            "multi": question.get("multi", False),
            "free_text": question.get("free_text", False),
            "min": question.get("min"),
            "max": question.get("max"),
        }
        if question["type"] == "choice":
            field["options"] = [
                {
                    "key": number + 1 if number < 9 else "",
                    "value": option["value"],
                    "label": visible(option_label(option)),
                    "description": visible(option.get("description") or ""),
                    "recommended": question.get("recommended") == number,
                    "html_id": f"{approval.public_id}-q{index}-o{number}",
                }
                for number, option in enumerate(question["options"])
            ]
        if question["type"] == "boolean":
            field["options"] = [
                {
                    "key": 1,
                    "value": "true",
                    "label": "Yes",
                    "description": "",
                    "recommended": False,
                    "html_id": f"{approval.public_id}-q{index}-yes",
                },
                {
                    "key": 2,
                    "value": "false",
                    "label": "No",
                    "description": "",
                    "recommended": False,
                    "html_id": f"{approval.public_id}-q{index}-no",
                },
            ]
        fields.append(field)
    return fields


def ask_card(approval: ApprovalRequest) -> dict:
    """A question's or a plan's part of its card: the form's fields, or the plan as safe HTML."""
    from .markdown import plan_html

    is_plan = approval.kind == ApprovalKind.PLAN
    return {
        "asks": True,
        "is_plan": is_plan,
        "plan_html": plan_html(approval.plan) if is_plan else "",
        "questions": [] if is_plan else question_form(approval),
    }


def cards(approvals: list[ApprovalRequest], *, user, reviewers: list[str]) -> list[dict]:
    from .versions import frozen_versions

    urls = CardUrls()
    # Their frozen rules' conditions ("Approve always"), every version read in at most one query.
    versions = frozen_versions.many({(approval.config_id, approval.config_version) for approval in approvals})
    return [card(approval, user=user, reviewers=reviewers, urls=urls, versions=versions) for approval in approvals]


# Approve with edits: the card's editor, its live check, and what a decided request shows ----------
# The rules are approvals/edits.py's; here only how they read. The editor's text is the proposal's pretty
# JSON made visible: an escape `visible()` writes inside a JSON string (`\u202e`) reads back as the same
# character, so the text in the box is still exactly the proposal.


def edit_box(approval: ApprovalRequest) -> dict | None:
    """The card's arguments editor, or None where the rule does not allow edits."""
    if not edits.may_edit(approval):
        return None
    proposed = pretty_json(approval.arguments)
    return {
        "proposed": proposed,
        "rows": min(20, max(4, proposed.count("\n") + 2)),
        "check_url": reverse("approvals:edit-check", args=[approval.public_id]),
        "check": edit_check(approval, proposed),
        "has_schema": approval.arguments_schema is not None,
    }


def edit_check(approval: ApprovalRequest, text: str) -> dict:
    """What the editor says of `text` as the reviewer types: each schema error by path, or the diff to approve."""
    try:
        edited = edits.parse_edited(text)
    except edits.EditedArgumentsInvalid as invalid:
        return {"errors": list(invalid.fields.items()), "diff": [], "edited": False}
    errors = edits.schema_errors(approval, edited)
    if errors:
        shown = list(errors.items())[: edits.ERRORS_SHOWN]
        return {"errors": [(path, visible(message)) for path, message in shown], "diff": [], "edited": False}
    return {
        "errors": [],
        "diff": _diff_lines(approval.arguments, edited),
        "edited": edits.digest_of(approval, edited) != approval.call_digest,
    }


def _diff_lines(proposed: object, approved: object) -> list[tuple[str, str]]:
    return [(kind, visible(line)) for kind, line in edits.edit_diff(proposed, approved)]


def edit_summary(approval: ApprovalRequest) -> dict | None:
    """A decided request's edit (the diff proposed → approved, both digests), or None when it was not edited."""
    if not edits.was_edited(approval):
        return None
    return {
        "diff": _diff_lines(approval.arguments, edits.decision_arguments(approval)),
        "proposed_digest": approval.call_digest,
        "approved_digest": edits.decision_digest(approval),
    }


def execution_report(approval: ApprovalRequest) -> dict | None:
    """What the engine reported running, for the request's page: the outcome line (executed or failed, its
    execution id), its detail and when; None while nothing was reported."""
    if not approval.execution_status:
        return None
    return {
        "status": approval.execution_status,
        "line": outcome_line(approval),
        "detail": visible_lines(approval.execution_detail) if approval.execution_detail else "",
        "at": when(approval.executed_at) if approval.executed_at else "",
    }


def mismatch_warning(approval: ApprovalRequest) -> str:
    """The warning shown wherever a request is shown when its engine reported running another call."""
    return edits.mismatch_warning(approval)


def edit_in_portal_url(approval: ApprovalRequest) -> str:
    """Where a channel that cannot edit (Slack, email) sends a reviewer to approve with edits ("" where none)."""
    if not (edits.may_edit(approval) and approval.is_pending()):
        return ""
    return f"{review_url(approval)}#edit-{approval.public_id}"


def edited_line(approval: ApprovalRequest) -> str:
    return "Approved with edits" if edits.was_edited(approval) else ""
