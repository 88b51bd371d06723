"""What the sends of one outbox batch share: reads every message of the batch would make alike.

A batch of fifty often tells the same reviewer by email a dozen times (each email asks who the
address is, for its one-click link) and pushes to the same workspace's browsers as often (each
push asks who is subscribed; each chat message asks whether its request is already in the chat).
`shared` answers such a read once per batch: the batch's rows were
claimed with their requests moments ago, so an answer as old as the batch is as fresh as the rest
of what its messages say. Outside a batch (a test send, a shell) it reads every time.

contacts.sending opens the scope (`batch_scope`) and runs each send in a copy of its context, so
the send threads see the same memo.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


class _Memo:
    def __init__(self, requests: frozenset[int]) -> None:
        self.lock = threading.Lock()
        self.entries: dict[Hashable, _Entry] = {}
        self.requests = requests


class _Entry:
    def __init__(self) -> None:
        self.lock = threading.Lock()  # one thread reads; those asking the same meanwhile wait for its answer
        self.done = False
        self.value: object = None


_memo: ContextVar[_Memo | None] = ContextVar("contacts_batch_memo", default=None)


@contextmanager
def batch_scope(requests: Iterable[int] = ()) -> Iterator[None]:
    """A batch's scope; `requests`: the pks of the requests its rows are about (see batch_requests)."""
    token = _memo.set(_Memo(frozenset(requests)))
    try:
        yield
    finally:
        _memo.reset(token)


def batch_requests() -> frozenset[int] | None:
    """The pks of the current batch's requests (a read about all of them at once), or None outside a batch."""
    memo = _memo.get()
    return None if memo is None else memo.requests


def shared(key: Hashable, read: Callable[[], T]) -> T:
    """`read()`, once per batch for `key`; every time outside one. A read that raises is tried again."""
    memo = _memo.get()
    if memo is None:
        return read()
    with memo.lock:
        entry = memo.entries.setdefault(key, _Entry())
    with entry.lock:
        if not entry.done:
            entry.value, entry.done = read(), True
    return entry.value  # type: ignore[return-value]
