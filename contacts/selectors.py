"""Reads of deliveries: the one place their workspace scope is applied."""

from django.db.models import QuerySet

from .models import Delivery

RECENT = 10


def deliveries_for(workspace, *, approval: str = "", contact: str = "", status: str = "") -> QuerySet:
    rows = Delivery.objects.filter(workspace=workspace).select_related("approval")
    if approval:
        rows = rows.filter(approval__public_id=approval)
    if contact:
        rows = rows.filter(contact_public_id=contact)
    if status:
        rows = rows.filter(status=status)
    return rows


def recent_by_contact(workspace, contact_ids: list[str]) -> dict[str, list[Delivery]]:
    """Each contact's latest deliveries, for the Contacts tab (one query per contact shown)."""
    return {
        cid: list(deliveries_for(workspace, contact=cid).order_by("-created_at", "-id")[:RECENT]) for cid in contact_ids
    }
