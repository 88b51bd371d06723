"""The asyncio client: the same API as HitlClient, awaitable, over asyncio streams (no thread per wait).

A waiting call costs one open socket and no thread, so an engine can hold hundreds of
long-polls on one event loop.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import ssl
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

from . import _core, _questions
from ._core import LONG_POLL_SECONDS, Backoff, GatedCall, HitlError, Verdict
from ._questions import Answers, PlanReview
from .receipts import AsyncReceiptChecks

logger = logging.getLogger("hitl_client")


async def _http(
    method: str, url: str, *, body: bytes | None, headers: dict[str, str], timeout: float
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 exchange on a fresh connection (Connection: close), standard library only."""
    parts = urllib.parse.urlsplit(url)
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    host = parts.hostname or "127.0.0.1"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    head = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    if body is not None:
        head.append(f"Content-Length: {len(body)}")

    async def exchange() -> tuple[int, dict[str, str], bytes]:
        reader, writer = await asyncio.open_connection(host, port, ssl=ssl.create_default_context() if secure else None)
        try:
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b""))
            await writer.drain()
            status_line = await reader.readline()
            try:
                status = int(status_line.split()[1])
            except (IndexError, ValueError):
                raise ConnectionError(f"not an HTTP answer: {status_line[:80]!r}") from None
            answer_headers: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                answer_headers[name.strip().lower()] = value.strip()
            if answer_headers.get("transfer-encoding", "").lower() == "chunked":
                payload = bytearray()
                while size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16):
                    payload += await reader.readexactly(size)
                    await reader.readline()
                raw = bytes(payload)
            elif "content-length" in answer_headers:
                raw = await reader.readexactly(int(answer_headers["content-length"]))
            else:
                raw = await reader.read()
            return status, answer_headers, raw
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass

    return await asyncio.wait_for(exchange(), timeout)


class AsyncHitlClient(AsyncReceiptChecks):
    """HitlClient for asyncio: every method of the same name, awaitable."""

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
        self.timeout = timeout
        self.retry_for = retry_for
        self.log = log or logger

    async def _call_once(
        self, method: str, path: str, body: Any = None, headers: dict | None = None
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        sent = {"Authorization": f"Bearer {self.engine_key}", "Accept": "application/json"}
        if data is not None:
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        try:
            status, answer_headers, raw = await _http(
                method, self.base_url + path, body=data, headers=sent, timeout=self.timeout
            )
        except (OSError, ConnectionError, TimeoutError, asyncio.IncompleteReadError) as error:
            raise HitlError(f"The portal at {self.base_url} is unreachable: {error}") from None
        if status >= 400:
            raise _core.error_from_response(status, raw, answer_headers)
        return status, json.loads(raw or b"null")

    async def _call(
        self, method: str, path: str, body: Any = None, headers: dict | None = None, *, retry_for: float | None = None
    ) -> tuple[int, Any]:
        deadline = time.monotonic() + (self.retry_for if retry_for is None else retry_for)
        backoff = Backoff()
        while True:
            try:
                return await self._call_once(method, path, body, headers)
            except HitlError as error:
                delay = backoff.next_delay(error)
                if not error.retryable or time.monotonic() + delay > deadline:
                    raise
                self.log.warning("HITL: %s — trying again in %.1f s", error, delay)
                await asyncio.sleep(delay)

    async def served(self, config_id: str, *, retry_for: float | None = None) -> dict:
        _, served = await self._call(
            "GET", f"/api/v1/configs/{urllib.parse.quote(config_id)}/served", retry_for=retry_for
        )
        self.log.info("%s (%s@%s)", served["hitl"]["log_line"], served["config_id"], served["version"])
        return served

    async def request_approval(
        self, served: dict, gate: dict, call: GatedCall, *, ttl_seconds: int | None = None
    ) -> dict:
        return await self.register(_core.gate_body(served, gate, call, ttl_seconds=ttl_seconds), call.idempotency_key)

    async def register(self, body: dict, key: str) -> dict:
        answer, _ = await self.register_created(body, key)
        return answer

    async def register_created(self, body: dict, key: str) -> tuple[dict, bool]:
        """register, and whether this call stored the request (201) rather than found the first one (200)."""
        status, answer = await self._call("POST", "/api/v1/approvals", body, headers={"Idempotency-Key": key})
        return answer, status == 201

    async def get(self, approval_id: str, *, wait: float = 0) -> dict:
        query = f"?wait={wait:g}" if wait else ""
        _, approval = await self._call_once("GET", f"/api/v1/approvals/{urllib.parse.quote(approval_id)}{query}")
        return approval

    async def wait(self, approval_id: str, timeout: float | None = None, *, poll: float = LONG_POLL_SECONDS) -> dict:
        """Long-poll until decided (or expired), reconnecting with backoff; after `timeout` s, still pending."""
        deadline = None if timeout is None else time.monotonic() + timeout
        backoff = Backoff()
        approval: dict | None = None
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            chunk = poll if remaining is None else max(0.0, min(poll, remaining))
            try:
                approval = await self.get(approval_id, wait=chunk)
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
                await asyncio.sleep(delay)
                continue
            if approval["status"] != "pending" or (deadline is not None and time.monotonic() >= deadline):
                return approval

    async def report_outcome(
        self,
        approval_id: str,
        *,
        status: str,
        execution_id: str | None = None,
        detail: str | None = None,
        call_digest: str | None = None,
    ) -> dict:
        body = _core.outcome_body(status=status, execution_id=execution_id, detail=detail, call_digest=call_digest)
        _, approval = await self._call("POST", f"/api/v1/approvals/{urllib.parse.quote(approval_id)}/outcome", body)
        return approval

    async def decide_call(
        self,
        served: dict,
        call: GatedCall,
        *,
        wait_timeout: float | None = None,
        on_pending: Callable[[dict], Any] | None = None,
    ) -> Verdict:
        """HitlClient.decide_call: ask, wait, check the digest — everything but running the call."""
        verdict = _core.not_asked(served, call)
        if verdict is not None:
            if verdict.state == "inert":
                self.log.info(verdict.message)
            return verdict
        gate = _core.gate_of(served, call)
        assert gate is not None
        approval = await self.request_approval(served, gate, call)
        answered = _core.registered(approval, call)  # inert (the plan changed since we read it), or allowed
        if answered is not None:
            self.log.info(answered.message)
            return answered
        if approval["status"] == "pending":
            if on_pending is not None:
                await _maybe_await(on_pending(approval))
            approval = await self.wait(approval["id"], wait_timeout)
        # Approved: not yet run, what was approved, and the receipt proves it (receipts.py).
        return await self.judged(served, approval, call)

    async def start(self, verdict: Verdict) -> Verdict:
        """HitlClient.start: record `started` before an approved call runs; not allowed when it was already."""
        if not _core.startable(verdict):
            return verdict
        answer = await self.report_outcome(verdict.approval["id"], status="started")
        verdict = _core.started(verdict, answer)
        if not verdict.allowed:
            self.log.warning("HITL: %s — %s", answer.get("id"), verdict.message)
        return verdict

    async def report(self, verdict: Verdict) -> Verdict:
        if _core.reportable(verdict):
            verdict.approval = await self.report_outcome(verdict.approval["id"], **_core.outcome_of(verdict))
        return verdict

    async def gate_call(
        self,
        served: dict,
        call: GatedCall,
        *,
        execute: Callable[[], Any | Awaitable[Any]] | None = None,
        wait_timeout: float | None = None,
        on_pending: Callable[[dict], Any] | None = None,
    ) -> Verdict:
        """HitlClient.gate_call, awaitable; `execute` may be a plain or an async callable, of the arguments
        to run (the reviewer's edit where they edited them) or of nothing (then an edit is not run)."""
        verdict = await self.decide_call(served, call, wait_timeout=wait_timeout, on_pending=on_pending)
        if not verdict.allowed or execute is None:
            return verdict
        with_arguments = _core.takes_arguments(execute)
        if verdict.edited and not with_arguments:
            return await self.report(_core.edit_to_retry(verdict))
        verdict = await self.start(verdict)
        if not verdict.allowed:  # started already, by this engine before a restart or by another process
            return verdict
        try:
            verdict.result = await _maybe_await(execute(verdict.arguments) if with_arguments else execute())
        except Exception as error:
            verdict.error = error
        return await self.report(verdict)

    # --- Questions and plans (HitlClient.ask, HitlClient.review_plan) -------------------------

    async def request_question(
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
        listed = _questions.as_questions(questions)
        body = _questions.question_body(
            served, listed, title=title or _questions.default_title(listed), run_id=run_id, thread_id=thread_id,
            caller=caller, ttl_seconds=ttl_seconds, requested_by=requested_by,
        )  # fmt: skip
        return await self.register(body, _core.idempotency_key(run_id=run_id, thread_id=thread_id, call_id=call_id))

    async def ask(
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
        on_pending: Callable[[dict], Any] | None = None,
    ) -> Answers:
        """HitlClient.ask, awaitable: the answers, or a decline or an expiry told apart by `state`."""
        listed = _questions.as_questions(questions)
        if not _questions.questions_active(served):
            self.log.info(_questions.QUESTIONS_INERT_NOTICE)
            return _questions.inert_answers()
        approval = await self.request_question(
            served, listed, run_id=run_id, thread_id=thread_id, call_id=call_id, caller=caller, title=title,
            ttl_seconds=ttl_seconds, requested_by=requested_by,
        )  # fmt: skip
        if approval.get("status") == "inert":
            self.log.info(approval["notice"])
            return _questions.inert_answers(approval["notice"])
        if approval["status"] == "pending":
            if on_pending is not None:
                await _maybe_await(on_pending(approval))
            approval = await self.wait(approval["id"], wait_timeout)
        return _questions.answers_of(approval, listed)

    async def request_plan_review(
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
        body = _questions.plan_body(
            served, plan, title=title, run_id=run_id, thread_id=thread_id, caller=caller, ttl_seconds=ttl_seconds,
            requested_by=requested_by,
        )  # fmt: skip
        return await self.register(body, _core.idempotency_key(run_id=run_id, thread_id=thread_id, call_id=call_id))

    async def review_plan(
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
        on_pending: Callable[[dict], Any] | None = None,
    ) -> PlanReview:
        """HitlClient.review_plan, awaitable: approved, or changes asked with the reviewer's words."""
        if not _questions.questions_active(served):
            self.log.info(_questions.QUESTIONS_INERT_NOTICE)
            return _questions.inert_review()
        approval = await self.request_plan_review(
            served, plan, run_id=run_id, thread_id=thread_id, call_id=call_id, caller=caller, title=title,
            ttl_seconds=ttl_seconds, requested_by=requested_by,
        )  # fmt: skip
        if approval.get("status") == "inert":
            self.log.info(approval["notice"])
            return _questions.inert_review(approval["notice"])
        if approval["status"] == "pending":
            if on_pending is not None:
                await _maybe_await(on_pending(approval))
            approval = await self.wait(approval["id"], wait_timeout)
        return _questions.review_of(approval)

    verdict_of = staticmethod(_core.verdict_of)
    check_digest = staticmethod(_core.digest_matches)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
