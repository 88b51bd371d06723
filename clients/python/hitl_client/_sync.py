"""The blocking client: urllib, one thread per waiting call."""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from . import _core, _questions
from ._core import LONG_POLL_SECONDS, Backoff, GatedCall, HitlError, Verdict
from ._questions import Answers, PlanReview
from .receipts import ReceiptChecks

logger = logging.getLogger("hitl_client")


class HitlClient(ReceiptChecks):
    """Talks to one portal with one engine key.

    client = HitlClient("https://portal.example", engine_key)
    served = client.served("cfg_…")   # logs "HITL: ACTIVE — …" or "HITL: inert …"
    verdict = client.gate_call(served, GatedCall(kind="delete", target="customer T-4821", …), execute=…)
    """

    def __init__(
        self,
        base_url: str,
        engine_key: str,
        *,
        timeout: float = 45.0,
        retry_for: float = 10.0,
        log: logging.Logger | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.engine_key = engine_key
        self.timeout = timeout  # per HTTP call; must exceed the long-poll's 30 s
        self.retry_for = retry_for  # how long a short call keeps reconnecting before it raises
        self.log = log or logger

    # --- HTTP ---------------------------------------------------------------------------------

    def _call_once(self, method: str, path: str, body: Any = None, headers: dict | None = None) -> tuple[int, Any]:
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
            raw = error.read()
            raise _core.error_from_response(error.code, raw, {k.lower(): v for k, v in error.headers.items()}) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise HitlError(f"The portal at {self.base_url} is unreachable: {reason}") from None

    def _call(
        self, method: str, path: str, body: Any = None, headers: dict | None = None, *, retry_for: float | None = None
    ) -> tuple[int, Any]:
        """One call, reconnecting with backoff while the portal is unreachable or says "later"."""
        deadline = time.monotonic() + (self.retry_for if retry_for is None else retry_for)
        backoff = Backoff()
        while True:
            try:
                return self._call_once(method, path, body, headers)
            except HitlError as error:
                delay = backoff.next_delay(error)
                if not error.retryable or time.monotonic() + delay > deadline:
                    raise
                self.log.warning("HITL: %s — trying again in %.1f s", error, delay)
                time.sleep(delay)

    # --- The API, one method per endpoint -----------------------------------------------------

    def served(self, config_id: str, *, retry_for: float | None = None) -> dict:
        """The served gate table; logs its HITL line, the first thing to check when nothing pauses."""
        _, served = self._call("GET", f"/api/v1/configs/{urllib.parse.quote(config_id)}/served", retry_for=retry_for)
        self.log.info("%s (%s@%s)", served["hitl"]["log_line"], served["config_id"], served["version"])
        return served

    def request_approval(self, served: dict, gate: dict, call: GatedCall, *, ttl_seconds: int | None = None) -> dict:
        """Register a gated call; returns the request (or `{"status": "inert", …}`). Safe to retry."""
        return self.register(_core.gate_body(served, gate, call, ttl_seconds=ttl_seconds), call.idempotency_key)

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
        return self.register(body, _core.idempotency_key(run_id=run_id, thread_id=thread_id, call_id=call_id))

    def register(self, body: dict, key: str) -> dict:
        """POST a registration under an idempotency key: a retry (or a restarted engine) gets the same request."""
        _, answer = self._call("POST", "/api/v1/approvals", body, headers={"Idempotency-Key": key})
        return answer

    def get(self, approval_id: str, *, wait: float = 0) -> dict:
        query = f"?wait={wait:g}" if wait else ""
        _, approval = self._call_once("GET", f"/api/v1/approvals/{urllib.parse.quote(approval_id)}{query}")
        return approval

    def wait(self, approval_id: str, timeout: float | None = None, *, poll: float = LONG_POLL_SECONDS) -> dict:
        """Long-poll until decided (or expired); after `timeout` seconds return it still pending.

        A dropped connection, a restarting portal or a 429 is not an answer: it reconnects with backoff
        until the deadline, and a call is never run on the strength of an error.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        backoff = Backoff()
        approval: dict | None = None
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            chunk = poll if remaining is None else max(0.0, min(poll, remaining))
            try:
                approval = self.get(approval_id, wait=chunk)
                backoff.reset()
            except HitlError as error:
                delay = backoff.next_delay(error)
                if not error.retryable:
                    raise
                if deadline is not None and time.monotonic() + delay >= deadline:
                    if approval is None:
                        raise
                    return approval
                self.log.warning("HITL: waiting for %s: %s — reconnecting in %.1f s", approval_id, error, delay)
                time.sleep(delay)
                continue
            if approval["status"] != "pending" or (deadline is not None and time.monotonic() >= deadline):
                return approval

    def report_outcome(
        self,
        approval_id: str,
        *,
        status: str,
        execution_id: str | None = None,
        detail: str | None = None,
        call_digest: str | None = None,
    ) -> dict:
        body = _core.outcome_body(status=status, execution_id=execution_id, detail=detail, call_digest=call_digest)
        _, approval = self._call("POST", f"/api/v1/approvals/{urllib.parse.quote(approval_id)}/outcome", body)
        return approval

    # --- The whole boundary -------------------------------------------------------------------

    def decide_call(
        self,
        served: dict,
        call: GatedCall,
        *,
        wait_timeout: float | None = None,
        on_pending: Callable[[dict], None] | None = None,
    ) -> Verdict:
        """Find the gate, ask, wait and check the digest — everything but running the call.

        For frameworks that run the call themselves (an SDK's approval flow): run it only when
        `verdict.allowed`, with `verdict.arguments` (a reviewer's edit where `verdict.edited`), then
        report the outcome with `report(verdict)`.
        """
        verdict = _core.not_asked(served, call)
        if verdict is not None:
            if verdict.state == "inert":
                self.log.info(verdict.message)
            return verdict
        gate = _core.gate_of(served, call)
        assert gate is not None
        approval = self.request_approval(served, gate, call)
        answered = _core.registered(approval, call)  # inert (the plan changed since we read it), or allowed
        if answered is not None:
            self.log.info(answered.message)
            return answered
        if approval["status"] == "pending":
            if on_pending is not None:
                on_pending(approval)
            approval = self.wait(approval["id"], wait_timeout)
        # Approved: not yet run, what was approved, and the receipt proves it (receipts.py).
        return self.judged(served, approval, call)

    def start(self, verdict: Verdict) -> Verdict:
        """Record `started` before an approved call runs (run once, docs/receipts.md).

        Returns the verdict to act on: still allowed when this engine recorded it first; `in_doubt` (or
        `already_executed`) when the call was started (or reported) already — then it must not run. A
        framework that runs the call itself calls this between `decide_call` and running it.
        """
        if not _core.startable(verdict):
            return verdict
        answer = self.report_outcome(verdict.approval["id"], status="started")
        verdict = _core.started(verdict, answer)
        if not verdict.allowed:
            self.log.warning("HITL: %s — %s", answer.get("id"), verdict.message)
        return verdict

    def report(self, verdict: Verdict) -> Verdict:
        """Report what happened to an approved call that ran (`verdict.result`) or raised (`verdict.error`),
        with the digest of what ran."""
        if _core.reportable(verdict):
            verdict.approval = self.report_outcome(verdict.approval["id"], **_core.outcome_of(verdict))
        return verdict

    def gate_call(
        self,
        served: dict,
        call: GatedCall,
        *,
        execute: Callable[..., Any] | None = None,
        wait_timeout: float | None = None,
        on_pending: Callable[[dict], None] | None = None,
    ) -> Verdict:
        """Find the gate, ask, wait, check the digest, run (`execute`) and report the outcome.

        `execute(arguments)` gets what was approved — the reviewer's edit of the arguments where they
        edited them — and the outcome carries its digest. An `execute()` without parameters runs the call
        as proposed, so an edited approval is not run through it: the verdict (`edit_to_retry`) tells the
        agent what was approved instead.
        Fails closed: rejected, expired, a wait that timed out, or a digest mismatch never runs the call.
        """
        verdict = self.decide_call(served, call, wait_timeout=wait_timeout, on_pending=on_pending)
        if not verdict.allowed or execute is None:
            return verdict
        with_arguments = _core.takes_arguments(execute)
        if verdict.edited and not with_arguments:
            return self.report(_core.edit_to_retry(verdict))
        verdict = self.start(verdict)
        if not verdict.allowed:  # started already, by this engine before a restart or by another process
            return verdict
        try:
            verdict.result = execute(verdict.arguments) if with_arguments else execute()
        except Exception as error:  # the call's failure is reported as an outcome, not raised through us
            verdict.error = error
        return self.report(verdict)

    # --- Questions and plans ------------------------------------------------------------------

    def request_question(
        self,
        served: dict,
        questions: dict | list[dict],
        *,
        run_id: str,
        thread_id: str,
        call_id: str,
        caller: str,
        title: str | None = None,
        ttl_seconds: int | None = None,
        requested_by: str | None = None,
    ) -> dict:
        """Register questions; returns the request (or `{"status": "inert", …}`). Safe to retry."""
        listed = _questions.as_questions(questions)
        body = _questions.question_body(
            served, listed, title=title or _questions.default_title(listed), run_id=run_id, thread_id=thread_id,
            caller=caller, ttl_seconds=ttl_seconds, requested_by=requested_by,
        )  # fmt: skip
        return self.register(body, _core.idempotency_key(run_id=run_id, thread_id=thread_id, call_id=call_id))

    def ask(
        self,
        served: dict,
        questions: dict | list[dict],
        *,
        run_id: str,
        thread_id: str,
        call_id: str,
        caller: str,
        title: str | None = None,
        ttl_seconds: int | None = None,
        requested_by: str | None = None,
        wait_timeout: float | None = None,
        on_pending: Callable[[dict], None] | None = None,
    ) -> Answers:
        """Ask people one to eight questions (docs/api.md's shape) and wait for the answers.

        `answers.state` tells an answer from a decline (`reason`: their words) and from an expiry (nobody
        answered; nothing is chosen for anyone); `answers["id"]` reads one answer, `answers.message` is
        what to tell the agent. The same `call_id` of the same run and thread asks once, also after a restart.
        """
        listed = _questions.as_questions(questions)
        if not _questions.questions_active(served):
            self.log.info(_questions.QUESTIONS_INERT_NOTICE)
            return _questions.inert_answers()
        approval = self.request_question(
            served, listed, run_id=run_id, thread_id=thread_id, call_id=call_id, caller=caller, title=title,
            ttl_seconds=ttl_seconds, requested_by=requested_by,
        )  # fmt: skip
        if approval.get("status") == "inert":
            self.log.info(approval["notice"])
            return _questions.inert_answers(approval["notice"])
        if approval["status"] == "pending":
            if on_pending is not None:
                on_pending(approval)
            approval = self.wait(approval["id"], wait_timeout)
        return _questions.answers_of(approval, listed)

    def request_plan_review(
        self,
        served: dict,
        plan: str,
        *,
        run_id: str,
        thread_id: str,
        call_id: str,
        caller: str,
        title: str = "Review this plan",
        ttl_seconds: int | None = None,
        requested_by: str | None = None,
    ) -> dict:
        """Register a plan for review; returns the request (or `{"status": "inert", …}`). Safe to retry."""
        body = _questions.plan_body(
            served, plan, title=title, run_id=run_id, thread_id=thread_id, caller=caller, ttl_seconds=ttl_seconds,
            requested_by=requested_by,
        )  # fmt: skip
        return self.register(body, _core.idempotency_key(run_id=run_id, thread_id=thread_id, call_id=call_id))

    def review_plan(
        self,
        served: dict,
        plan: str,
        *,
        run_id: str,
        thread_id: str,
        call_id: str,
        caller: str,
        title: str = "Review this plan",
        ttl_seconds: int | None = None,
        requested_by: str | None = None,
        wait_timeout: float | None = None,
        on_pending: Callable[[dict], None] | None = None,
    ) -> PlanReview:
        """Show people a Markdown plan and wait: `review.approved`, or `review.changes_requested` with the
        reviewer's words in `review.feedback`; an expiry is neither (`state == "expired"`)."""
        if not _questions.questions_active(served):
            self.log.info(_questions.QUESTIONS_INERT_NOTICE)
            return _questions.inert_review()
        approval = self.request_plan_review(
            served, plan, run_id=run_id, thread_id=thread_id, call_id=call_id, caller=caller, title=title,
            ttl_seconds=ttl_seconds, requested_by=requested_by,
        )  # fmt: skip
        if approval.get("status") == "inert":
            self.log.info(approval["notice"])
            return _questions.inert_review(approval["notice"])
        if approval["status"] == "pending":
            if on_pending is not None:
                on_pending(approval)
            approval = self.wait(approval["id"], wait_timeout)
        return _questions.review_of(approval)

    # Kept as static methods so callers need not import the module-level functions.
    verdict_of = staticmethod(_core.verdict_of)
    check_digest = staticmethod(_core.digest_matches)
