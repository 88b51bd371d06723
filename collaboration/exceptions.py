"""What collaboration services refuse, in the domain's words (HTTP statuses: common/errors.py)."""

from common.exceptions import DomainError


class TextInvalid(DomainError):
    field = "text"


class UntilInvalid(DomainError):
    field = "until"


class NotPending(DomainError):
    """A claim or a snooze on a request that has ended: there is nothing left to work on."""

    status = 409
    code = "conflict"


class ClaimedByAnother(DomainError):
    """One claimant: another reviewer is on it (they, or an admin, release it)."""

    status = 409
    code = "conflict"


class NotAllowed(DomainError):
    status = 403
    code = "forbidden"
