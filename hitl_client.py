"""HITL Portal engine client: one file, standard library only, meant to be vendored into an engine.

    client = HitlClient("https://portal.example", engine_key)
    served = client.served("cfg_…")          # logs "HITL: ACTIVE — …" or "HITL: inert …"
    verdict = client.gate_call(
        served, kind="delete", target="customer T-4821", operation="delete",
        run_id=run_id, thread_id=thread_id, call_id=call_id, caller="support-bot",
        summary="Delete the customer record", arguments={"id": "T-4821"},
        execute=lambda: crm.delete("T-4821"),
    )
    if not verdict.allowed:
        tell_the_agent(verdict.message)      # a person's reason, or "nobody answered …"

Contract: API.md, "Engines". Nothing here imports Django.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("hitl_client")

ANY = "*"
LONG_POLL_SECONDS = 30  # the portal's maximum `wait`


class HitlError(Exception):
    """The portal refused a call (4xx) or could not be reached; `code` is API.md's error code."""

    def __init__(self, message: str, *, status: int | None = None, code: str = "", fields: dict | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.fields = fields or {}


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
    for gate in sorted(served.get("gates", []), key=lambda g: g.get("order", 10)):
        if not gate.get("enabled", True) or gate["kind"] != kind or gate["point"] != point:
            continue
        if gate["match"] in (ANY, target):
            return gate
    return None


class HitlClient:
    """Talks to one portal with one engine key."""

    def __init__(self, base_url: str, engine_key: str, *, timeout: float = 45.0, log: logging.Logger | None = None):
        self.base_url = base_url.rstrip("/")
        self.engine_key = engine_key
        self.timeout = timeout  # per HTTP call; must exceed the long-poll's 30 s
        self.log = log or logger

    # --- HTTP ---------------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: Any = None, headers: dict | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.engine_key}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            try:
                detail = json.loads(error.read() or b"{}").get("error", {})
            except (ValueError, AttributeError):
                detail = {}
            raise HitlError(
                detail.get("message") or f"HTTP {error.code} from the portal",
                status=error.code,
                code=detail.get("code", ""),
                fields=detail.get("fields"),
            ) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            raise HitlError(f"The portal at {self.base_url} is unreachable: {error}") from None

    # --- The API, one method per endpoint -----------------------------------------------------

    def served(self, config_id: str) -> dict:
        """The served gate table; logs its HITL line, the first thing to check when nothing pauses."""
        _, served = self._call("GET", f"/api/v1/configs/{urllib.parse.quote(config_id)}/served")
        self.log.info("%s (%s@%s)", served["hitl"]["log_line"], served["config_id"], served["version"])
        return served

    def request_approval(
        self,
        served: dict,
        gate: dict,
        *,
        run_id: str,
        thread_id: str,
        call_id: str,
        caller: str,
        target: str,
        operation: str,
        summary: str | None = None,
        arguments: Any = None,
        ttl_seconds: int | None = None,
    ) -> dict:
        """Register a gated call; returns the request (or `{"status": "inert", …}`). Safe to retry."""
        body: dict[str, Any] = {
            "kind": "gate",
            "config_id": served["config_id"],
            "config_version": served["version"],
            "rule_id": gate["id"],
            "run_id": run_id,
            "thread_id": thread_id,
            "caller": caller,
            "target": target,
            "operation": operation,
        }
        # Pass only what the config's level allows: the portal refuses more, by design.
        level = served.get("pass_information_level", "none")
        if summary and level in ("summary", "full"):
            body["summary"] = summary
        if arguments is not None and level == "full":
            body["arguments"] = arguments
        if ttl_seconds is not None:
            body["ttl_seconds"] = ttl_seconds
        return self._register(body, run_id=run_id, thread_id=thread_id, call_id=call_id)

    def request_token_cap(
        self,
        served: dict,
        *,
        run_id: str,
        thread_id: str,
        call_id: str,
        caller: str,
        tokens_used: int,
        token_cap: int,
        scope: str = "turn",
    ) -> dict:
        body = {
            "kind": "token_cap",
            "config_id": served["config_id"],
            "config_version": served["version"],
            "run_id": run_id,
            "thread_id": thread_id,
            "caller": caller,
            "scope": scope,
            "tokens_used": tokens_used,
            "token_cap": token_cap,
        }
        return self._register(body, run_id=run_id, thread_id=thread_id, call_id=call_id)

    def _register(self, body: dict, *, run_id: str, thread_id: str, call_id: str) -> dict:
        key = idempotency_key(run_id=run_id, thread_id=thread_id, call_id=call_id)
        _, answer = self._call("POST", "/api/v1/approvals", body, headers={"Idempotency-Key": key})
        return answer

    def get(self, approval_id: str, *, wait: float = 0) -> dict:
        query = f"?wait={wait:g}" if wait else ""
        _, approval = self._call("GET", f"/api/v1/approvals/{urllib.parse.quote(approval_id)}{query}")
        return approval

    def wait(self, approval_id: str, timeout: float | None = None, *, poll: float = LONG_POLL_SECONDS) -> dict:
        """Long-poll until decided (or expired); after `timeout` seconds return it still pending."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            chunk = poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic()))
            approval = self.get(approval_id, wait=chunk)
            if approval["status"] != "pending" or (deadline is not None and time.monotonic() >= deadline):
                return approval

    @staticmethod
    def check_digest(approval: dict, *, target: str, operation: str, arguments: Any) -> bool:
        """Is what we are about to run exactly what was approved?"""
        return approval.get("call_digest") == call_digest(target=target, operation=operation, arguments=arguments)

    def report_outcome(
        self, approval_id: str, *, status: str, execution_id: str | None = None, detail: str | None = None
    ) -> dict:
        body: dict[str, Any] = {"status": status}
        if execution_id:
            body["execution_id"] = execution_id
        if detail:
            body["detail"] = detail[:2000]
        _, approval = self._call("POST", f"/api/v1/approvals/{urllib.parse.quote(approval_id)}/outcome", body)
        return approval

    # --- The whole boundary -------------------------------------------------------------------

    def gate_call(
        self,
        served: dict,
        *,
        kind: str,
        target: str,
        operation: str,
        run_id: str,
        thread_id: str,
        call_id: str,
        caller: str,
        point: str = "entry",
        summary: str | None = None,
        arguments: Any = None,
        execute: Callable[[], Any] | None = None,
        wait_timeout: float | None = None,
        on_pending: Callable[[dict], None] | None = None,
    ) -> Verdict:
        """Find the gate, ask, wait, check the digest, run (`execute`) and report the outcome.

        Fails closed: rejected, expired, a wait that timed out, or a digest mismatch never runs the call.
        """
        gate = find_gate(served, kind=kind, target=target, point=point)
        if gate is None:
            matching = find_gate({**served, "hitl": {"state": "active"}}, kind=kind, target=target, point=point)
            if matching is not None:  # inert: the rule would match, so say so, then proceed
                verdict = Verdict(True, "inert", "HITL: inert (Free plan or no enabled rules) — the call may proceed")
                self.log.info(verdict.message)
            else:
                verdict = Verdict(True, "not_gated", "No rule gates this call.")
            return self._run(verdict, execute)

        approval = self.request_approval(
            served,
            gate,
            run_id=run_id,
            thread_id=thread_id,
            call_id=call_id,
            caller=caller,
            target=target,
            operation=operation,
            summary=summary,
            arguments=arguments,
        )
        if approval.get("status") == "inert":  # the plan changed since we read the served config
            self.log.info(approval["notice"])
            return self._run(Verdict(True, "inert", approval["notice"]), execute)
        if approval["status"] == "pending" and on_pending is not None:
            on_pending(approval)
        approval = self.wait(approval["id"], wait_timeout)
        verdict = self.verdict_of(approval)
        if not verdict.allowed:
            return verdict
        if not self.check_digest(approval, target=target, operation=operation, arguments=arguments):
            return Verdict(
                False,
                "digest_mismatch",
                "The approved call differs from the one about to run, so it was not run. Ask again for this call.",
                approval,
            )
        verdict = self._run(verdict, execute)
        if execute is not None:
            ok = verdict.error is None
            execution_id = verdict.result if ok and isinstance(verdict.result, str) else None
            detail = None if ok else f"{type(verdict.error).__name__}: {verdict.error}"
            verdict.approval = self.report_outcome(
                approval["id"], status="executed" if ok else "failed", execution_id=execution_id, detail=detail
            )
        return verdict

    @staticmethod
    def verdict_of(approval: dict) -> Verdict:
        """Turn a request into what the agent is told. Expired is not rejected: nobody refused."""
        status = approval["status"]
        decision = approval.get("decision") or {}
        if status == "approved":
            note = f" ({decision['reason']})" if decision.get("reason") else ""
            return Verdict(
                True, "approved", f"Approved by {decision.get('decided_by') or 'a reviewer'}{note}.", approval
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
            who = decision.get("decided_by") or "A reviewer"
            return Verdict(False, "rejected", f"{who} rejected this call: {reason}. Do not retry it.", approval)
        return Verdict(
            False,
            "timeout",
            "Still waiting for a person's decision; the call was not run. It stays in the queue until it expires.",
            approval,
        )

    @staticmethod
    def _run(verdict: Verdict, execute: Callable[[], Any] | None) -> Verdict:
        if execute is None:
            return verdict
        try:
            verdict.result = execute()
        except Exception as error:  # the call's failure is reported as an outcome, not raised through us
            verdict.error = error
        return verdict
