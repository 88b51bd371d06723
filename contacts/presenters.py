"""Display wording for deliveries: one place for the Contacts tab and the request page."""

from collections.abc import Iterable

from .models import Delivery, DeliveryStatus

STATUS_BADGE = {
    DeliveryStatus.SENT: "ok",
    DeliveryStatus.FAILED: "danger",
    DeliveryStatus.PENDING: "",
    DeliveryStatus.SKIPPED: "",
}


def delivery_rows(deliveries: Iterable[Delivery]) -> list[dict]:
    return [
        {
            "id": d.public_id,
            "event": d.get_event_display(),
            "contact": d.recipient.get("name") or d.contact_public_id,
            "channel": d.get_channel_display(),
            "status": d.status,
            "badge": STATUS_BADGE.get(d.status, ""),
            "attempts": d.attempts,
            "last_error": d.last_error,
            "when": d.sent_at or d.next_attempt_at if d.status != DeliveryStatus.FAILED else d.created_at,
            "digest": d.digest,
            "approval_id": d.approval.public_id if d.approval_id and _loaded(d) else "",
        }
        for d in deliveries
    ]


def _loaded(delivery: Delivery) -> bool:
    return Delivery.approval.is_cached(delivery)
