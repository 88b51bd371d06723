"""What the people services refuse, in the domain's words (HTTP statuses: common/errors.py)."""

from common.exceptions import DomainError


class GroupNotFound(DomainError):
    """No such group in this workspace; another workspace's group reads the same."""

    status = 404
    code = "not_found"

    def __init__(self, public_id: str) -> None:
        super().__init__(f"No approver group {public_id} in this workspace.")


class NotFoundIn(DomainError):
    """Ids (or emails) that name nothing of this workspace: 404 naming the field, and each one."""

    status = 404
    code = "not_found"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class PeopleInvalid(DomainError):
    """Bad input to a group or a delegation: 400 naming the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class GroupNameTaken(DomainError):
    status = 409
    code = "conflict"
    field = "name"


class NotAnApprover(DomainError):
    """The request's rule names approver groups, and this person is in none of them (nor stands in for one)."""

    status = 403
    code = "not_an_approver"
