"""How many long-polls a process holds, and the per-key cap (docs/api.md, Operations).

The wait itself is the edge's (edge/calls.py and edge/hub.py: one wait path, under the ASGI server).
"""

import logging
import threading
from collections import Counter

from django.conf import settings
from django.utils import timezone
from rest_framework import status
from rest_framework.exceptions import APIException

from approvals.models import ApprovalRequest, Status

logger = logging.getLogger(__name__)

# What a 429 too_many_waits tells the engine: by then some of its waits have usually been answered.
RETRY_AFTER_SECONDS = 5


class TooManyWaits(APIException):
    """docs/api.md, Operations: one wait more than HITL_MAX_WAITS_PER_KEY → 429 with Retry-After."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "too_many_waits"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"This key already holds {limit:,} waits on this server process (HITL_MAX_WAITS_PER_KEY); "
            f"wait for some to be answered, or poll without ?wait, and retry after {RETRY_AFTER_SECONDS} s."
        )
        self.wait = RETRY_AFTER_SECONDS  # DRF's handler turns it into the Retry-After header


class WaitSlots:
    """The waits this process holds, in all and per key: the cap, and the `hitl_waiting_engines` figure.

    A wait counts against its token (an engine key or a person's token): HITL_MAX_WAITS_PER_KEY each.
    Per process, not per deployment: counting across processes would cost a database round trip per
    wait, so a key may hold up to HITL_MAX_WAITS_PER_KEY × (server processes) waits in all.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # safe from any thread, not only the hub's event loop
        self._per_key: Counter[tuple[str, int]] = Counter()
        self.total = 0

    @staticmethod
    def _key(token_id: int | None, user_id: int | None) -> tuple[str, int] | None:
        if token_id is not None:
            return ("token", token_id)
        return ("user", user_id) if user_id is not None else None

    def take(self, token_id: int | None, user_id: int | None = None) -> None:
        """Count one wait more for this token, or raise TooManyWaits."""
        limit = settings.HITL_MAX_WAITS_PER_KEY
        key = self._key(token_id, user_id)
        with self._lock:
            if key is not None:
                if self._per_key[key] >= limit:
                    raise TooManyWaits(limit)
                self._per_key[key] += 1
            self.total += 1

    def give_back(self, token_id: int | None, user_id: int | None = None) -> None:
        key = self._key(token_id, user_id)
        with self._lock:
            if key is not None:
                self._per_key[key] -= 1
                if not self._per_key[key]:
                    del self._per_key[key]
            self.total -= 1

    def held_by(self, token_id: int) -> int:
        return self._per_key[("token", token_id)]


slots = WaitSlots()


def waiting_count() -> int:
    """How many long-polls this process holds right now (for the `hitl_waiting_engines` metric)."""
    return slots.total


def is_waiting(approval: ApprovalRequest) -> bool:
    """Still pending now (an overdue request reads as expired): worth waiting for."""
    return approval.effective_status(timezone.now()) == Status.PENDING
