"""django-q2 task: seal the audit records appended since the last run. Safe to run twice or in parallel."""

from .services import audit_seal_all


def seal_all() -> int:
    return audit_seal_all()
