"""The one factory module: approval requests straight into the database (model_bakery fills what a test leaves out).

Every test that needs rows it did not register through the API builds them here: reviewer-side
tests (make_approval, make_token_cap), page and history tests (make_many), the engines' bulk rows
(make_bulk), fuzzing and fault tests.
"""

from datetime import timedelta

from django.utils import timezone
from model_bakery import baker

from approvals.engine.digest import call_digest
from approvals.models import QUESTION_KINDS, ApprovalKind, ApprovalRequest
from common.ids import new_public_id


def make_approval(
    config,
    *,
    kind: str = ApprovalKind.GATE,
    boundary: str = "delete",
    point: str = "entry",
    target: str = "customer T-4821",
    operation: str = "delete",
    caller: str = "support-bot",
    message: str = "",
    level: str | None = None,
    summary: str = "",
    arguments=None,
    tokens_used: int | None = None,
    token_cap: int | None = None,
    scope: str = "",
    version: int = 1,
    rule_id: str = "rul_test",
    created_at=None,
    ttl: timedelta = timedelta(hours=24),
    save: bool = True,
    **fields,
) -> ApprovalRequest:
    created_at = created_at or timezone.now()
    token_cap_kind = kind == ApprovalKind.TOKEN_CAP
    approval = baker.prepare(
        ApprovalRequest,
        public_id=new_public_id("apr"),
        workspace=config.workspace,
        kind=kind,
        config=config,
        config_version=version,
        rule_id="" if token_cap_kind else rule_id,
        boundary="" if token_cap_kind else boundary,
        point="" if token_cap_kind else point,
        message=message,
        run_id=fields.pop("run_id", "run_1"),
        thread_id=fields.pop("thread_id", "thr_1"),
        caller=caller,
        target="" if token_cap_kind else target,
        operation="" if token_cap_kind else operation,
        pass_information_level=level or config.pass_information_level,
        summary=summary,
        arguments=arguments,
        call_digest=""
        if token_cap_kind or kind in QUESTION_KINDS
        else call_digest(target=target, operation=operation, arguments=arguments),
        tokens_used=tokens_used,
        token_cap=token_cap,
        scope=scope or ("turn" if token_cap_kind else ""),
        created_at=created_at,
        expires_at=created_at + ttl,
        **fields,
    )
    if save:
        approval.save()
    return approval


def make_token_cap(config, *, tokens_used: int = 51_200, token_cap: int = 50_000, scope: str = "turn", **fields):
    return make_approval(
        config, kind=ApprovalKind.TOKEN_CAP, tokens_used=tokens_used, token_cap=token_cap, scope=scope, **fields
    )


def make_question(config, *, questions=None, title: str = "Before the migration", **fields) -> ApprovalRequest:
    """A pending question (its questions completed with their defaults, as a registration stores them)."""
    from approvals.questions.validate import questions_validate

    from .approvals.question_support import QUESTIONS

    return _asked(
        config, kind=ApprovalKind.QUESTION, title=title, questions=questions_validate(questions or QUESTIONS), **fields
    )


def make_plan(config, *, plan: str | None = None, title: str = "Orders migration plan", **fields) -> ApprovalRequest:
    from .approvals.question_support import PLAN

    return _asked(config, kind=ApprovalKind.PLAN, title=title, plan=plan or PLAN, **fields)


def _asked(config, **fields) -> ApprovalRequest:
    fields.setdefault("caller", "migration-bot")
    return make_approval(config, rule_id="", boundary="", point="", target="", operation="", **fields)


def make_many(config, count: int, *, start=None, **fields) -> list[ApprovalRequest]:
    """`count` requests in one INSERT, a second apart, oldest first."""
    start = start or timezone.now() - timedelta(seconds=count)
    rows = [make_approval(config, created_at=start + timedelta(seconds=i), save=False, **fields) for i in range(count)]
    return ApprovalRequest.objects.bulk_create(rows)


def make_bulk(
    config,
    count: int,
    *,
    engine_key=None,
    level: str = "full",
    ttl: timedelta = timedelta(hours=1),
    statuses=("approved", "pending"),
    **fields,
) -> list[ApprovalRequest]:
    """`count` bare requests in one INSERT (an engine's many registrations), statuses alternating."""
    now = timezone.now()
    rows = [
        baker.prepare(
            ApprovalRequest,
            workspace=config.workspace,
            engine_key=engine_key,
            public_id=new_public_id("apr"),
            config=config,
            config_version=fields.get("config_version", 1),
            rule_id=fields.get("rule_id", ""),
            run_id=f"run_{index}",
            pass_information_level=level,
            status=statuses[index % len(statuses)],
            created_at=now,
            expires_at=now + ttl,
            idempotency_key=new_public_id("bulk"),
        )
        for index in range(count)
    ]
    return ApprovalRequest.objects.bulk_create(rows)
