"""Two reviewers answering the same question at the same instant record one answer, on PostgreSQL."""

import os
import threading

import pytest
from django.db import connection

from approvals.models import ApprovalRequest
from approvals.review.decide import approval_decide
from audit.models import AuditRecord
from tests.helpers import make_member, make_token

from .engine_support import make_support_config
from .question_support import ANSWERS, QUESTIONS

pytestmark = [pytest.mark.django_db(transaction=True)]

# Each trial is a real race: two threads released by one barrier on a fresh question.
TRIALS = int(os.environ.get("HITL_QUESTION_RACE_TRIALS", "60"))


def _questions(config, count: int) -> list[ApprovalRequest]:
    from approvals.engine.register import Sent, register
    from workspaces.models import ApiToken

    make_token(config.workspace, engine="race-engine")
    key = ApiToken.objects.get(workspace=config.workspace, kind="engine")
    return [
        register(
            workspace=config.workspace,
            engine_key=key,
            sent=Sent(
                kind="question",
                config_id=config.public_id,
                config_version=1,
                run_id=f"run_{n}",
                thread_id="",
                caller="bot",
                title="Which one?",
                questions=QUESTIONS,
            ),
        ).approval
        for n in range(count)
    ]


def test_two_reviewers_answering_at_once_record_one_answer(acme, alice):
    config = make_support_config(acme, alice)
    reviewers = [make_member(acme, f"reviewer{n}@acme.test", "reviewer") for n in range(2)]
    # Each reviewer answers differently, so the stored answer names its one author.
    answers = [{**ANSWERS, "env": "staging"}, {**ANSWERS, "env": "prod"}]
    public_ids = [approval.public_id for approval in _questions(config, TRIALS)]
    start = threading.Barrier(2)
    results: dict[str, list[tuple[str, bool, dict]]] = {public_id: [] for public_id in public_ids}
    failures: list[BaseException] = []
    record = threading.Lock()

    def answer(index: int) -> None:
        try:
            mine = {a.public_id: a for a in ApprovalRequest.objects.filter(config=config)}
            for public_id in public_ids:
                start.wait(timeout=30)
                approval, already = approval_decide(
                    approval=mine[public_id], user=reviewers[index], decision="answer", answers=answers[index]
                )
                with record:
                    results[public_id].append((reviewers[index].email, already, approval.answers))
        except BaseException as error:  # noqa: BLE001 — reported below, with the barrier broken for the other
            failures.append(error)
            start.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=answer, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not failures, failures[0]

    stored = {a.public_id: a for a in ApprovalRequest.objects.filter(config=config)}
    answered = AuditRecord.objects.filter(action="question.answered")
    for public_id in public_ids:
        seen = results[public_id]
        winners = [email for email, already, _ in seen if not already]
        assert len(winners) == 1, (public_id, seen)
        row = stored[public_id]
        assert row.status == "answered" and row.decided_by_email == winners[0]
        assert row.answers == answers[int(winners[0][len("reviewer")])]
        # The loser was told the winner's answer, not its own.
        assert all(got == row.answers for _, _, got in seen)
        assert answered.filter(object=public_id).count() == 1
