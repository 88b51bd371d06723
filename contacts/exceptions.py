"""What contact services refuse, in the domain's words (HTTP statuses: common/errors.py)."""

from common.exceptions import DomainError


class ContactNotFound(DomainError):
    """No such contact in this config's draft."""

    status = 404
    code = "not_found"

    default_message = "No such contact in this config's draft."


class ContactInUse(DomainError):
    """A draft rule names the contact in notify or escalate_to: it cannot be deleted."""

    status = 409
    code = "conflict"
