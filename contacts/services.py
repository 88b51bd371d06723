"""Writes on a config's draft contacts. A contact holds `${HITL_…}` references, never the secret."""

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from audit.services import actor_of, audit_append
from rules.models import Config

from .exceptions import ContactInUse
from .models import Contact, Delivery
from .outbox import delivery_test_create
from .references import reference_refusals


def _contact_changed(*, contact: Contact, user, change: str) -> None:
    # A contact holds `${HITL_…}` references, never an address or secret: safe to record whole.
    audit_append(
        workspace_id=contact.config.workspace_id,
        actor=actor_of(user=user),
        action="contact.changed",
        object=contact.public_id,
        data={"config_id": contact.config.public_id, "change": change, "contact": contact.frozen()},
    )


def contact_check(*, contact: Contact) -> None:
    """Raise ValidationError naming the field when the contact may not be saved (or sent a test) as it is:
    its references' form (Contact.clean), then what they name and hold (contacts.references)."""
    contact.full_clean(exclude=["config", "public_id"])
    if refusals := reference_refusals(
        workspace=contact.config.workspace,
        channel=contact.channel,
        channel_ref=contact.channel_ref,
        secret_ref=contact.secret_ref,
    ):
        raise ValidationError(refusals)


@transaction.atomic
def contact_create(
    *,
    config: Config,
    name: str,
    channel: str,
    channel_ref: str = "",
    secret_ref: str = "",
    user: AbstractBaseUser | None = None,
) -> Contact:
    contact = Contact(config=config, name=name, channel=channel, channel_ref=channel_ref, secret_ref=secret_ref)
    contact_check(contact=contact)
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
    secret_ref: str | None = None,
    user: AbstractBaseUser | None = None,
) -> Contact:
    """Change the fields given (None leaves a field as it is); Contact.clean() checks the references."""
    changes = (("name", name), ("channel", channel), ("channel_ref", channel_ref), ("secret_ref", secret_ref))
    for field, value in changes:
        if value is not None:
            setattr(contact, field, value)
    contact_check(contact=contact)
    contact.save()
    _contact_changed(contact=contact, user=user, change="updated")
    return contact


@transaction.atomic
def contact_delete(*, contact: Contact, user: AbstractBaseUser | None = None) -> None:
    """Delete a draft contact, unless a draft rule names it (published versions keep their own copy)."""
    users = [rule.public_id for rule in contact.config.rules.all() if rule.names_contact(contact.public_id)]
    if contact.public_id in (contact.config.questions_notify or []):
        raise ContactInUse(
            f"{contact.name} ({contact.public_id}) is named in the config's questions_notify: remove it there first."
        )
    if users:
        raise ContactInUse(
            f"{contact.name} ({contact.public_id}) is named by draft rule{'s' if len(users) > 1 else ''} "
            f"{', '.join(users)} in notify or escalate_to: remove it there first."
        )
    _contact_changed(contact=contact, user=user, change="deleted")
    contact.delete()


def contact_test(*, contact: Contact) -> Delivery:
    """Queue a `test` event to a draft contact, once it passes the checks a save would."""
    contact_check(contact=contact)
    return delivery_test_create(contact=contact)
