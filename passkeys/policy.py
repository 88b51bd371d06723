"""Does approving a request need a passkey? Its frozen rule said so (`require_passkey`), copied onto
the request at registration like the rest of the approver policy; token caps have no rule."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotation only: passkeys sit below approvals (docs/modules.md)
    from approvals.models import ApprovalRequest


def needs_passkey(approval: "ApprovalRequest") -> bool:
    return approval.require_passkey and not approval.is_token_cap
