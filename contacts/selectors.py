"""Reads on a config's draft contacts."""

from django.db.models import QuerySet

from rules.models import Config

from .exceptions import ContactNotFound
from .models import Contact


def contacts_of(config: Config) -> QuerySet:
    """The draft's contacts, by name."""
    return Contact.objects.filter(config=config).order_by("name", "id")


def contact_for(*, config: Config, public_id: str) -> Contact:
    """One contact of this config's draft; another config's reads as missing. Raises ContactNotFound."""
    contact = Contact.objects.filter(config=config, public_id=public_id).first()
    if contact is None:
        raise ContactNotFound()
    return contact
