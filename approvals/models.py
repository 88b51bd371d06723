from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.ids import PublicIdMixin
from rules.models import Config
from rules.vocabulary import PassInformationLevel, RuleKind, RulePoint
from workspaces.models import ApiToken, Workspace


class ApprovalKind(models.TextChoices):
    GATE = "gate", "Gate"
    TOKEN_CAP = "token_cap", "Token cap"
    QUESTION = "question", "Question"
    PLAN = "plan", "Plan"


# A run asks people (approvals/questions/validate.py): no rule gates it, nobody's vote counts but the first.
QUESTION_KINDS = (ApprovalKind.QUESTION, ApprovalKind.PLAN)


class Status(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    EXPIRED = "expired", "Expired"
    ANSWERED = "answered", "Answered"  # a question
    DECLINED = "declined", "Declined"  # a question a person chose not to answer
    WITHDRAWN = "withdrawn", "Withdrawn"  # taken back by its requester (or its engine) before anyone decided


# The statuses a request ends in (decided or expired): history reads these.
DECIDED_STATUSES = [status for status in Status if status != Status.PENDING]


class Action(models.TextChoices):
    RESUME = "resume", "Resume"
    HALT = "halt", "Halt"
    PROCEED_PAST_CAP = "proceed_past_cap", "Proceed past cap"
    STOP_RUN = "stop_run", "Stop the run"
    REVISE = "revise", "Revise the plan"


class Scope(models.TextChoices):
    TURN = "turn", "Turn"
    WORKSPACE = "workspace", "Workspace"


class ExecutionStatus(models.TextChoices):
    # Recorded by the engine just before it runs the call; a started call never completed is in doubt.
    STARTED = "started", "Started"
    EXECUTED = "executed", "Executed"
    FAILED = "failed", "Failed"


# What the engine (and so the agent) is told when nobody answered: deliberately not the
# words of a rejection, so an agent neither gives up for good nor re-asks a real refusal.
EXPIRED_REASON = (
    "Nobody answered before the deadline, so the request expired and counts as rejected. "
    "No person refused this call; ask again later only if it still matters."
)
# A question nobody answered is never answered for anyone: not even its recommended option.
QUESTION_EXPIRED_REASON = (
    "Nobody answered before the deadline, so the question expired unanswered. No option was chosen for "
    "anyone (not even the recommended one) and nobody declined: go on with your best assumption, or ask again."
)
PLAN_EXPIRED_REASON = (
    "Nobody reviewed the plan before the deadline, so it expired unapproved. No person asked for changes "
    "or refused it: ask again later only if it still matters."
)


def expired_reason(kind: str) -> str:
    """What the engine is told when nobody answered, in the words for its kind (never a refusal's)."""
    if kind == ApprovalKind.QUESTION:
        return QUESTION_EXPIRED_REASON
    if kind == ApprovalKind.PLAN:
        return PLAN_EXPIRED_REASON
    return EXPIRED_REASON


# What the engine is told when its request reached nobody (approvals.expiry.undeliverable): an expiry, not
# a person's refusal, and a sign that the rule's contacts need mending rather than that the call was wrong.
UNDELIVERABLE_REASON = (
    "Nobody could be reached: no notification of this request could be delivered and nobody opened it, "
    "so it ended as undeliverable and counts as rejected. No person refused this call; the rule's contacts need fixing."
)


class ApprovalRequestQuerySet(models.QuerySet):
    def for_workspace(self, workspace: Workspace) -> "ApprovalRequestQuerySet":
        return self.filter(workspace=workspace)

    def pending(self, now: datetime | None = None) -> "ApprovalRequestQuerySet":
        """Still waiting for a person: pending and not past its deadline."""
        return self.filter(status=Status.PENDING, expires_at__gt=now or timezone.now())

    def overdue(self, now: datetime | None = None) -> "ApprovalRequestQuerySet":
        return self.filter(status=Status.PENDING, expires_at__lte=now or timezone.now())


class ApprovalRequest(PublicIdMixin, models.Model):
    """A paused call (or token cap breach) waiting for a person's decision."""

    # Every index costs each registration a write, so none is kept that another one covers:
    # workspace_id leads apr_queue and apr_history; public_id has its unique constraint only.
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="approval_requests", db_index=False)
    engine_key = models.ForeignKey(ApiToken, null=True, on_delete=models.SET_NULL, related_name="approval_requests")
    public_id = models.CharField(max_length=24, editable=False)
    public_id_prefix = "apr"
    kind = models.CharField(max_length=16, choices=ApprovalKind.choices, default=ApprovalKind.GATE)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)

    # PROTECT: deleting a config must never take its approval history with it.
    config = models.ForeignKey(Config, on_delete=models.PROTECT, related_name="approval_requests")
    config_version = models.PositiveIntegerField()
    # The frozen rule, copied from the version so the card never depends on a later draft.
    rule_id = models.CharField(max_length=24, blank=True)
    boundary = models.CharField(max_length=16, choices=RuleKind.choices, blank=True)
    point = models.CharField(max_length=8, choices=RulePoint.choices, blank=True)
    message = models.CharField(max_length=2000, blank=True)

    run_id = models.CharField(max_length=500)
    thread_id = models.CharField(max_length=500, blank=True)
    caller = models.CharField(max_length=500, blank=True)
    target = models.CharField(max_length=500, blank=True)
    operation = models.CharField(max_length=500, blank=True)
    pass_information_level = models.CharField(max_length=8, choices=PassInformationLevel.choices)
    summary = models.CharField(max_length=2000, blank=True)
    arguments = models.JSONField(null=True, blank=True)
    call_digest = models.CharField(max_length=64, blank=True)
    # Approve with edits (approvals/edits/checks.py): the engine's JSON Schema of its arguments, and whether
    # the frozen rule lets a reviewer change them. `arguments` and `call_digest` stay as proposed.
    arguments_schema = models.JSONField(null=True, blank=True)
    allow_edit = models.BooleanField(default=False)

    tokens_used = models.BigIntegerField(null=True, blank=True)
    token_cap = models.BigIntegerField(null=True, blank=True)
    scope = models.CharField(max_length=16, choices=Scope.choices, blank=True)

    # A question or a plan (approvals/questions/validate.py): what the run asks, and what a person answered.
    title = models.CharField(max_length=200, blank=True)
    questions = models.JSONField(null=True, blank=True)
    plan = models.TextField(blank=True)
    answers = models.JSONField(null=True, blank=True)

    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    idempotency_key = models.CharField(max_length=255, blank=True)
    # SHA-256 of the registration body: the same key with another body is refused.
    request_fingerprint = models.CharField(max_length=64, blank=True)

    # The decision, recorded once (see approvals.review.decide.approval_decide).
    decided_at = models.DateTimeField(null=True, blank=True)
    # PROTECT: who decided is history; a person who decided is deactivated, never deleted.
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    decided_by_email = models.CharField(max_length=254, blank=True)  # kept if the user is deleted
    on_behalf_of = models.CharField(max_length=254, blank=True, default="")  # a delegate's: for whom (people/)
    decision_action = models.CharField(max_length=20, choices=Action.choices, blank=True)
    reason = models.CharField(max_length=2000, blank=True)
    # Set only when a reviewer approved other arguments than proposed: what the engine is to run, and
    # its digest. Unedited, the decision's arguments and digest are the proposal's (nothing copied).
    approved_arguments = models.JSONField(null=True, blank=True)
    approved_digest = models.CharField(max_length=64, blank=True)

    # The approver policy (SPEC.md), frozen from the rule like its message; token caps keep the defaults.
    requested_by = models.CharField(max_length=254, blank=True)  # the person the run acts for (four eyes)
    approvals_required = models.PositiveSmallIntegerField(default=1)
    self_approval = models.BooleanField(default=False)
    allow_run_grant = models.BooleanField(default=False)
    # Step-up: approving needs the deciding reviewer's passkey, on the request's page (passkeys/).
    require_passkey = models.BooleanField(default=False)
    # Set when a run grant approved it (at registration), or on the request whose approval created one.
    # The grant's public id is the key, so a read needs no join to name it.
    grant = models.ForeignKey(
        "Grant",
        to_field="public_id",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="approvals",
        db_index=False,
    )

    # Reach (docs/undeliverable.md): when a person first opened the request's page (or its one-click
    # link), and whether it ended because nobody could be told of it — an expiry, never a rejection.
    opened_at = models.DateTimeField(null=True, blank=True)
    undeliverable = models.BooleanField(default=False)
    # Why the rule's condition could not be evaluated: the request failed closed (pends) and its card says so.
    condition_error = models.CharField(max_length=500, blank=True)

    # What the engine reported after an approval: a separate fact from the decision.
    execution_status = models.CharField(max_length=16, choices=ExecutionStatus.choices, blank=True)
    execution_id = models.CharField(max_length=255, blank=True)
    execution_detail = models.CharField(max_length=2000, blank=True)
    executed_at = models.DateTimeField(null=True, blank=True)
    # The call_digest the engine reported running ("" when it said none); compared with the approved one.
    execution_digest = models.CharField(max_length=64, blank=True)

    objects = ApprovalRequestQuerySet.as_manager()

    class Meta:
        # No default ordering: on the million-row table every query says which order it needs
        # (an implicit ORDER BY would follow every .first() and every count-free scan).
        constraints = [
            # A constraint, not unique=True: that would add a second, LIKE-only index nobody queries.
            models.UniqueConstraint(fields=["public_id"], name="apr_public_id_unique"),
            models.UniqueConstraint(
                fields=["engine_key", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="one_request_per_idempotency_key",
            ),
        ]
        indexes = [
            models.Index(fields=["workspace", "status", "created_at"], name="apr_queue"),
            models.Index(fields=["workspace", "-created_at"], name="apr_history"),
            # History reads decided rows newest first without walking the pending ones.
            models.Index(
                fields=["workspace", "-created_at", "-id"],
                condition=Q(status__in=["approved", "rejected", "expired", "answered", "declined", "withdrawn"]),
                name="apr_history_decided",
            ),
            models.Index(fields=["expires_at"], condition=Q(status="pending"), name="apr_overdue"),
            # A run's story (GET /api/v1/runs/{run_id}) in order; no workspace column, so no poll ever picks it.
            models.Index(fields=["run_id", "created_at", "id"], name="apr_run"),
            # For SET NULL when a user is deleted; a new (pending) request is not in it.
            models.Index(fields=["decided_by"], condition=Q(decided_by__isnull=False), name="apr_decided_by"),
            # A grant's uses; requests no grant approved (nearly all) cost this index nothing.
            models.Index(fields=["grant"], condition=Q(grant__isnull=False), name="apr_granted"),
        ]

    def __str__(self) -> str:
        return self.public_id

    @property
    def is_token_cap(self) -> bool:
        return self.kind == ApprovalKind.TOKEN_CAP

    def is_pending(self, now: datetime | None = None) -> bool:
        """Still waiting for a person (the row's twin of ApprovalRequestQuerySet.pending)."""
        return self.status == Status.PENDING and self.expires_at > (now or timezone.now())

    def is_overdue(self, now: datetime | None = None) -> bool:
        return self.status == Status.PENDING and self.expires_at <= (now or timezone.now())

    def effective_status(self, now: datetime | None = None) -> str:
        """What the request is now: an overdue pending request is expired even before a sweep."""
        return Status.EXPIRED if self.is_overdue(now) else self.status

    @property
    def is_question(self) -> bool:
        """A question or a plan: answered by a person, not a gate's approve / reject."""
        return self.kind in QUESTION_KINDS

    @property
    def expired_action(self) -> str:
        """The action of an expired request: a question nobody answered lets the run go on (unanswered)."""
        if self.kind == ApprovalKind.QUESTION:
            return Action.RESUME
        return Action.STOP_RUN if self.is_token_cap else Action.HALT


class Vote(models.Model):
    """One reviewer's approval of a request that needs several (approvals_required > 1).

    The unique constraint records each reviewer once; approvals.review.decide counts the rows
    under the request's row lock, so no more than N are ever recorded.
    """

    approval = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="votes", db_index=False)
    # PROTECT: a person who voted stays on record (deactivate them instead of deleting).
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reviewer_email = models.CharField(max_length=254)
    at = models.DateTimeField(default=timezone.now)
    note = models.CharField(max_length=2000, blank=True)
    on_behalf_of = models.CharField(max_length=254, blank=True, default="")

    class Meta:
        ordering = ["at", "id"]
        constraints = [models.UniqueConstraint(fields=["approval", "reviewer"], name="one_vote_per_reviewer")]

    def __str__(self) -> str:
        return f"{self.reviewer_email} approves {self.approval_id}"


class GrantQuerySet(models.QuerySet):
    def for_workspace(self, workspace: Workspace) -> "GrantQuerySet":
        return self.filter(workspace=workspace)

    def live(self, now: datetime | None = None) -> "GrantQuerySet":
        return self.filter(revoked_at__isnull=True, expires_at__gt=now or timezone.now())


class GrantScope(models.TextChoices):
    RUN = "run", "Run — the rest of one run"
    RULE = "rule", "Rule — every call under the rule (a rule window)"


class Grant(PublicIdMixin, models.Model):
    """ "Approve for the rest of this run": later requests of (config, rule, run) are approved at once.

    Or a rule window (scope rule, run_id ""): every request under (config, rule) until it expires,
    granted by an admin with a reason rather than by approving a request.
    Requests it covers are still stored (approved, with this grant and its reviewer) so the trail
    misses nothing; `uses` counts them. Revoking sets revoked_at; a grant is never deleted.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="grants", db_index=False)
    public_id = models.CharField(max_length=24, unique=True, editable=False)
    public_id_prefix = "grt"
    config = models.ForeignKey(Config, on_delete=models.CASCADE, related_name="grants", db_index=False)
    rule_id = models.CharField(max_length=24)
    scope = models.CharField(max_length=8, choices=GrantScope.choices, default=GrantScope.RUN)
    run_id = models.CharField(max_length=500, blank=True)  # "" for a rule window
    reason = models.CharField(max_length=2000, blank=True)  # a rule window's, as its admin gave it
    # The request whose approval created a run grant (not counted in its uses); none for a rule window.
    approval = models.ForeignKey(
        ApprovalRequest, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    granted_by_email = models.CharField(max_length=254)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = GrantQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The registration INSERT looks up a live grant of (config, rule, run) through this.
            models.Index(
                fields=["config", "rule_id", "run_id", "expires_at"],
                condition=Q(revoked_at__isnull=True),
                name="grant_live",
            ),
            models.Index(fields=["workspace", "-created_at"], name="grant_list"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(Q(scope="run") & ~Q(run_id="")) | (Q(scope="rule") & Q(run_id="")),
                name="grant_run_or_rule_window",
            )
        ]

    def __str__(self) -> str:
        return self.public_id

    def is_live(self, now: datetime | None = None) -> bool:
        return self.revoked_at is None and self.expires_at > (now or timezone.now())


class HaltQuerySet(models.QuerySet):
    def in_force(self) -> "HaltQuerySet":
        return self.filter(lifted_at__isnull=True)


class Halt(models.Model):
    """A run halted, or (run_id "") a whole workspace frozen, until lifted (docs/halting.md).

    While one is in force every pending request it covers has been rejected, and every later
    registration it covers is stored already rejected with its reason (approvals/engine/insert.py). Lifting
    sets lifted_at; a halt is never deleted, so the trail keeps who stopped what and why.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="halts", db_index=False)
    run_id = models.CharField(max_length=500, blank=True)  # "": the whole workspace is frozen
    # A run halted under one config only (the API's optional config_id); null: the run under any config.
    config = models.ForeignKey(Config, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=2000)
    halted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    halted_by_email = models.CharField(max_length=254)
    created_at = models.DateTimeField(default=timezone.now)
    lifted_at = models.DateTimeField(null=True, blank=True)
    lifted_by_email = models.CharField(max_length=254, blank=True)

    objects = HaltQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            # The registration statement looks for a halt in force of (workspace, run) through this.
            models.Index(fields=["workspace", "run_id"], condition=Q(lifted_at__isnull=True), name="halt_in_force"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id or 'workspace'} halted by {self.halted_by_email}"

    @property
    def is_freeze(self) -> bool:
        return not self.run_id
