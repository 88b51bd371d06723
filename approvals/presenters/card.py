"""The Approvals tab's cards: everything a pending request's card shows, worked out once per card.

The queue draws up to 100 cards on every htmx refresh. Django's template engine is slow at what a
card template did per card (dotted lookups on a model, ~20 filters, three {% url %} reversals, a
missing variable's exception path) made 100 cards CPU-bound (bench/tab_render.py). So each
card's values are worked out here once, into a dict (the template engine's cheapest lookup), and
_card.html only places them. Every string stays plain (not marked safe): the template escapes it.
"""

from datetime import datetime

from django.template.defaultfilters import date as date_filter
from django.template.defaultfilters import timeuntil_filter
from django.urls import reverse
from django.utils.timezone import template_localtime

from approvals.edits import checks as edits
from approvals.models import ApprovalKind, ApprovalRequest
from approvals.presenters.facts import (
    card_title,
    facts,
    level_hint,
    point_words,
    quorum_line,
    still_may_approve_line,
)
from approvals.presenters.page import diff_lines
from approvals.presenters.text import pretty_json, thousands, visible
from approvals.questions.markdown import plan_html
from approvals.questions.validate import option_label
from approvals.review.always import always_suggestion
from approvals.review.permissions import refuses_self_approval
from approvals.review.selectors import may_still_approve
from rules.versions import frozen_versions

GRANT_DURATIONS = [(900, "15 minutes"), (3600, "1 hour"), (7200, "2 hours"), (14400, "4 hours"), (28800, "8 hours")]


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


class CardUrls:
    """The card's links, reversed once per page: each card fills in its ids (reverse() per card was ~30 %)."""

    MARKER = "cardmarker"
    NUMBER = 918273645  # the version's <int:number>: a marker reverse() accepts

    def __init__(self) -> None:
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
    return timeuntil_filter(expires_at)


def card(
    approval: ApprovalRequest, *, user, reviewers: list[str], urls: CardUrls | None = None, versions: dict | None = None
) -> dict:
    """Everything a pending request's card shows to `user`, worked out once (templates/approvals/_card.html)."""
    # Long: one dict per card, a key for each value templates/approvals/_card.html places.
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
        # "Approve always": the condition the box starts with (approvals/review/always.py).
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
    id, so no id can clash with another field; approvals.questions.validate.answers_from_form reads them back.
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
    is_plan = approval.kind == ApprovalKind.PLAN
    return {
        "asks": True,
        "is_plan": is_plan,
        "plan_html": plan_html(approval.plan) if is_plan else "",
        "questions": [] if is_plan else question_form(approval),
    }


def cards(approvals: list[ApprovalRequest], *, user, reviewers: list[str]) -> list[dict]:
    urls = CardUrls()
    # Their frozen rules' conditions ("Approve always"), every version read in at most one query.
    versions = frozen_versions.many({(approval.config_id, approval.config_version) for approval in approvals})
    return [card(approval, user=user, reviewers=reviewers, urls=urls, versions=versions) for approval in approvals]


# Approve with edits: the card's editor, its live check, and what a decided request shows ----------
# The rules are approvals/edits/checks.py's; here only how they read. The editor's text is the proposal's pretty
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
        "diff": diff_lines(approval.arguments, edited),
        "edited": edits.digest_of(approval, edited) != approval.call_digest,
    }
