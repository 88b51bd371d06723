"""What the sync and asyncio clients share: the contract's pure parts (docs/api.md, "Engines"), no I/O.

Both clients are thin drivers over these functions, so a gated call means the same thing whichever
one an engine uses: the same idempotency key, the same trimmed body, the same verdict wording.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import random
from dataclasses import dataclass, field
from typing import Any

ANY = "*"
LONG_POLL_SECONDS = 30.0  # the portal's maximum `wait`
INERT_NOTICE = "HITL: inert (Free plan or no enabled rules) — the call may proceed"
# Statuses worth asking again for: the portal restarting, a proxy in between, or too many waits on one key.
RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class HitlError(Exception):
    """The portal refused a call (4xx) or could not be reached; `code` is docs/api.md's error code."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str = "",
        fields: dict | None = None,
        retry_after: float | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.fields = fields or {}
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Unreachable, or a status that says "later": asking again with the same key is safe."""
        return self.status is None or self.status in RETRYABLE_STATUSES


class DigestMismatch(HitlError):
    """What the portal approved is not the call about to run: never run it."""


@dataclass
class Verdict:
    """What the engine does with a gated call, and what it tells the agent."""

    allowed: bool
    # Runs: not_gated · inert · allowed (a rule's condition or shadow mode let it through) · approved.
    # Never runs: rejected · withdrawn · expired · undeliverable · timeout · digest_mismatch · edit_to_retry ·
    # already_executed · in_doubt · receipt_refused · unknown (a status this client does not know).
    state: str
    message: str
    approval: dict | None = None
    result: Any = None
    error: BaseException | None = field(default=None, repr=False)
    # What to run once allowed: the call's own arguments, or the reviewer's edit of them (`edited`).
    arguments: Any = None
    edited: bool = False
    call_digest: str | None = None  # the digest of what runs, reported with the outcome

    @property
    def reason(self) -> str:
        """The reviewer's own words (or the expiry's), for a framework that takes a rejection message."""
        decision = (self.approval or {}).get("decision") or {}
        return decision.get("reason") or ""


@dataclass(frozen=True)
class GatedCall:
    """One call an agent wants to make, as the portal sees it."""

    kind: str  # delete · mcp_server · cell · worker
    target: str
    operation: str
    run_id: str
    thread_id: str
    call_id: str
    caller: str
    point: str = "entry"
    summary: str | None = None
    arguments: Any = None
    # A JSON Schema of the arguments: a reviewer's edit (where the rule allows edits) is checked against it.
    arguments_schema: dict | None = None
    # The email of the person the run acts for: four eyes keeps them from approving their own request.
    requested_by: str | None = None

    @property
    def idempotency_key(self) -> str:
        return idempotency_key(run_id=self.run_id, thread_id=self.thread_id, call_id=self.call_id)


def idempotency_key(*, run_id: str, thread_id: str, call_id: str) -> str:
    """The same call of the same run asks once, even if the engine restarts and asks again."""
    raw = json.dumps([run_id, thread_id, call_id], separators=(",", ":"), ensure_ascii=False)
    return "hitl-" + hashlib.sha256(raw.encode()).hexdigest()


def call_digest(*, target: str, operation: str, arguments: Any) -> str:
    """docs/api.md's call_digest, computed on the engine's side of the wire."""
    canonical = json.dumps(
        {"target": target, "operation": operation, "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# What a rule's `match` is compared with, per kind (docs/api.md, "Engines"). The portal serves it on
# every gate as `match_field`, and its registration check applies the same table: a gate served
# without one (an older portal) falls back to this copy of it.
MATCH_FIELDS = {"delete": "operation", "mcp_server": "target", "cell": "target", "worker": "target"}


def match_field(gate: dict) -> str:
    """`operation` or `target`: the field of a call this gate's `match` names."""
    field = gate.get("match_field") or MATCH_FIELDS.get(gate.get("kind", ""), "target")
    return field if field in ("operation", "target") else "target"


def gate_matches(gate: dict, *, target: str, operation: str) -> bool:
    """`*`, or the call's field the gate names (its operation for a delete rule, else its target)."""
    value = operation if match_field(gate) == "operation" else target
    return gate.get("match") in (ANY, value)


def find_gate(served: dict, *, kind: str, target: str, operation: str = "", point: str = "entry") -> dict | None:
    """The first gate (in order) that matches this call: its kind, its point, and `*` or the call's field
    its `match_field` names — the operation for `delete` (drop_table), the target for the other kinds (for
    `mcp_server` the server id: a rule gates a whole server, never one tool)."""
    if served.get("hitl", {}).get("state") != "active":
        return None
    return _first_gate(served, kind=kind, target=target, operation=operation, point=point)


def would_gate(served: dict, *, kind: str, target: str, operation: str = "", point: str = "entry") -> bool:
    """Would a rule gate this call if HITL were active? (Inert configs still say so in the log.)"""
    return _first_gate(served, kind=kind, target=target, operation=operation, point=point) is not None


def _first_gate(served: dict, *, kind: str, target: str, operation: str, point: str) -> dict | None:
    for gate in sorted(served.get("gates", []), key=lambda g: g.get("order", 10)):
        if not gate.get("enabled", True) or gate["kind"] != kind or gate["point"] != point:
            continue
        if gate_matches(gate, target=target, operation=operation):
            return gate
    return None


def gate_of(served: dict, call: GatedCall) -> dict | None:
    return find_gate(served, kind=call.kind, target=call.target, operation=call.operation, point=call.point)


def passed_arguments(served: dict, arguments: Any) -> Any:
    """What of the arguments the version's level lets the engine pass (and so what the digest covers)."""
    return arguments if served.get("pass_information_level", "none") == "full" else None


def gate_body(served: dict, gate: dict, call: GatedCall, *, ttl_seconds: int | None = None) -> dict:
    """The registration body; only what the config's level allows — the portal refuses more, by design."""
    body: dict[str, Any] = {
        "kind": "gate",
        "config_id": served["config_id"],
        "config_version": served["version"],
        "rule_id": gate["id"],
        "run_id": call.run_id,
        "thread_id": call.thread_id,
        "caller": call.caller,
        "target": call.target,
        "operation": call.operation,
    }
    level = served.get("pass_information_level", "none")
    if call.requested_by:
        body["requested_by"] = call.requested_by[:254]
    if call.summary and level in ("summary", "full"):
        body["summary"] = call.summary[:2000]
    arguments = passed_arguments(served, call.arguments)
    if arguments is not None:
        body["arguments"] = arguments
        if call.arguments_schema is not None:  # it describes the arguments: sent only beside them
            body["arguments_schema"] = call.arguments_schema
    if ttl_seconds is not None:
        body["ttl_seconds"] = ttl_seconds
    return body


def approved_arguments(approval: dict, call: GatedCall) -> tuple[Any, bool]:
    """What to run, and whether a reviewer edited it: `decision.arguments` when edited, else the call's own.

    Unedited, the engine runs its own arguments (below level `full` the portal never saw them); the digest
    check then proves they are the ones proposed.
    """
    decision = approval.get("decision") or {}
    if decision.get("edited"):
        return decision.get("arguments"), True
    return call.arguments, False


def approved_digest(approval: dict) -> str | None:
    """The digest of what was approved: `decision.call_digest`, or the proposal's where the portal gives none."""
    decision = approval.get("decision") or {}
    return decision.get("call_digest") or approval.get("call_digest")


def running_digest(served: dict, call: GatedCall, arguments: Any) -> str:
    """The digest of the call as it will run, over what the level let the engine pass."""
    return call_digest(target=call.target, operation=call.operation, arguments=passed_arguments(served, arguments))


def digest_matches(served: dict, approval: dict, call: GatedCall) -> bool:
    """Is what we are about to run exactly what was approved (as far as the level let us tell the portal)?"""
    arguments, _ = approved_arguments(approval, call)
    return approved_digest(approval) == running_digest(served, call, arguments)


def settle(served: dict, approval: dict, call: GatedCall) -> Verdict:
    """The verdict on a decided (or still pending) request for this call, with what to run when approved.

    An approval whose digest is not the digest of what would run (the call changed, or an edit that does
    not add up) is never run.
    """
    verdict = verdict_of(approval)
    if not verdict.allowed:
        return verdict
    if not digest_matches(served, approval, call):
        return digest_mismatch(approval)
    verdict.arguments, verdict.edited = approved_arguments(approval, call)
    verdict.call_digest = running_digest(served, call, verdict.arguments)
    return verdict


def takes_arguments(execute: Any) -> bool:
    """Does `execute` take the arguments to run (one positional parameter), or nothing?"""
    try:
        parameters = inspect.signature(execute).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: called as it was before edits existed
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(p.kind in positional or p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)


def edit_to_retry(verdict: Verdict) -> Verdict:
    """An approval with edits that this engine cannot run as edited: nothing runs, and the agent learns
    exactly what was approved so it can make that call instead."""
    decision = (verdict.approval or {}).get("decision") or {}
    who = decision.get("decided_by") or "A reviewer"
    return Verdict(
        False,
        "edit_to_retry",
        f"{who} approved this call only with edited arguments, so the call as proposed was not run. "
        f"Make the call again with exactly these arguments: {canonical_json(verdict.arguments)}",
        verdict.approval,
        arguments=verdict.arguments,
        edited=True,
        call_digest=verdict.call_digest,
    )


def canonical_json(value: Any) -> str:
    """JSON as a person or a model reads it back: compact, keys sorted, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), ensure_ascii=False)


def not_asked(served: dict, call: GatedCall) -> Verdict | None:
    """The verdict for a call the portal is not asked about (no gate, or inert), else None."""
    if gate_of(served, call) is not None:
        return None
    if would_gate(served, kind=call.kind, target=call.target, operation=call.operation, point=call.point):
        return Verdict(True, "inert", INERT_NOTICE, arguments=call.arguments)
    return Verdict(True, "not_gated", "No rule gates this call.", arguments=call.arguments)


def digest_mismatch(approval: dict) -> Verdict:
    return Verdict(
        False,
        "digest_mismatch",
        "The approved call differs from the one about to run, so it was not run. Ask again for this call.",
        approval,
    )


def registered(approval: dict, call: GatedCall) -> Verdict | None:
    """The verdict for a registration the portal answered without storing a request, else None.

    `inert` (nobody can be asked on this plan) and `allowed` (the rule's condition does not hold for this
    call, or the rule is in shadow mode: counted, never paused) both let the call run, and say why.
    """
    status = approval.get("status")
    if status == "inert":
        return Verdict(True, "inert", approval.get("notice") or INERT_NOTICE, arguments=call.arguments)
    if status == "allowed":
        notice = approval.get("notice") or (
            "HITL: allowed — the rule is in shadow mode: the call is counted, never paused; it may proceed"
            if approval.get("shadow")
            else "HITL: allowed — the rule's condition does not hold for this call; it may proceed"
        )
        return Verdict(True, "allowed", notice, approval, arguments=call.arguments)
    return None


def withdrawn_message(decision: dict, what: str) -> str:
    """The words for a request its requester (or its engine) took back: the work stops, nobody refused it."""
    reason = (decision.get("reason") or "").rstrip(". ")
    words = f": {reason}" if reason else ""
    return f"This request was withdrawn by the requester{words}, so {what}. Stop this work; do not retry it."


def deciders_words(decision: dict, nobody: str) -> str:
    """Who decided, and — a delegate's decision — for whom: "bob@… on behalf of alice@…"."""
    who = decision.get("decided_by") or nobody
    return f"{who} on behalf of {decision['on_behalf_of']}" if decision.get("on_behalf_of") else who


def verdict_of(approval: dict) -> Verdict:
    """Turn a request into what the agent is told. Expired is not rejected: nobody refused."""
    status = approval["status"]
    decision = approval.get("decision") or {}
    if status == "approved":
        note = f" ({decision['reason']})" if decision.get("reason") else ""
        who = deciders_words(decision, "a reviewer")
        if decision.get("edited"):
            edit = f" with edited arguments: {canonical_json(decision.get('arguments'))} (that is what runs)"
            return Verdict(True, "approved", f"Approved by {who}{note}{edit}.", approval)
        return Verdict(True, "approved", f"Approved by {who}{note}.", approval)
    if status == "expired" and decision.get("undeliverable"):
        return Verdict(
            False,
            "undeliverable",
            "Nobody could be reached about this approval request (no notification was delivered and nobody "
            "opened it), so the call was not run. No person refused it, and waiting will not help: tell the "
            "user their approvers could not be reached, and do not retry it until they say so.",
            approval,
        )
    if status == "expired":
        return Verdict(
            False,
            "expired",
            "Nobody answered the approval request before its deadline, so the call was not run. No person "
            "refused it: continue with your best assumption, say so, and ask again later only if it still "
            "blocks the work.",
            approval,
        )
    if status == "rejected":
        reason = (decision.get("reason") or "no reason given").rstrip(". ")
        who = deciders_words(decision, "A reviewer")
        return Verdict(False, "rejected", f"{who} rejected this call: {reason}. Do not retry it.", approval)
    if status == "withdrawn":
        return Verdict(False, "withdrawn", withdrawn_message(decision, "the call was not run"), approval)
    if status == "pending":
        return Verdict(
            False,
            "timeout",
            "Still waiting for a person's decision; the call was not run. It stays in the queue until it expires.",
            approval,
        )
    return Verdict(
        False,
        "unknown",
        f"The approval portal answered {status!r}, which this client does not know, so the call was not run. "
        "Do not retry it; tell a person.",
        approval,
    )


def outcome_body(
    *, status: str, execution_id: str | None = None, detail: str | None = None, call_digest: str | None = None
) -> dict:
    body: dict[str, Any] = {"status": status}
    if execution_id:
        body["execution_id"] = execution_id[:255]
    if detail:
        body["detail"] = detail[:2000]
    if call_digest:  # what ran: the portal records a digest that is not the approved one
        body["call_digest"] = call_digest
    return body


def outcome_of(verdict: Verdict) -> dict:
    """The outcome body for a call that ran (`verdict.result`) or raised (`verdict.error`)."""
    if verdict.state == "edit_to_retry":
        detail = "Approved with edits this engine could not run as edited: nothing ran; the agent was told the edit."
        return outcome_body(status="failed", detail=detail)
    if verdict.error is None:
        execution_id = verdict.result if isinstance(verdict.result, str) else None
        return outcome_body(status="executed", execution_id=execution_id, call_digest=verdict.call_digest)
    return outcome_body(
        status="failed", detail=f"{type(verdict.error).__name__}: {verdict.error}", call_digest=verdict.call_digest
    )


def reportable(verdict: Verdict) -> bool:
    """An approved request whose outcome is not reported yet (what ran, failed, or could not run as edited);
    `started` is not an outcome, only the promise of one."""
    approved = verdict.state == "approved" or verdict.state == "edit_to_retry"
    if not approved or verdict.approval is None:
        return False
    return (verdict.approval.get("execution") or {}).get("status") in (None, "started")


def startable(verdict: Verdict) -> bool:
    """An approved request about to run: its `started` is recorded first (run once, docs/receipts.md)."""
    return verdict.allowed and verdict.state == "approved" and verdict.approval is not None


def started(verdict: Verdict, answer: dict) -> Verdict:
    """The verdict once the portal answered `started`: run only if this engine recorded it first.

    `already_reported` means another process (or this engine before a restart) started or finished the
    call already: it is not run again.
    """
    if answer.get("already_reported"):
        if (answer.get("execution") or {}).get("status") == "started":
            return in_doubt(answer)
        return already_executed(answer)
    verdict.approval = answer
    return verdict


def already_executed(approval: dict) -> Verdict:
    """The request was approved and its outcome reported already: return that, never run it twice."""
    execution = approval.get("execution") or {}
    how = execution.get("status") or "executed"
    when = f" at {execution['reported_at']}" if execution.get("reported_at") else ""
    message = (
        f"This call was already executed: it was approved and reported {how}{when} ({approval['id']}), "
        "so it was not run again. Use its earlier result; do not retry it."
    )
    return Verdict(False, "already_executed", message, approval, result=execution)


def in_doubt(approval: dict) -> Verdict:
    """The request was approved and started, and no outcome ever followed: it may have run. Never again."""
    execution = approval.get("execution") or {}
    when = f" at {execution['reported_at']}" if execution.get("reported_at") else ""
    message = (
        f"This call was approved and started{when} ({approval['id']}), but no outcome was ever reported, so "
        "nobody knows whether it ran. It was not run again. Do not retry it: tell the user its outcome is "
        "unknown; a reviewer can record on the request's page what happened."
    )
    return Verdict(False, "in_doubt", message, approval, result=execution)


class Backoff:
    """Exponential backoff with full jitter between reconnects; a 429's Retry-After wins."""

    def __init__(self, *, first: float = 0.25, cap: float = 15.0):
        self.first = first
        self.cap = cap
        self.attempt = 0

    def next_delay(self, error: HitlError) -> float:
        self.attempt += 1
        if error.retry_after is not None:
            return min(error.retry_after, self.cap)
        ceiling = min(self.cap, self.first * 2 ** (self.attempt - 1))
        return ceiling / 2 + random.random() * ceiling / 2

    def reset(self) -> None:
        self.attempt = 0


def error_from_response(status: int, raw: bytes, headers: dict[str, str]) -> HitlError:
    """A 4xx/5xx answer as a HitlError carrying docs/api.md's error code and the fields to fix."""
    try:
        detail = json.loads(raw or b"{}").get("error", {})
    except (ValueError, AttributeError):
        detail = {}
    if not isinstance(detail, dict):
        detail = {}
    retry_after = headers.get("retry-after")
    try:
        retry_seconds = float(retry_after) if retry_after else None
    except ValueError:
        retry_seconds = None
    return HitlError(
        detail.get("message") or f"HTTP {status} from the portal",
        status=status,
        code=detail.get("code", ""),
        fields=detail.get("fields"),
        retry_after=retry_seconds,
    )
