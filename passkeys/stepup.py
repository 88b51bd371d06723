"""Step-up: approving a request whose rule has `require_passkey` needs a fresh passkey assertion.

`step_up_check` is the one check, called by approvals.review.decide.approval_decide for every approval
from every door. Only the request's page can pass it: it asks for a challenge bound to the
request (`step_up_options`), has the browser sign it with the reviewer's passkey, and hands the
answer to the decide service as a `StepUp`. Every other door (API token, CLI, Slack, one-click
links) has none, and gets PasskeyRequired naming the page. Rejecting never needs one.

What an assertion must prove, verified here with py_webauthn: it answers a challenge issued to
this reviewer, unused and unexpired (consumed once, by the database); the challenge's bytes bind
this request's id and call_digest (an answer for another request, or for a call changed since,
is refused); it was made at the portal's origin for its RP id (HITL_BASE_URL); the authenticator
verified the user; the signature verifies with one of the reviewer's passkeys; its sign count
moved past the one on record (a cloned authenticator's would not).
"""

import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from webauthn import generate_authentication_options, options_to_json
from webauthn.helpers import base64url_to_bytes
from webauthn.helpers.structs import UserVerificationRequirement

from audit.services import actor_of, audit_append

from . import relying_party
from .assertions import assertion_verify
from .ceremony import CEREMONY_TIMEOUT_MS, challenge_consume, challenge_issue, signed_challenge
from .exceptions import PasskeyInvalid, PasskeyRefused, PasskeyRequired
from .models import Purpose
from .policy import needs_passkey
from .services import descriptors

if TYPE_CHECKING:  # for the annotations only: passkeys sit below approvals (docs/modules.md)
    from approvals.models import ApprovalRequest

BINDING_CONTEXT = b"hitl-step-up\x00"
BINDING_LENGTH = 32


@dataclass(frozen=True)
class StepUp:
    """What the request's page passes to the decide service: the browser's answer to a step-up challenge."""

    credential: dict


def binding(approval: "ApprovalRequest", approved_digest: str) -> bytes:
    """The challenge's last 32 bytes: SHA-256 over the request's id and the digest of the call being approved —
    the proposal's, or the reviewer's edit: an assertion approves exactly that call and no other."""
    material = BINDING_CONTEXT + approval.public_id.encode() + b"\x00" + approved_digest.encode()
    return hashlib.sha256(material).digest()


def step_up_options(*, approval: "ApprovalRequest", user: AbstractBaseUser, approved_digest: str) -> dict:
    """navigator.credentials.get() options for approving this request's call with `approved_digest` (the
    proposal's call_digest, or an edit's), with a challenge bound to both."""
    allowed = descriptors(user)
    if not allowed:
        raise PasskeyInvalid(
            "Approving this request needs a passkey, and you have none yet: register one on your account page "
            "first. You may still reject it."
        )
    challenge = challenge_issue(
        user=user,
        purpose=Purpose.STEP_UP,
        suffix=binding(approval, approved_digest),
        approval_public_id=approval.public_id,
        call_digest=approved_digest,
    )
    options = generate_authentication_options(
        rp_id=relying_party.rp_id(),
        challenge=challenge,
        timeout=CEREMONY_TIMEOUT_MS,
        allow_credentials=allowed,
        user_verification=UserVerificationRequirement.REQUIRED,
    )
    return json.loads(options_to_json(options))


def step_up_from(raw: str) -> StepUp | None:
    """The page's hidden field (the assertion as JSON) as a StepUp; None when the form carried none."""
    if not raw:
        return None
    try:
        credential = json.loads(raw)
    except ValueError:
        credential = None
    if not isinstance(credential, dict):
        raise PasskeyRefused("The passkey's answer did not reach the portal whole; nothing was decided.")
    return StepUp(credential=credential)


def step_up_check(
    *,
    approval: "ApprovalRequest",
    user: AbstractBaseUser,
    step_up: StepUp | None,
    approved_digest: str,
    now: datetime,
    page_url: str,
) -> None:
    """Pass when approving `approval` needs no passkey, or `step_up` proves one made for approving the call
    with `approved_digest` (the proposal's or the reviewer's edit); else refuse, saying why (and naming
    `page_url`, the request's page, where a passkey approves it).

    Only a still pending request is checked: a decided one answers with its first decision, as ever.
    """
    if not approval.is_pending(now) or not needs_passkey(approval):
        return
    if step_up is None:
        url = page_url
        raise PasskeyRequired(
            f"Approving {approval.public_id} needs a passkey: its rule asks for step-up. Approve it on its page "
            f"in the portal, with your passkey: {url} — rejecting needs none.",
            url=url,
        )
    with transaction.atomic():  # committed before the check: a refused answer still burns its challenge
        challenge = challenge_consume(
            user=user, purpose=Purpose.STEP_UP, challenge=signed_challenge(step_up.credential), now=now
        )
    bound = base64url_to_bytes(challenge.challenge)[-BINDING_LENGTH:]
    if challenge.approval_public_id != approval.public_id or not hmac.compare_digest(
        bound, binding(approval, approved_digest)
    ):
        raise PasskeyRefused(
            f"This passkey answer was made for another request, or for other arguments than the ones being "
            f"approved, not for this call of {approval.public_id}; nothing was decided. Press Approve again."
        )
    asserted = assertion_verify(
        user=user, credential=step_up.credential, challenge=challenge, now=now, failed="nothing was decided."
    )
    with transaction.atomic():
        audit_append(
            workspace_id=approval.workspace_id,
            actor=actor_of(user=user),
            action="approval.stepped_up",
            object=approval.public_id,
            data={
                "passkey": asserted.passkey.public_id,
                "passkey_name": asserted.passkey.name,
                "call_digest": approval.call_digest,
                "approved_digest": approved_digest,
                "user_verified": asserted.user_verified,
                "sign_count": asserted.sign_count,
            },
            at=now,
        )
