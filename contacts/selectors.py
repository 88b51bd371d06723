"""Reads on a config's draft contacts and on deliveries (the one place their workspace scope is applied)."""

from django.db.models import QuerySet

from rules.models import Config
from workspaces.models import Workspace

from .exceptions import ContactNotFound
from .models import Contact, Delivery


def contacts_of(config: Config) -> QuerySet:
    """The draft's contacts, by name."""
    return Contact.objects.filter(config=config).order_by("name", "id")


def contact_for(*, config: Config, public_id: str) -> Contact:
    """One contact of this config's draft; another config's reads as missing. Raises ContactNotFound."""
    contact = Contact.objects.filter(config=config, public_id=public_id).first()
    if contact is None:
        raise ContactNotFound()
    return contact


RECENT = 10


def deliveries_for(workspace: Workspace, *, approval: str = "", contact: str = "", status: str = "") -> QuerySet:
    rows = Delivery.objects.filter(workspace=workspace).select_related("approval")
    if approval:
        rows = rows.filter(approval__public_id=approval)
    if contact:
        rows = rows.filter(contact_public_id=contact)
    if status:
        rows = rows.filter(status=status)
    return rows


def recent_by_contact(workspace: Workspace, contact_ids: list[str]) -> dict[str, list[Delivery]]:
    """Each contact's latest deliveries, for the Contacts tab (one query per contact shown)."""
    return {
        cid: list(deliveries_for(workspace, contact=cid).order_by("-created_at", "-id")[:RECENT]) for cid in contact_ids
    }
