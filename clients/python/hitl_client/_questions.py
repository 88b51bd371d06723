"""Questions and plans, the pure parts (docs/api.md, "Questions and plans"): bodies and what the agent is told.

A run asks people instead of being gated: one to eight questions (`ask`), or a Markdown plan to approve
or send back (`review_plan`). Both clients register and wait through these functions, so an answer, a
decline and an expiry read the same whichever client an engine uses — and are never confused: an
expired question is "nobody answered", never the recommended option, never a decline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._core import canonical_json, withdrawn_message

QUESTION_TYPES = ("choice", "text", "number", "boolean")
MAX_QUESTIONS = 8
MAX_TITLE = 200
MAX_PLAN = 20_000
QUESTIONS_INERT_NOTICE = (
    "HITL: inert (Free plan or no enabled rules) — nobody can answer; go on with your best assumption"
)


@dataclass
class Answers:
    """What people answered a run's questions, or why nobody did: `state` tells which.

    answered · declined (a person chose not to answer; `reason` holds their words) · expired (nobody
    answered before the deadline) · halted (a person halted the run: stop; `reason` says why) · withdrawn
    (the requester took it back: stop) · timeout
    (still waiting; asking again waits on the same request) · inert (nobody can answer on this plan).
    `answers["env"]` reads one answer; `message` is for the agent.
    """

    state: str
    message: str
    values: dict
    approval: dict | None = None

    @property
    def answered(self) -> bool:
        return self.state == "answered"

    @property
    def declined(self) -> bool:
        return self.state == "declined"

    @property
    def expired(self) -> bool:
        return self.state == "expired"

    @property
    def halted(self) -> bool:
        return self.state == "halted"

    @property
    def reason(self) -> str:
        """The decliner's words (or the expiry's, or the halt's), empty when answered."""
        decision = (self.approval or {}).get("decision") or {}
        return "" if self.answered else decision.get("reason") or ""

    @property
    def answered_by(self) -> str | None:
        return ((self.approval or {}).get("decision") or {}).get("decided_by")

    def __getitem__(self, question_id: str) -> Any:
        return self.values[question_id]

    def __contains__(self, question_id: object) -> bool:
        return question_id in self.values

    def get(self, question_id: str, default: Any = None) -> Any:
        return self.values.get(question_id, default)


@dataclass
class PlanReview:
    """A person's word on a plan: approved, or changes asked (`feedback` holds what to change).

    approved · changes_requested · expired (nobody reviewed it) · halted (a person halted the run: stop,
    do not revise) · withdrawn (the requester took it back: stop) · timeout (still waiting) · inert (nobody
    can review on this plan; go on). `approved` is True for approved and inert, as a gate's `allowed` is.
    """

    state: str
    message: str
    approval: dict | None = None

    @property
    def approved(self) -> bool:
        return self.state in ("approved", "inert")

    @property
    def changes_requested(self) -> bool:
        return self.state == "changes_requested"

    @property
    def halted(self) -> bool:
        return self.state == "halted"

    @property
    def feedback(self) -> str:
        """The reviewer's words: what to change (or the note they approved with)."""
        if self.state not in ("approved", "changes_requested"):
            return ""
        return ((self.approval or {}).get("decision") or {}).get("reason") or ""

    @property
    def reviewed_by(self) -> str | None:
        return ((self.approval or {}).get("decision") or {}).get("decided_by")


def questions_active(served: dict) -> bool:
    """Can anyone answer a question on this served version? (`served.questions`, else HITL's state.)"""
    if served.get("hitl", {}).get("state") != "active":
        return False
    return served.get("questions", True) is not False


def _base_body(served: dict, kind: str, *, title: str, run_id: str, thread_id: str, caller: str) -> dict:
    return {
        "kind": kind,
        "config_id": served["config_id"],
        "config_version": served["version"],
        "run_id": run_id,
        "thread_id": thread_id,
        "caller": caller,
        "title": title[:MAX_TITLE],
    }


def _optional(body: dict, *, ttl_seconds: int | None, requested_by: str | None) -> dict:
    if ttl_seconds is not None:
        body["ttl_seconds"] = ttl_seconds
    if requested_by:
        body["requested_by"] = requested_by
    return body


def as_questions(questions: dict | list[dict]) -> list[dict]:
    """One question or a list of them, as the contract's list (the portal checks each one)."""
    listed = [questions] if isinstance(questions, dict) else list(questions)
    if not 1 <= len(listed) <= MAX_QUESTIONS:
        raise ValueError(f"Ask 1 to {MAX_QUESTIONS} questions at once, not {len(listed)}.")
    return listed


def default_title(questions: list[dict]) -> str:
    prompt = str(questions[0].get("prompt") or questions[0].get("id") or "A question")
    return prompt if len(prompt) <= MAX_TITLE else prompt[: MAX_TITLE - 1] + "…"


def question_body(
    served: dict,
    questions: list[dict],
    *,
    title: str,
    run_id: str,
    thread_id: str,
    caller: str,
    ttl_seconds: int | None = None,
    requested_by: str | None = None,
) -> dict:
    body = _base_body(served, "question", title=title, run_id=run_id, thread_id=thread_id, caller=caller)
    body["questions"] = questions
    return _optional(body, ttl_seconds=ttl_seconds, requested_by=requested_by)


def plan_body(
    served: dict,
    plan: str,
    *,
    title: str,
    run_id: str,
    thread_id: str,
    caller: str,
    ttl_seconds: int | None = None,
    requested_by: str | None = None,
) -> dict:
    if len(plan) > MAX_PLAN:  # refused whole rather than cut: a truncated plan is not the plan
        raise ValueError(f"A plan is at most {MAX_PLAN:,} characters; this one has {len(plan):,}.")
    body = _base_body(served, "plan", title=title, run_id=run_id, thread_id=thread_id, caller=caller)
    body["plan"] = plan
    return _optional(body, ttl_seconds=ttl_seconds, requested_by=requested_by)


def inert_answers(notice: str = QUESTIONS_INERT_NOTICE) -> Answers:
    return Answers("inert", notice, {})


def inert_review(notice: str = QUESTIONS_INERT_NOTICE) -> PlanReview:
    return PlanReview("inert", notice)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_shown(item) for item in value) or "(none)"
    if isinstance(value, str):
        return value
    return canonical_json(value)


def halted(approval: dict) -> bool:
    """Rejected by a halt of the run (or a freeze of the workspace): `decision.action` is `halt`.

    A question is never rejected otherwise (a person declines it), and a plan sent back is `revise`.
    """
    decision = approval.get("decision") or {}
    return approval.get("status") == "rejected" and decision.get("action") == "halt"


def halted_message(approval: dict, what: str) -> str:
    decision = approval.get("decision") or {}
    who = decision.get("decided_by") or "A person"
    reason = (decision.get("reason") or "no reason given").rstrip(". ")
    return (
        f"{who} halted this run: {reason}. Nobody will answer {what}. Stop the run now: do not act, do not "
        "retry, and do not ask again."
    )


def answers_of(approval: dict, questions: list[dict] | None = None) -> Answers:
    """Turn a question request into what the engine reads and the agent is told."""
    status = approval.get("status")
    decision = approval.get("decision") or {}
    asked = approval.get("questions") or questions or []
    if status == "answered":
        values = decision.get("answers") or {}
        who = decision.get("decided_by") or "A person"
        prompts = {q.get("id"): q.get("prompt") or q.get("id") for q in asked if isinstance(q, dict)}
        order = [qid for qid in prompts if qid in values] + [qid for qid in values if qid not in prompts]
        lines = [f"- {prompts.get(qid, qid)} ({qid}): {_shown(values[qid])}" for qid in order]
        skipped = [f"- {prompt} ({qid}): no answer" for qid, prompt in prompts.items() if qid not in values]
        return Answers("answered", "\n".join([f"{who} answered:", *lines, *skipped]), dict(values), approval)
    if status == "declined":
        who = decision.get("decided_by") or "A person"
        reason = (decision.get("reason") or "").rstrip(". ")
        words = f": {reason}" if reason else " (no reason given)"
        return Answers(
            "declined",
            f"{who} declined to answer{words}. Go on without these answers and do not ask the same again.",
            {},
            approval,
        )
    if halted(approval):
        return Answers("halted", halted_message(approval, "these questions"), {}, approval)
    if status == "withdrawn":
        return Answers("withdrawn", withdrawn_message(decision, "nobody will answer it"), {}, approval)
    if status == "expired":
        return Answers(
            "expired",
            "Nobody answered before the question's deadline, and no answer was chosen for anyone. Continue "
            "with your best assumption and say which one you made.",
            {},
            approval,
        )
    return Answers(
        "timeout",
        "Still waiting for a person's answer; the question stays open until it expires.",
        {},
        approval,
    )


def review_of(approval: dict) -> PlanReview:
    """Turn a plan request into what the engine reads and the agent is told."""
    status = approval.get("status")
    decision = approval.get("decision") or {}
    who = decision.get("decided_by") or "A reviewer"
    if status == "approved":
        note = f" ({decision['reason']})" if decision.get("reason") else ""
        return PlanReview("approved", f"{who} approved the plan{note}. Go ahead with it.", approval)
    if halted(approval):
        return PlanReview("halted", halted_message(approval, "this plan"), approval)
    if status == "withdrawn":
        return PlanReview("withdrawn", withdrawn_message(decision, "nobody will review the plan"), approval)
    if status == "rejected":
        reason = (decision.get("reason") or "no reason given").rstrip(". ")
        return PlanReview(
            "changes_requested",
            f"{who} asked for changes to the plan: {reason}. Revise the plan and show it again before acting on it.",
            approval,
        )
    if status == "expired":
        return PlanReview(
            "expired",
            "Nobody reviewed the plan before its deadline, so it is not approved — and no person asked for "
            "changes either. Do not act on it unreviewed; show it again later, or ask how to go on.",
            approval,
        )
    return PlanReview(
        "timeout", "Still waiting for a person to review the plan; it stays open until it expires.", approval
    )
