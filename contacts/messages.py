"""What one message says: composed by the app whose requests contacts tell people of.

Contacts send notices about approval requests without knowing how a request reads: the approvals app
composes each one (approvals/presenters/notices.py) and hands contacts its composer when Django
starts (ApprovalsConfig.ready), so contacts import nothing of approvals (docs/modules.md, the import
direction).
"""

from collections.abc import Callable

from .models import Delivery
from .transports import Notice, Recipient

_composers: list[Callable[..., Notice]] = []


def compose_with(composer: Callable[..., Notice]) -> None:
    """Set the one composer of notices: `composer(delivery=, recipient=, digest=)` → Notice."""
    _composers[:] = [composer]


def notice_for(*, delivery: Delivery, recipient: Recipient, digest: list[Delivery] = ()) -> Notice:
    return _composers[0](delivery=delivery, recipient=recipient, digest=digest)
