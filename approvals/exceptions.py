"""What approval services refuse, in the domain's words (HTTP statuses: common/errors.py)."""

from common.exceptions import DomainError


class ApprovalNotFound(DomainError):
    """No such request in this workspace; another workspace's request reads the same."""

    status = 404
    code = "not_found"

    def __init__(self, public_id: str) -> None:
        super().__init__(f"No approval request {public_id} in this workspace.")
        self.public_id = public_id


class GrantNotFound(DomainError):
    """No such run grant in this workspace; another workspace's grant reads the same."""

    status = 404
    code = "not_found"

    def __init__(self, public_id: str) -> None:
        super().__init__(f"No run grant {public_id} in this workspace.")
        self.public_id = public_id


class WrongDecision(DomainError):
    """approve/reject on a token cap request, proceed/stop on a gate request, or no decision word at all."""

    field = "decision"


class GrantNotAllowed(WrongDecision):
    """A run grant on a rule that does not allow one, or with anything but an approval."""

    field = "grant"


class GrantTtlOutOfRange(WrongDecision):
    field = "grant_ttl_seconds"


class ReasonTooLong(WrongDecision):
    """A reason (or a vote's note) longer than the one decide service keeps (approvals.review.decide.REASON_MAX)."""

    field = "reason"


class ReasonRequired(WrongDecision):
    """Asking for changes to a plan without saying which: the agent needs the words to revise it."""

    field = "reason"


class SelfApproval(DomainError):
    """Four eyes: the person a run acts for (requested_by) may not approve it; rejecting is allowed."""

    status = 403
    code = "self_approval"

    default_message = "The run acts for you, so another reviewer must approve it; you may reject it."


class IdempotencyKeyReused(DomainError):
    """The engine key used this Idempotency-Key before, with another body."""

    status = 422
    code = "idempotency_key_reused"

    default_message = "This Idempotency-Key was already used with a different body."


class NotApproved(DomainError):
    """An outcome reported for a request that is not approved (its call must not have run)."""

    status = 409
    code = "conflict"


class NotInDoubt(DomainError):
    """A reviewer's outcome for a request whose engine did not leave it in doubt (not started, or reported)."""

    status = 409
    code = "conflict"


class OutcomeDetailRequired(WrongDecision):
    """A reviewer's outcome without what happened, or without how they know."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class EditNotAllowed(WrongDecision):
    """Edited arguments where the request's rule does not allow edits, or with anything but an approval."""

    field = "arguments"


class EditedArgumentsInvalid(WrongDecision):
    """Edited arguments that are not JSON the portal can keep, or fail the request's `arguments_schema`.

    `fields` names every failing path (`arguments.amount_cents`); `field` and the message are the first.
    """

    def __init__(self, fields: dict[str, str]) -> None:
        self.fields = dict(fields)
        self.field, message = next(iter(self.fields.items()))
        super().__init__(message)


class RequestHalted(DomainError):
    """Approving (or answering) a request a halt or a freeze covers: it is the halt's to reject, nobody's to approve."""

    status = 409
    code = "conflict"

    default_message = "This request's run is halted, or its workspace frozen: no approval until it is lifted."


class ApprovalsNotFound(DomainError):
    """Ids of a batch that name no request of this workspace (another workspace's read the same): all named."""

    status = 404
    code = "not_found"
    field = "ids"
