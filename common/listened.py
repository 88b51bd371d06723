"""A per-process cache that holds only while this process's LISTEN connection hears what could make it wrong."""

import threading
from collections.abc import Hashable


class ListenedCache:
    """Values by key, kept only while `live`.

    The process's LISTEN connection (edge/hub.py) hears, as NOTIFYs sent by database
    triggers, every change that could make a kept value wrong, and each one empties the cache
    (`invalidate`). While the connection is down, or in a process without one (WSGI servers, the
    CLI, tests), nothing is kept and every caller reads the database. The generation closes the race
    where a read that began before a change would store its stale answer after the cache was
    emptied: take `generation` before reading, and hand it to `put`.

    Used for engine keys (workspaces/authentication.py), run-grant rules' live grants
    (approvals/grants/services.py) and workspaces' halts (approvals/halts/services.py): docs/hub.md.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[Hashable, object] = {}
        self.generation = 0
        self.live = False

    def get(self, key: Hashable):
        return self._items.get(key) if self.live else None

    def put(self, key: Hashable, value: object, generation: int) -> None:
        with self._lock:
            if self.live and generation == self.generation:
                self._items[key] = value

    def invalidate(self, *, live: bool | None = None) -> None:
        """Empty it; `live` says whether to keep anything from now on (None: as before)."""
        with self._lock:
            self.generation += 1
            self._items.clear()
            if live is not None:
                self.live = live

    def clear(self) -> None:
        """Empty it now, live or not: this process made a change itself and need not wait to hear it."""
        self.invalidate()
