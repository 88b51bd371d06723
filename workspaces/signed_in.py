"""Who a browser session is — its session row, its user, the user's memberships — kept per process
while the process's LISTEN connection hears every change to them.

Every page and every htmx refresh of the queue began with three reads for these before it did its
own work. Here each is read once and kept as a row (`_kept`), and every request builds its own
objects from the row, so nothing one request changes on its objects reaches another. Triggers
(workspaces/migrations/0003) NOTIFY on SIGNINS_CHANNEL when a session is saved or deleted, a user
or workspace changed or deleted, or a membership added, changed or removed; each NOTIFY empties
the cache (edge/hub.py). A change this process makes itself empties it on commit without waiting
to hear it. While the connection is down, and in a process without one (WSGI servers, the CLI,
tests), nothing is kept: every request reads the database, as before.
"""

import functools
from collections.abc import Callable, Hashable

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db import transaction
from django.utils import timezone

from hitl_portal.listened import ListenedCache

from .models import Membership, Workspace

signed_in = ListenedCache()


def _kept(key: Hashable, read: Callable[[], object]):
    """`read()`'s value for `key`, from the cache when this process has it; None is never kept."""
    value = signed_in.get(key)
    if value is None:
        generation = signed_in.generation  # before the read: a change heard meanwhile keeps it out
        value = read()
        if value is not None:
            signed_in.put(key, value, generation)
    return value


def _forget_on_commit() -> None:
    """This process changed something kept here: empty the cache once the change is visible."""
    transaction.on_commit(signed_in.clear)


def _row(instance, fields: tuple[str, ...]) -> tuple:
    return tuple(getattr(instance, name) for name in fields)


def _hydrate(model, fields: tuple[str, ...], row: tuple):
    return model.from_db("default", list(fields), list(row))


@functools.cache
def _attnames(model) -> tuple[str, ...]:
    return tuple(field.attname for field in model._meta.concrete_fields)


# ------------------------------------------------------------------------------------------- sessions


class SessionStore(DatabaseSessionStore):
    """Django's database sessions (SESSION_ENGINE), the row read through the cache."""

    def _get_session_from_db(self):
        key = self.session_key
        row = _kept(("session", key), self._read_row) if key else None
        if row is None or row[1] <= timezone.now():
            self._session_key = None  # as Django's: unknown or expired, the session starts afresh
            return None
        return self.model(session_key=key, session_data=row[0], expire_date=row[1])

    def _read_row(self) -> tuple | None:
        session = super()._get_session_from_db()
        return None if session is None else (session.session_data, session.expire_date)

    def save(self, must_create: bool = False) -> None:
        super().save(must_create=must_create)
        if not must_create:  # a new session is in no cache yet (nor does its INSERT NOTIFY)
            _forget_on_commit()

    def delete(self, session_key: str | None = None) -> None:
        super().delete(session_key)
        _forget_on_commit()


# ---------------------------------------------------------------------------------------------- users


class KeptModelBackend(ModelBackend):
    """Django's ModelBackend (AUTHENTICATION_BACKENDS), a signed-in user read through the cache."""

    def get_user(self, user_id):
        User = get_user_model()
        fields = _attnames(User)

        def read() -> tuple | None:
            try:
                return _row(User._default_manager.get(pk=user_id), fields)
            except User.DoesNotExist:
                return None

        row = _kept(("user", user_id), read)
        if row is None:
            return None
        user = _hydrate(User, fields, row)
        return user if self.user_can_authenticate(user) else None


# ---------------------------------------------------------------------------------------- memberships


def kept_memberships(user) -> list[Membership]:
    """The user's memberships with their workspaces, by workspace name; each call's objects its own."""

    def read() -> tuple:
        rows = Membership.objects.filter(user=user).select_related("workspace").order_by("workspace__name")
        return tuple((_row(m, _attnames(Membership)), _row(m.workspace, _attnames(Workspace))) for m in rows)

    memberships = []
    for membership_row, workspace_row in _kept(("memberships", user.pk), read):
        membership = _hydrate(Membership, _attnames(Membership), membership_row)
        membership.workspace = _hydrate(Workspace, _attnames(Workspace), workspace_row)
        membership.user = user  # the request's own user: not read again for every actor
        memberships.append(membership)
    return memberships
