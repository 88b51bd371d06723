"""What every transport shares: the message (`Notice`), its recipient, the failure, and `resolve`."""

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from contacts.models import reference_name

if TYPE_CHECKING:
    from approvals.models import ApprovalRequest


class TransportError(Exception):
    """Why a send failed, in words safe to store and show: a variable's name or an HTTP status,
    never a resolved address, URL or secret. `permanent` failures are not retried; `retry_after`
    (seconds) is the receiver's own wait (Slack's 429 Retry-After), honoured by the next attempt."""

    def __init__(self, message: str, *, permanent: bool = False, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.retry_after = retry_after


@dataclass(frozen=True)
class Recipient:
    """A contact as the request's frozen version names it."""

    id: str
    name: str
    channel: str
    channel_ref: str
    secret_ref: str = ""

    @classmethod
    def from_frozen(cls, frozen: dict) -> "Recipient":
        return cls(
            id=frozen["id"],
            name=frozen.get("name", ""),
            channel=frozen.get("channel", ""),
            channel_ref=frozen.get("channel_ref", ""),
            secret_ref=frozen.get("secret_ref", ""),
        )


@dataclass(frozen=True)
class Notice:
    """One message, rendered once and handed to whichever transport the contact uses."""

    delivery_id: str
    event: str  # requested / reminder / escalated / decided / expired / test / digest
    subject: str  # names the act: "Approve: Delete customer T-4821?"
    approval: dict | None  # the request as the API returns it (None for a test)
    review_url: str | None  # the request's page, behind the normal login
    decide_url: str | None = None  # a one-click link, only for a recipient who reviews the workspace
    edit_url: str = ""  # "Edit in the portal": where the rule allows approving with edits (a link decides as proposed)
    facts: list[tuple[str, str]] = field(default_factory=list)  # the card's facts, for people
    body: str = ""  # one line under the subject, where a channel shows only that (a push notification)
    digest: list[dict] = field(default_factory=list)  # for a digest: [{"subject", "review_url"}]
    source: str = ""  # the portal's HITL_BASE_URL
    workspace_id: int | None = None  # whose notice this is (push: whose reviewers' browsers)
    # The request itself, claimed with its row moments ago: the chats draw their own card from it.
    request: "ApprovalRequest | None" = field(default=None, compare=False, repr=False)


def retry_seconds(value) -> int:
    """A receiver's Retry-After (a 429's), in whole seconds; 30 when it gave none that reads as one."""
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return 30


def resolve(ref: str, *, field_name: str = "channel_ref") -> str:
    """The value of a `${HITL_…}` reference, read at send time and never stored or logged."""
    name = reference_name(ref)
    if name is None:
        raise TransportError(
            f"{field_name} {ref or '(empty)'} is not a ${{HITL_…}} reference: edit the contact to name one",
            permanent=True,
        )
    value = os.environ.get(name, "").strip()
    if not value:
        raise TransportError(f"{name} is not set", permanent=True)
    return value


class Transport(Protocol):
    def notify(self, notice: Notice, recipient: Recipient) -> None:
        """Send, or raise TransportError(message, permanent)."""
