"""What contact services refuse, in the domain's words (HTTP statuses: hitl_portal/errors.py)."""

from hitl_portal.exceptions import DomainError


class ContactNotFound(DomainError):
    """No such contact in this config's draft."""

    default_message = "No such contact in this config's draft."
