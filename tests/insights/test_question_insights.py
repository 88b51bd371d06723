"""Insights: questions answered per day and the time to answer them."""

from datetime import timedelta

from django.core.cache import cache

from approvals.review.decide import approval_decide
from insights.selectors import questions_for
from tests.approvals.question_support import ANSWERS
from tests.factories import make_approval, make_question
from tests.helpers import make_config, travel


def test_it_counts_questions_answered_per_day_and_the_time_to_answer(client, acme, alice, bob):
    config = make_config(acme)
    first, second, declined = make_question(config), make_question(config, run_id="r2"), make_question(config)
    gate = make_approval(config)
    with travel(timedelta(minutes=4)):
        approval_decide(approval=first, user=bob, decision="answer", answers=ANSWERS)
        approval_decide(approval=declined, user=bob, decision="decline")
        approval_decide(approval=gate, user=bob, decision="approve")
    with travel(timedelta(minutes=10)):
        approval_decide(approval=second, user=alice, decision="answer", answers=ANSWERS)
        facts = questions_for(workspace=acme)
        bobs = questions_for(workspace=acme, reviewer="bob@acme.test")
        cache.clear()
        client.force_login(alice)
        html = client.get("/hitl/insights/").content.decode()

    assert facts.answered == 2 and facts.declined == 1
    assert 239 <= facts.p50 <= 421  # between the two answers' four and ten minutes
    assert '<strong class="questions-answered">2</strong> answered' in html
    assert "1 declined" in html
    assert bobs.answered == 1
