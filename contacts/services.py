"""Writes on a config's draft contacts. A contact holds a `${ENV_VAR}` reference, never the secret."""

from django.db import transaction

from audit.services import actor_of, audit_append
from rules.models import Config

from .models import Contact


def _contact_changed(*, contact: Contact, user, change: str) -> None:
    # A contact holds `${HITL_…}` references, never an address or secret: safe to record whole.
    audit_append(
        workspace_id=contact.config.workspace_id,
        actor=actor_of(user=user),
        action="contact.changed",
        object=contact.public_id,
        data={"config_id": contact.config.public_id, "change": change, "contact": contact.frozen()},
    )


@transaction.atomic
def contact_create(*, config: Config, name: str, channel: str, channel_ref: str = "", user=None) -> Contact:
    contact = Contact(config=config, name=name, channel=channel, channel_ref=channel_ref)
    contact.full_clean(exclude=["config", "public_id"])
    contact.save()
    _contact_changed(contact=contact, user=user, change="created")
    return contact


@transaction.atomic
def contact_update(
    *,
    contact: Contact,
    name: str | None = None,
    channel: str | None = None,
    channel_ref: str | None = None,
    user=None,
) -> Contact:
    """Change the fields given (None leaves a field as it is); Contact.clean() checks the reference."""
    for field, value in (("name", name), ("channel", channel), ("channel_ref", channel_ref)):
        if value is not None:
            setattr(contact, field, value)
    contact.full_clean(exclude=["config", "public_id"])
    contact.save()
    _contact_changed(contact=contact, user=user, change="updated")
    return contact


@transaction.atomic
def contact_delete(*, contact: Contact, user=None) -> None:
    _contact_changed(contact=contact, user=user, change="deleted")
    contact.delete()
