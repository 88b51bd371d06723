"""contacts.batch: what one outbox batch's sends share, and the chats' record of where a message went."""

import contextvars
import threading

import pytest
from django.db import transaction

from contacts.batch import batch_scope, shared
from contacts.transports.chat import message_remember
from integrations.models import SlackMessage

from ..helpers import register_gate


def test_in_a_batch_a_read_is_made_once_for_every_thread_asking_and_outside_one_every_time():
    reads = []

    def read():
        reads.append(1)
        return ["subscription"]

    assert shared("k", read) == shared("k", read) == ["subscription"]
    assert len(reads) == 2  # no batch: nothing kept
    answers = []
    with batch_scope():
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(lambda: answers.append(shared("k", read)),))
            for _ in range(6)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert shared("other", lambda: "else") == "else"
    assert len(reads) == 3 and len(answers) == 6
    assert all(answer is answers[0] for answer in answers)  # the same list: a send may drop from it for the rest
    with batch_scope():
        shared("k", read)
    assert len(reads) == 4  # a new batch reads again


def test_a_read_that_fails_is_made_again_by_the_next_asker():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("dropped")
        return "answer"

    with batch_scope():
        with pytest.raises(ConnectionError):
            shared("k", flaky)
        assert shared("k", flaky) == "answer"
        assert shared("k", flaky) == "answer"
    assert len(calls) == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("in_transaction", [False, True])
def test_a_chat_message_recorded_twice_keeps_the_first_and_leaves_the_callers_transaction_usable(
    notified, in_transaction
):
    approval = register_gate(notified)

    def remember(ts: str) -> SlackMessage:
        return message_remember(
            SlackMessage, unique={"approval": approval, "channel": "C0TEST"}, contact_id="con_x", ts=ts
        )

    first = remember("1.1")
    if in_transaction:
        with transaction.atomic():
            again = remember("2.2")
            assert SlackMessage.objects.count() == 1  # the savepoint rolled back, the transaction goes on
    else:
        again = remember("2.2")
    assert again.pk == first.pk and again.ts == "1.1"
    assert list(SlackMessage.objects.values_list("ts", flat=True)) == ["1.1"]
