"""What the sync and asyncio clients share: the contract's pure parts (API.md, "Engines"), no I/O.

Both clients are thin drivers over these functions, so a gated call means the same thing whichever
one an engine uses: the same idempotency key, the same trimmed body, the same verdict wording.
"""

from __future__ import annotations

import hashlib
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
    """The portal refused a call (4xx) or could not be reached; `code` is API.md's error code."""

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
    # not_gated · inert · approved · rejected · expired · timeout · digest_mismatch
    state: str
    message: str
    approval: dict | None = None
    result: Any = None
    error: BaseException | None = field(default=None, repr=False)

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

    @property
    def idempotency_key(self) -> str:
        return idempotency_key(run_id=self.run_id, thread_id=self.thread_id, call_id=self.call_id)


def idempotency_key(*, run_id: str, thread_id: str, call_id: str) -> str:
    """The same call of the same run asks once, even if the engine restarts and asks again."""
    raw = json.dumps([run_id, thread_id, call_id], separators=(",", ":"), ensure_ascii=False)
    return "hitl-" + hashlib.sha256(raw.encode()).hexdigest()


def call_digest(*, target: str, operation: str, arguments: Any) -> str:
    """API.md's call_digest, computed on the engine's side of the wire."""
    canonical = json.dumps(
        {"target": target, "operation": operation, "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def find_gate(served: dict, *, kind: str, target: str, point: str = "entry") -> dict | None:
    """The first gate (in order) that matches this call: its kind, its point, and `*` or the call's target.

    For `mcp_server` the match is the MCP server id, which is the call's target: a rule gates a whole
    server, never one tool.
    """
    if served.get("hitl", {}).get("state") != "active":
        return None
    return _first_gate(served, kind=kind, target=target, point=point)


def would_gate(served: dict, *, kind: str, target: str, point: str = "entry") -> bool:
    """Would a rule gate this call if HITL were active? (Inert configs still say so in the log.)"""
    return _first_gate(served, kind=kind, target=target, point=point) is not None


def _first_gate(served: dict, *, kind: str, target: str, point: str) -> dict | None:
    for gate in sorted(served.get("gates", []), key=lambda g: g.get("order", 10)):
        if not gate.get("enabled", True) or gate["kind"] != kind or gate["point"] != point:
            continue
        if gate["match"] in (ANY, target):
            return gate
    return None


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
    if call.summary and level in ("summary", "full"):
        body["summary"] = call.summary[:2000]
    arguments = passed_arguments(served, call.arguments)
    if arguments is not None:
        body["arguments"] = arguments
    if ttl_seconds is not None:
        body["ttl_seconds"] = ttl_seconds
    return body


def digest_matches(served: dict, approval: dict, call: GatedCall) -> bool:
    """Is what we are about to run exactly what was approved (as far as the level let us tell the portal)?"""
    arguments = passed_arguments(served, call.arguments)
    return approval.get("call_digest") == call_digest(target=call.target, operation=call.operation, arguments=arguments)


def not_asked(served: dict, call: GatedCall) -> Verdict | None:
    """The verdict for a call the portal is not asked about (no gate, or inert), else None."""
    if find_gate(served, kind=call.kind, target=call.target, point=call.point) is not None:
        return None
    if would_gate(served, kind=call.kind, target=call.target, point=call.point):
        return Verdict(True, "inert", INERT_NOTICE)
    return Verdict(True, "not_gated", "No rule gates this call.")


def digest_mismatch(approval: dict) -> Verdict:
    return Verdict(
        False,
        "digest_mismatch",
        "The approved call differs from the one about to run, so it was not run. Ask again for this call.",
        approval,
    )


def verdict_of(approval: dict) -> Verdict:
    """Turn a request into what the agent is told. Expired is not rejected: nobody refused."""
    status = approval["status"]
    decision = approval.get("decision") or {}
    if status == "approved":
        note = f" ({decision['reason']})" if decision.get("reason") else ""
        return Verdict(True, "approved", f"Approved by {decision.get('decided_by') or 'a reviewer'}{note}.", approval)
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
        who = decision.get("decided_by") or "A reviewer"
        return Verdict(False, "rejected", f"{who} rejected this call: {reason}. Do not retry it.", approval)
    return Verdict(
        False,
        "timeout",
        "Still waiting for a person's decision; the call was not run. It stays in the queue until it expires.",
        approval,
    )


def outcome_body(*, status: str, execution_id: str | None = None, detail: str | None = None) -> dict:
    body: dict[str, Any] = {"status": status}
    if execution_id:
        body["execution_id"] = execution_id[:500]
    if detail:
        body["detail"] = detail[:2000]
    return body


def outcome_of(verdict: Verdict) -> dict:
    """The outcome body for a call that ran (`verdict.result`) or raised (`verdict.error`)."""
    if verdict.error is None:
        execution_id = verdict.result if isinstance(verdict.result, str) else None
        return outcome_body(status="executed", execution_id=execution_id)
    return outcome_body(status="failed", detail=f"{type(verdict.error).__name__}: {verdict.error}")


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
    """A 4xx/5xx answer as a HitlError carrying API.md's error code and the fields to fix."""
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
