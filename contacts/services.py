"""Writes on a config's draft contacts. A contact holds a `${ENV_VAR}` reference, never the secret."""

from rules.models import Config

from .models import Contact


def contact_create(*, config: Config, name: str, channel: str, channel_ref: str = "") -> Contact:
    contact = Contact(config=config, name=name, channel=channel, channel_ref=channel_ref)
    contact.full_clean(exclude=["config", "public_id"])
    contact.save()
    return contact


def contact_update(
    *, contact: Contact, name: str | None = None, channel: str | None = None, channel_ref: str | None = None
) -> Contact:
    """Change the fields given (None leaves a field as it is); Contact.clean() checks the reference."""
    for field, value in (("name", name), ("channel", channel), ("channel_ref", channel_ref)):
        if value is not None:
            setattr(contact, field, value)
    contact.full_clean(exclude=["config", "public_id"])
    contact.save()
    return contact


def contact_delete(*, contact: Contact) -> None:
    contact.delete()
