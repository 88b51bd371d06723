"""Does approving a request need a passkey? Its frozen rule says (`require_passkey`).

Read from the published version the request was registered against (one per-process cache of
frozen versions), so neither the registration's INSERT nor the request's row carries it.
"""

from approvals.models import ApprovalRequest
from approvals.versions import frozen_versions


def needs_passkey(approval: ApprovalRequest) -> bool:
    if approval.is_token_cap or not approval.rule_id:
        return False
    version = frozen_versions.get(approval.config_id, approval.config_version)
    rule = version.rule(approval.rule_id) if version is not None else None
    return bool(rule and rule.get("require_passkey"))
