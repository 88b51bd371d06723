"""django-q2 tasks for the notification outbox: thin wrappers, safe to run twice or in parallel."""

from .checks import require_base_url
from .sending import deliveries_send_due


def send_due() -> int:
    """Send every due delivery (enqueued on each event's commit, and every minute as a safety net)."""
    require_base_url()
    return deliveries_send_due()
