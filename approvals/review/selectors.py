"""Reads on approval requests: one request, the queue, the history (wording: presenters/)."""

import base64
import binascii
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

from django.db import connection
from django.db.models import Count, F, Q, QuerySet, prefetch_related_objects
from django.db.models.expressions import RawSQL
from django.utils import timezone

from approvals.exceptions import ApprovalNotFound, GrantNotFound
from approvals.models import DECIDED_STATUSES, ApprovalKind, ApprovalRequest, Grant, Status, Vote
from approvals.review.permissions import refuses_self_approval
from rules.models import Config
from workspaces.models import Membership, Role, Workspace

# The queue shows at most this many cards; a reviewer works the oldest first anyway, and a
# page of thousands of cards helps nobody. One more is fetched to know that there are more.
QUEUE_LIMIT = 100
HISTORY_PAGE_SIZE = 50
DECIDED = tuple(DECIDED_STATUSES)  # apr_history_decided's condition names the same


def approvals_for(workspace: Workspace) -> QuerySet:
    """Every request of a workspace: the one place the workspace scope of approvals is applied."""
    return ApprovalRequest.objects.for_workspace(workspace).select_related("config")


# The engines' hot path — every poll of every waiting run — reads one request by its public id.
# Written out once instead of compiled by the ORM on each call: compiling the 40-column SELECT
# with its join cost more than running it, and Model.objects.raw() resolves columns and
# converters on every call (bench/; figures: docs/performance.md).
# tests/approvals/test_engine_register.py reads every column back through it.
# The lookup names the public id alone (the workspace is checked on the row read), and the config's
# public id is a subquery, not a join: on a table it has no statistics for yet (a new deployment, a
# table autovacuum has not analyzed), a join or the workspace's condition lets the planner walk every
# request of the workspace through another index; alone, the lookup can only be the unique index's.
_FIELDS = ApprovalRequest._meta.concrete_fields
_BY_PUBLIC_ID_SQL = (
    "SELECT "
    + ", ".join(f'apr."{field.column}"' for field in _FIELDS)
    + f', (SELECT cfg."public_id" FROM "{Config._meta.db_table}" cfg WHERE cfg."id" = apr."config_id")'
    + f' FROM "{ApprovalRequest._meta.db_table}" apr WHERE apr."public_id" = %s'
)
_WORKSPACE_ID = next(index for index, field in enumerate(_FIELDS) if field.attname == "workspace_id")
_CONVERTED = [(index, field) for index, field in enumerate(_FIELDS) if hasattr(field, "from_db_value")]


def pending_count(*, workspace: Workspace) -> int:
    """How many of the workspace's requests still wait for a person (what a freeze would reject)."""
    return ApprovalRequest.objects.for_workspace(workspace).pending().count()


def approval_get(*, workspace: Workspace | None, public_id: str) -> ApprovalRequest:
    """The one way to load a request by its public id, its config loaded; raises ApprovalNotFound.

    Scoped to `workspace`: another workspace's request reads exactly like a missing one. Only the
    host's CLI, which acts across workspaces and then asks `may_decide`, passes workspace=None.
    """
    if workspace is None:
        approval = ApprovalRequest.objects.select_related("workspace", "config").filter(public_id=public_id)
        approval = approval.order_by().first()
    else:
        approval = _by_public_id(workspace=workspace, public_id=public_id)
    if approval is None:
        raise ApprovalNotFound(public_id)
    return approval


def _by_public_id(*, workspace: Workspace, public_id: str) -> ApprovalRequest | None:
    with connection.cursor() as cursor:
        cursor.execute(_BY_PUBLIC_ID_SQL, [public_id])
        row = cursor.fetchone()
    if row is None or row[_WORKSPACE_ID] != workspace.pk:
        return None
    values = list(row[:-1])
    for index, field in _CONVERTED:
        values[index] = field.from_db_value(values[index], None, connection)
    approval = ApprovalRequest.from_db(connection.alias, [field.attname for field in _FIELDS], values)
    # Other config fields stay deferred: reading one would load it, as the ORM would.
    approval.config = Config.from_db(connection.alias, ["id", "public_id"], [approval.config_id, row[-1]])
    return approval


def approving_votes(approval: ApprovalRequest, now: datetime | None = None) -> list[dict]:
    """The approvals so far, oldest first: `{by, at, reason}`.

    A request needing one approval has no vote rows: its decision is the one approval (for a request
    a grant approved, the granting reviewer's). A quorum reads its Vote rows (prefetched by the
    queue, the history and the list — `with_votes` — one query otherwise).
    """
    if approval.approvals_required > 1:
        return [
            {"by": vote.reviewer_email, "on_behalf_of": vote.on_behalf_of or None, "at": vote.at, "reason": vote.note}
            for vote in approval.votes.all()
        ]
    if approval.effective_status(now) == Status.APPROVED:
        return [
            {
                "by": approval.decided_by_email or None,
                "on_behalf_of": approval.on_behalf_of or None,
                "at": approval.decided_at,
                "reason": approval.reason,
            }
        ]
    return []


def with_votes(approvals: list[ApprovalRequest]) -> list[ApprovalRequest]:
    """Load the votes of the quorum requests among `approvals` in one query (none if there are none)."""
    prefetch_related_objects([approval for approval in approvals if approval.approvals_required > 1], "votes")
    return approvals


def reviewer_emails(workspace: Workspace) -> list[str]:
    """Everyone who may decide this workspace's requests (reviewers and admins), for "who may still vote"."""
    return list(
        Membership.objects.filter(workspace=workspace, role__in=[Role.ADMIN, Role.REVIEWER], user__is_active=True)
        .order_by("user__email")
        .values_list("user__email", flat=True)
    )


def may_still_approve(*, approval: ApprovalRequest, reviewers: list[str]) -> list[str]:
    """The reviewers who have not voted yet and whom four eyes does not exclude."""
    voted = {vote["by"] for vote in approving_votes(approval)}
    return [
        email for email in reviewers if email not in voted and not refuses_self_approval(approval=approval, email=email)
    ]


def grant_get(*, workspace: Workspace, public_id: str) -> Grant:
    """The one way to load a run grant by its public id, scoped to `workspace`; raises GrantNotFound."""
    grant = Grant.objects.for_workspace(workspace).filter(public_id=public_id).first()
    if grant is None:
        raise GrantNotFound(public_id)
    return grant


def grants_for(workspace: Workspace, *, active: bool | None = None, now: datetime | None = None) -> QuerySet:
    """A workspace's run grants with `uses` (requests approved through them, not the one that created them)."""
    grants = Grant.objects.for_workspace(workspace).select_related("config")
    if active is True:
        grants = grants.live(now)
    elif active is False:
        grants = grants.exclude(pk__in=Grant.objects.live(now).values("pk"))
    # A rule window was created by no request: every request it names is a use.
    used = Q(approval_id__isnull=True) | ~Q(approvals__pk=F("approval_id"))
    return grants.annotate(uses=Count("approvals", filter=used))


def with_kind(queryset: QuerySet, kind: str) -> QuerySet:
    """`gate`/`token_cap` filter the request kind; a rule kind (`delete`, …) filters gates by boundary."""
    if kind in ApprovalKind.values:
        return queryset.filter(kind=kind)
    return queryset.filter(kind=ApprovalKind.GATE, boundary=kind)


@dataclass(frozen=True)
class QueueEntry:
    """A card of the Approvals tab before it is drawn: which request, and what its card is drawn from."""

    pk: int
    drawn_from: tuple  # changes whenever anything its card shows does (see _DRAWN_FROM)
    expires_at: datetime
    quorum: bool  # a quorum card shows its votes and who may still vote
    extra: tuple = ()  # what an extension asked the queue's read for (approvals/extensions.py), by name


# What a pending request's card is drawn from, as the database knows it: its row's version — xmin,
# the transaction that wrote the row as it now is, new with every UPDATE — and its votes'. The
# queue redraws up to QUEUE_LIMIT cards on every refresh, and nearly all of them are already drawn
# (approvals/review/card_cache.py): the versions tell which without reading, decoding and hydrating some
# forty columns of each row.
_APR, _VOTE = ApprovalRequest._meta.db_table, Vote._meta.db_table
_DRAWN_FROM = RawSQL(
    f"{_APR}.xmin::text || coalesce((SELECT string_agg(vote.id::text || ':' || vote.xmin::text, ',' ORDER BY vote.id)"
    f" FROM {_VOTE} vote WHERE vote.approval_id = {_APR}.id), '')",
    [],
)
# What QueueEntry is read from, in this order.
_ENTRY_FIELDS = ("pk", "version", "config__public_id", "config__name", "expires_at", "approvals_required")


def _entry(pk: int, version: str, config_id: str, config_name: str, expires_at: datetime, required: int) -> QueueEntry:
    return QueueEntry(pk=pk, drawn_from=(version, config_id, config_name), expires_at=expires_at, quorum=required > 1)


def pending_queue(
    *, workspace: Workspace, now: datetime | None = None, hidden: tuple[QuerySet, ...] = (), extra: dict | None = None
) -> tuple[list[QueueEntry], bool]:
    """The Approvals tab: pending requests, oldest first; and whether more wait beyond the limit.

    hidden: subqueries of requests this reviewer does not want to see now; extra: name → expression read
    with each entry, in the same query (approvals/extensions.py).
    """
    extra = extra or {}
    now = now or timezone.now()
    rows = ApprovalRequest.objects.for_workspace(workspace).pending(now)
    for pks in hidden:
        rows = rows.exclude(pk__in=pks)
    rows = list(
        rows.annotate(version=_DRAWN_FROM, **extra)
        .order_by("created_at", "id")
        .values_list(*_ENTRY_FIELDS, *extra)[: QUEUE_LIMIT + 1]
    )
    width = len(_ENTRY_FIELDS)
    entries = [replace(_entry(*row[:width]), extra=tuple(zip(extra, row[width:], strict=True))) for row in rows]
    return entries[:QUEUE_LIMIT], len(rows) > QUEUE_LIMIT


def queue_cards_to_draw(
    *, workspace: Workspace, pks: list[int], now: datetime | None = None
) -> list[tuple[QueueEntry, ApprovalRequest]]:
    """The requests among `pks` still pending, with their votes, each with what its card is drawn from.

    Versions first, votes after: a vote cast between the two is drawn but not in the versions, so that
    card is drawn again on the next refresh — never versions newer than what was drawn.
    """
    rows = with_votes(list(approvals_for(workspace).pending(now).filter(pk__in=pks).annotate(version=_DRAWN_FROM)))
    return [
        (
            _entry(
                approval.pk,
                approval.version,
                approval.config.public_id,
                approval.config.name,
                approval.expires_at,
                approval.approvals_required,
            ),
            approval,
        )
        for approval in rows
    ]


@dataclass(frozen=True)
class HistoryFilters:
    status: str = ""
    config: str = ""  # a config public id
    kind: str = ""
    date_from: date | None = None
    date_to: date | None = None
    include_pending: bool = False  # the API's list without a status; the History page shows decided ones only
    requested_by: str = ""  # the requests made for this person (`requested_by=me`), case-insensitive
    hidden: tuple = ()  # subqueries of requests hidden from this reviewer's pending list (snoozed)
    rule: str = ""  # a rule's public id
    decided_by: str = ""  # part of the decider's email
    text: str = ""  # part of what a row shows: title, target, operation, summary, reason; or an id


def encode_cursor(approval: ApprovalRequest) -> str:
    raw = f"{approval.created_at.isoformat()}|{approval.pk}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int] | None:
    """The (created_at, id) position a cursor names, or None for a cursor we did not write."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, pk = raw.split("|")
        moment = datetime.fromisoformat(stamp)
        if timezone.is_naive(moment):
            return None
        # In UTC, as the database compares it: a moment past year 9999 there is no cursor of ours.
        return moment.astimezone(UTC), int(pk)
    except (ValueError, UnicodeDecodeError, binascii.Error, OverflowError):
        return None


def history_page(
    *,
    workspace: Workspace,
    filters: HistoryFilters,
    cursor: str = "",
    now: datetime | None = None,
    page_size: int = HISTORY_PAGE_SIZE,
    extra: dict | None = None,
) -> tuple[list[ApprovalRequest], str | None]:
    """One keyset page of requests, for the History page and the API's list alike; and the next page's cursor.
    Newest first, except `pending`, which a reviewer works oldest first. Statuses are as a reader
    sees them: an overdue pending request is expired. Keyset pagination on (created_at, id): each
    page costs the same however deep it is, and nothing counts the whole table. extra: name → expression
    each row reads in the same query (approvals/extensions.py).
    """
    now = now or timezone.now()
    rows = approvals_for(workspace).annotate(**(extra or {}))
    if filters.config:
        rows = rows.filter(config__public_id=filters.config)
    if filters.kind:
        rows = with_kind(rows, filters.kind)
    if filters.requested_by:
        rows = rows.filter(requested_by__iexact=filters.requested_by)
    if filters.rule:
        rows = rows.filter(rule_id=filters.rule)
    if filters.decided_by:
        rows = rows.filter(decided_by_email__icontains=filters.decided_by)
    if filters.text:
        rows = rows.filter(_text_query(filters.text))
    if filters.date_from:
        rows = rows.filter(created_at__gte=_start_of(filters.date_from))
    if filters.date_to and filters.date_to < date.max:  # up to 9999-12-31 is no bound at all
        rows = rows.filter(created_at__lt=_start_of(filters.date_to + timedelta(days=1)))
    status = filters.status
    oldest_first = status == Status.PENDING
    position = decode_cursor(cursor) if cursor else None
    if position:
        created_at, pk = position
        if oldest_first:
            rows = rows.filter(Q(created_at__gt=created_at) | Q(created_at=created_at, pk__gt=pk))
        else:
            rows = rows.filter(Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lt=pk))
    # Two index-driven reads merged, rather than one OR: the decided rows walk the partial index apr_history_decided
    # newest first past the (many, recent) pending rows; overdue ones the sweep has not reached come from apr_overdue.
    if status == Status.PENDING:
        pending = rows.pending(now)
        for pks in filters.hidden:
            pending = pending.exclude(pk__in=pks)
        parts = [pending]
    elif status:
        parts = [rows.filter(status=status)] + ([_overdue(rows, now)] if status == Status.EXPIRED else [])
    elif filters.include_pending:
        parts = [rows]
    else:
        parts = [rows.filter(status__in=DECIDED), _overdue(rows, now)]
    order = ("created_at", "id") if oldest_first else ("-created_at", "-id")
    candidates = [row for part in parts for row in part.order_by(*order)[: page_size + 1]]
    page = sorted(candidates, key=lambda row: (row.created_at, row.pk), reverse=not oldest_first)[: page_size + 1]
    next_cursor = encode_cursor(page[page_size - 1]) if len(page) > page_size else None
    return with_votes(page[:page_size]), next_cursor


def _text_query(text: str) -> Q:
    """Rows showing the text (any case) where a reader sees it, or named by it: a request's or run's id."""
    shown = ("title", "target", "operation", "summary", "reason", "caller")
    query = Q(public_id=text) | Q(run_id=text)
    for field in shown:
        query |= Q(**{f"{field}__icontains": text})
    return query


# Overdue requests the sweep has not reached yet are normally a minute's worth. Fetched by
# deadline they come from the small partial index apr_overdue; asked for newest first, the planner
# (which takes "pending" and "past its deadline" as independent) walks every pending request instead.
OVERDUE_SCAN_LIMIT = 1000


def _overdue(rows: QuerySet, now: datetime) -> QuerySet:
    ids = list(rows.overdue(now).order_by("expires_at").values_list("pk", flat=True)[: OVERDUE_SCAN_LIMIT + 1])
    if len(ids) > OVERDUE_SCAN_LIMIT:  # the sweep is far behind: correct first, fast second
        return rows.overdue(now)
    return rows.filter(pk__in=ids)


def _start_of(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)
