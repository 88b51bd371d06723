"""How a rule's approver policy reads on the Rules tab, the version pages and the versions diff."""

from .models import Rule


def policy_words(rule: Rule | dict) -> str:
    """'2 approvals · four eyes' · '1 approval · requester may approve · run grants'."""
    frozen = rule.frozen() if isinstance(rule, Rule) else rule
    count = frozen["approvals_required"]
    parts = [f"{count} approval{'s' if count != 1 else ''}"]
    parts.append("requester may approve" if frozen["self_approval"] else "four eyes")
    if frozen["allow_run_grant"]:
        parts.append("run grants")
    if frozen["require_passkey"]:
        parts.append("passkey to approve")
    if frozen.get("allow_edit"):
        parts.append("edits allowed")
    return " · ".join(parts)


def condition_words(rule: Rule | dict) -> str:
    """'shadow · only when caller == "x"' · 'every call': how a rule's mode and condition read."""
    frozen = rule.frozen() if isinstance(rule, Rule) else rule
    parts = ["shadow"] if frozen.get("mode") == "shadow" else []
    condition = (frozen.get("condition") or "").strip()
    parts.append(f"only when {condition}" if condition else "every call")
    return " · ".join(parts)
