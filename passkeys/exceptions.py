"""What the passkey services refuse (HTTP statuses: common/errors.py)."""

from common.exceptions import DomainError


class PasskeyRequired(DomainError):
    """Approving this request needs a fresh passkey assertion, made on its page; `url` is that page."""

    status = 403
    code = "passkey_required"

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url

    @property
    def extra(self) -> dict:
        return {"url": self.url}


class PasskeyRefused(DomainError):
    """An assertion that does not prove what it must: wrong request or call, used, expired, unknown, unsigned."""

    status = 403
    code = "passkey_refused"

    default_message = "The passkey check failed; nothing was decided. Press Approve again to retry."


class PasskeyNotFound(DomainError):
    """No such passkey of this person; another person's passkey reads the same."""

    status = 404
    code = "not_found"

    def __init__(self, public_id: str) -> None:
        super().__init__(f"You have no passkey {public_id}.")


class PasskeyInvalid(DomainError):
    """A registration that cannot be accepted (bad name, bad or unverifiable credential)."""


class ReauthRequired(DomainError):
    """Adding or removing a passkey needs proof beyond the session: the password, or one of the person's passkeys."""

    status = 403
    code = "reauthentication_required"

    default_message = (
        "Confirm it is you: enter your password (or use one of your passkeys) to add or remove a passkey. "
        "Nothing was changed."
    )
