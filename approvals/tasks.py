"""django-q2 tasks for approvals: thin wrappers around services, safe to run twice or in parallel."""

import logging

from approvals.expiry.expire import approval_sweep_overdue
from approvals.expiry.undeliverable import approval_sweep_undeliverable

logger = logging.getLogger(__name__)

SWEEP_BATCH = 1000


def sweep_overdue() -> int:
    """Expire every overdue pending request, a batch at a time; returns how many were expired."""
    total = 0
    while True:
        count = approval_sweep_overdue(batch_size=SWEEP_BATCH)
        total += count
        # A short batch means nothing overdue is left (or another worker holds the rest).
        if count < SWEEP_BATCH:
            break
    if total:
        logger.info("Expired %d overdue approval request(s)", total)
    # Requests nobody could be reached for end too, once their rule's wait for a reader is over.
    undeliverable = approval_sweep_undeliverable()
    if undeliverable:
        logger.info("Ended %d undeliverable approval request(s)", undeliverable)
    return total + undeliverable
