"""Before an approved call runs: is it still to run, and does its signed receipt prove the approval?

The portal signs every decided request (docs/api.md, "Receipts"): a compact JWS (EdDSA, Ed25519)
whose header names the key (`kid`) and whose payload names the request (`sub`) and the approved
call (`call_digest`). The client checks it against the portal's JWKS (fetched once, and again when
a receipt names a key it does not know) and refuses to run a call whose receipt does not verify,
names another request, or approves another call. A request already reported executed (a restarted
engine finding its own request) is never run again: the recorded outcome is returned instead.

Both clients (and so the adapters and the MCP gateway) go through `ReceiptChecks.judged` /
`AsyncReceiptChecks.judged`; `verify_receipt` is also `hitl receipt verify`'s check.
"""

from __future__ import annotations

import logging
from typing import Any

import jwt
from jwt.exceptions import InvalidKeyError, PyJWKError, PyJWTError

from . import _core
from ._core import GatedCall, HitlError, Verdict

JWKS_PATH = "/.well-known/jwks.json"
ALGORITHMS = ["EdDSA"]
# A portal and an engine whose clocks differ by this much still agree a receipt is not from the future.
CLOCK_LEEWAY_SECONDS = 300
REQUIRED_CLAIMS = ["iss", "sub", "status", "action", "decided_at", "iat"]

logger = logging.getLogger("hitl_client")


class ReceiptRefused(HitlError):
    """A receipt that does not prove this approval of this call: the call must not run."""

    def __init__(self, message: str):
        super().__init__(message, code="receipt_refused")


class UnknownKey(ReceiptRefused):
    """The receipt names a key the JWKS does not list (retired, or never the portal's)."""


def keys_of(jwks: Any) -> dict[str, jwt.PyJWK]:
    """kid → key of a JWKS document; a key that is not an Ed25519 signing key is left out."""
    keys: dict[str, jwt.PyJWK] = {}
    for jwk in (jwks or {}).get("keys", []) if isinstance(jwks, dict) else []:
        if not isinstance(jwk, dict) or not jwk.get("kid"):
            continue
        try:
            keys[jwk["kid"]] = jwt.PyJWK(jwk, algorithm="EdDSA")
        except (PyJWKError, InvalidKeyError, TypeError, ValueError):
            continue
    return keys


def kid_of(receipt: Any) -> str:
    """The key a receipt names (its protected header's `kid`), read before it is verified."""
    if not isinstance(receipt, str) or not receipt:
        raise ReceiptRefused("The approved request carries no receipt: nothing proves the approval.")
    try:
        header = jwt.get_unverified_header(receipt)
    except PyJWTError as error:
        raise ReceiptRefused(f"The receipt is not a compact JWS ({error}).") from None
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise ReceiptRefused("The receipt names no key (no `kid` in its header).")
    return kid


def verify_receipt(
    receipt: Any,
    keys: dict[str, jwt.PyJWK],
    *,
    approval_id: str | None = None,
    call_digest: str | None | type[Any] = Any,
    status: str | None = None,
    action: str | None = None,
) -> dict:
    """The receipt's claims once its signature verifies against `keys`; else ReceiptRefused.

    `approval_id`: the request it must name (`sub`); `call_digest`: the call it must approve
    (None for a token cap; `Any` to not check it, as `hitl receipt verify` does without --digest);
    `status`, `action`: what the unsigned answer says was decided — the signed claims must say the same.
    """
    kid = kid_of(receipt)
    key = keys.get(kid)
    if key is None:
        raise UnknownKey(f"The receipt is signed with key {kid!r}, which the portal's JWKS does not list.")
    try:
        claims = jwt.decode(
            receipt,
            key=key,
            algorithms=ALGORITHMS,
            leeway=CLOCK_LEEWAY_SECONDS,
            options={"require": REQUIRED_CLAIMS, "verify_aud": False},
        )
    except PyJWTError as error:
        raise ReceiptRefused(f"The receipt does not verify: {error}.") from None
    if approval_id is not None and claims.get("sub") != approval_id:
        raise ReceiptRefused(f"The receipt names request {claims.get('sub')}, not {approval_id}.")
    for claim, answered in (("status", status), ("action", action)):
        if answered is not None and claims.get(claim) != answered:
            raise ReceiptRefused(
                f"The receipt's signed {claim} is {claims.get(claim)!r}, but the answer says {answered!r}."
            )
    if call_digest is not Any and claims.get("call_digest") != call_digest:
        raise ReceiptRefused("The receipt approves another call (its call_digest differs from the call's).")
    return claims


already_executed = _core.already_executed  # where `hitl receipt verify` and older callers found it


def receipt_refused(approval: dict, error: ReceiptRefused) -> Verdict:
    return Verdict(
        False,
        "receipt_refused",
        f"The approval could not be verified ({error}), so the call was not run. Do not retry it; tell a person.",
        approval,
        error=error,
    )


def _before_receipt(served: dict, approval: dict, call: GatedCall, log: logging.Logger) -> Verdict:
    """The verdict as far as it needs no key: decided how, already run, and what runs (_core.settle: the
    approved arguments, edited or not, and their digest)."""
    if _core.verdict_of(approval).allowed and approval.get("execution"):
        status = approval["execution"].get("status")
        log.warning(
            "HITL: %s was approved and already reported %s: not running %s again",
            approval["id"],
            status,
            call.operation,
        )
        return _core.in_doubt(approval) if status == "started" else _core.already_executed(approval)
    return _core.settle(served, approval, call)


def _answered(approval: dict) -> dict:
    """What the unsigned answer claims, for the signed claims to confirm: a request's id, status, action.

    A claim missing from the answer is still checked (as ""), so a stripped answer cannot skip the check.
    """
    decision = approval.get("decision") or {}
    return {
        "approval_id": approval.get("id") or "",
        "status": approval.get("status") or "",
        "action": decision.get("action") or "",
    }


def _refusal(approval: dict, error: ReceiptRefused, log: logging.Logger) -> Verdict:
    log.warning("HITL: %s — %s was not run: %s", approval.get("id"), approval.get("operation"), error)
    return receipt_refused(approval, error)


class ReceiptChecks:
    """For the blocking client: needs `_call(method, path)` and `log`."""

    _receipt_keys: dict[str, jwt.PyJWK] | None = None

    def jwks(self) -> dict[str, jwt.PyJWK]:
        """Fetch the portal's receipt keys (again)."""
        _, document = self._call("GET", JWKS_PATH)  # type: ignore[attr-defined]
        self._receipt_keys = keys_of(document)
        return self._receipt_keys

    def check_receipt(self, approval: dict, *, call_digest: str | None) -> dict:
        """The receipt's claims, verified for this request, this call and the decision the answer states;
        ReceiptRefused otherwise."""
        receipt = approval.get("receipt")
        keys = self._receipt_keys
        if keys is None or kid_of(receipt) not in keys:
            try:
                keys = self.jwks()
            except HitlError as error:
                raise ReceiptRefused(f"the portal's receipt keys could not be fetched: {error}") from None
        return verify_receipt(receipt, keys, call_digest=call_digest, **_answered(approval))

    def judged(self, served: dict, approval: dict, call: GatedCall) -> Verdict:
        """What to do with a decided request's call: run it only when this says `approved`."""
        verdict = _before_receipt(served, approval, call, self.log)  # type: ignore[attr-defined]
        if verdict.state != "approved":
            return verdict
        try:
            self.check_receipt(approval, call_digest=verdict.call_digest)
        except ReceiptRefused as error:
            return _refusal(approval, error, self.log)  # type: ignore[attr-defined]
        return verdict


class AsyncReceiptChecks:
    """For the asyncio client: the same checks, the JWKS fetched without blocking the loop."""

    _receipt_keys: dict[str, jwt.PyJWK] | None = None

    async def jwks(self) -> dict[str, jwt.PyJWK]:
        _, document = await self._call("GET", JWKS_PATH)  # type: ignore[attr-defined]
        self._receipt_keys = keys_of(document)
        return self._receipt_keys

    async def check_receipt(self, approval: dict, *, call_digest: str | None) -> dict:
        receipt = approval.get("receipt")
        keys = self._receipt_keys
        if keys is None or kid_of(receipt) not in keys:
            try:
                keys = await self.jwks()
            except HitlError as error:
                raise ReceiptRefused(f"the portal's receipt keys could not be fetched: {error}") from None
        return verify_receipt(receipt, keys, call_digest=call_digest, **_answered(approval))

    async def judged(self, served: dict, approval: dict, call: GatedCall) -> Verdict:
        verdict = _before_receipt(served, approval, call, self.log)  # type: ignore[attr-defined]
        if verdict.state != "approved":
            return verdict
        try:
            await self.check_receipt(approval, call_digest=verdict.call_digest)
        except ReceiptRefused as error:
            return _refusal(approval, error, self.log)  # type: ignore[attr-defined]
        return verdict
