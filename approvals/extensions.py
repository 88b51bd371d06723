"""Hook points where an app above approvals adds to what approvals show, without approvals importing it.

Approvals sit below the apps that add people's work around a request (collaboration: comments, claims,
snoozes). Those hand their pieces down here when Django starts (their `AppConfig.ready`), as integrations
hand contacts their transports. Each hook is optional; with none registered approvals show what they own.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Expression, QuerySet
from django.http import HttpRequest
from django.utils.safestring import SafeString

from approvals.models import ApprovalRequest
from approvals.review.selectors import QueueEntry
from workspaces.access import Actor


@dataclass(frozen=True)
class Ended:
    """A request that just ended, as the ending statement answered it (approvals/ending.py)."""

    id: int
    status: str
    requested_by: str


@dataclass(frozen=True)
class Hooks:
    # The request's page: further sections, rendered, after its card (who may see what is the hook's call).
    page_sections: Callable[[HttpRequest, ApprovalRequest], list[SafeString]] | None = None
    # The requests hidden from this reviewer's pending queue and list (a queryset of pks, for a subquery).
    queue_hidden: Callable[[Actor], QuerySet | None] | None = None
    # The Approvals tab: what to read with each entry in the queue's own query (name → expression)...
    queue_extra: Callable[[], dict[str, Expression]] | None = None
    # ...and a strip drawn after each card from it (not in the card cache: it changes without the row).
    queue_strip: Callable[[HttpRequest, dict], SafeString] | None = None
    # The History page: what to read with each row in the page's own query, and a note after its title.
    history_extra: Callable[[], dict[str, Expression]] | None = None
    history_note: Callable[[HttpRequest, dict], SafeString] | None = None
    # Requests that ended, inside the transaction that ended them (queue work on commit, send nothing here).
    ended: Callable[[list[Ended]], None] | None = None
    # A person's read of requests over the API (one, a list's page, a run): further keys for each
    # (pk → {key: value}), read for all of them at once. Engine keys' reads never call it.
    api_extra: Callable[[list[ApprovalRequest]], dict[int, dict]] | None = None


_registered: list[Hooks] = []


def extend(hooks: Hooks) -> None:
    if hooks not in _registered:
        _registered.append(hooks)


def page_sections(request: HttpRequest, approval: ApprovalRequest) -> list[SafeString]:
    return [
        section for hooks in _registered if hooks.page_sections for section in hooks.page_sections(request, approval)
    ]


def ended(rows: list[Ended]) -> None:
    for hooks in _registered:
        if hooks.ended:
            hooks.ended(rows)


def api_extra(approvals: list[ApprovalRequest]) -> dict[int, dict]:
    """pk → the keys the apps above add to a person's API read of each request (none registered: {})."""
    extra: dict[int, dict] = {}
    for hooks in _registered:
        if hooks.api_extra and approvals:
            for pk, fields in hooks.api_extra(approvals).items():
                extra.setdefault(pk, {}).update(fields)
    return extra


def queue_hidden(actor: Actor) -> list[QuerySet]:
    hidden = (hooks.queue_hidden(actor) for hooks in _registered if hooks.queue_hidden)
    return [pks for pks in hidden if pks is not None]


def queue_extra() -> dict[str, Expression]:
    return {name: expr for hooks in _registered if hooks.queue_extra for name, expr in hooks.queue_extra().items()}


def queue_strips(request: HttpRequest, entries: list[QueueEntry]) -> dict[int, SafeString]:
    """pk → the strips under its card, from what each entry read (`queue_extra`)."""
    strips: dict[int, SafeString] = {}
    for entry in entries:
        read = dict(entry.extra)
        html = "".join(hooks.queue_strip(request, read) for hooks in _registered if hooks.queue_strip)
        if html:
            strips[entry.pk] = SafeString(html)
    return strips


def history_extra() -> dict[str, Expression]:
    return {name: expr for hooks in _registered if hooks.history_extra for name, expr in hooks.history_extra().items()}


def history_notes(request: HttpRequest, rows: list[ApprovalRequest], names: list[str]) -> dict[int, SafeString]:
    """pk → the notes after a History row's title, from what `history_extra` annotated the rows with (`names`)."""
    notes: dict[int, SafeString] = {}
    for row in rows:
        read = {name: getattr(row, name, None) for name in names}
        html = "".join(hooks.history_note(request, read) for hooks in _registered if hooks.history_note)
        if html:
            notes[row.pk] = SafeString(html)
    return notes
