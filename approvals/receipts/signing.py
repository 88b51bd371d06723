"""A decided request's receipt (docs/api.md, Receipts): a compact JWS over what was decided.

Signed lazily, where the request is rendered, and cached: the payload is a pure function of the
decided row (`iat` is the decision's time, not the rendering's), and Ed25519 signatures are
deterministic, so every process and every read answers the same bytes for the same key — signing
once per decision and process, whichever path decided it (a reviewer, a grant, a halt, an expiry).
"""

from datetime import datetime
from functools import lru_cache

import jwt
from django.conf import settings

from approvals.edits.checks import decision_digest
from approvals.models import ApprovalKind, ApprovalRequest
from approvals.receipts.keys import receipt_keys
from workspaces.models import Workspace

RECEIPT_ALGORITHM = "EdDSA"
# The decided requests a busy process renders again and again (about 10 MB at most); a miss costs one signature.
_CACHED_RECEIPTS = 16_384
_slugs: dict[int, str] = {}  # workspace id → slug: slugs are never changed once made


def approved_digest(approval: ApprovalRequest) -> str | None:
    """The digest of the call the decision is about — the approved one, edited or not (`decision.call_digest`);
    null for token caps, questions and plans."""
    if approval.kind != ApprovalKind.GATE:
        return None
    return decision_digest(approval)


def _workspace_slug(approval: ApprovalRequest) -> str:
    if ApprovalRequest.workspace.is_cached(approval):
        return approval.workspace.slug
    slug = _slugs.get(approval.workspace_id)
    if slug is None:
        slug = _slugs[approval.workspace_id] = Workspace.objects.values_list("slug", flat=True).get(
            pk=approval.workspace_id
        )
    return slug


def receipt_payload(approval: ApprovalRequest, decision: dict, *, status: str) -> dict:
    """docs/api.md's payload, in its order; `decision` as approval_as_dict renders it."""
    return {
        "iss": settings.HITL_BASE_URL,
        "sub": approval.public_id,
        "workspace": _workspace_slug(approval),
        "config_id": approval.config.public_id,
        "config_version": approval.config_version,
        "rule_id": approval.rule_id or None,
        "run_id": approval.run_id,
        "status": status,
        "action": decision["action"],
        "call_digest": approved_digest(approval),
        "decided_by": decision["decided_by"],
        "decided_at": decision["decided_at"],
        "grant_id": decision["grant_id"],
        # A delegate's decision names whom it stood in for; absent otherwise, so older receipts read the same.
        **({"on_behalf_of": decision["on_behalf_of"]} if decision.get("on_behalf_of") else {}),
        "iat": int(datetime.fromisoformat(decision["decided_at"]).timestamp()),
    }


def receipt_of(approval: ApprovalRequest, decision: dict | None, *, status: str) -> str | None:
    """The receipt of a decided request (null while pending), signed with the current key."""
    if decision is None:
        return None
    return _signed(receipt_keys().kid, tuple(receipt_payload(approval, decision, status=status).items()))


@lru_cache(maxsize=_CACHED_RECEIPTS)
def _signed(kid: str, items: tuple) -> str:
    keys = receipt_keys()
    return jwt.encode(dict(items), keys.signing, algorithm=RECEIPT_ALGORITHM, headers={"kid": kid})
