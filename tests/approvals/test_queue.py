"""The Approvals tab: the queue page, its refresh partial, the cards, and the reviewer list API."""

import re
from datetime import timedelta
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from approvals.models import Status, Vote
from approvals.review.card_cache import EXPIRES_MARKER, rendered_cards
from tests.factories import make_approval, make_many, make_token_cap
from tests.helpers import make_config, make_member, make_rule, make_workspace, publish, travel

QUEUE = "/hitl/approvals/"
PARTIAL = "/hitl/approvals/queue/"


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent", pass_information_level="full")


def test_it_lists_pending_requests_oldest_first(client, bob, support):
    newer = make_approval(support, target="customer T-2", created_at=support.created_at + timedelta(minutes=5))
    older = make_approval(support, target="customer T-1", created_at=support.created_at)
    client.force_login(bob)
    html = client.get(QUEUE).content.decode()
    assert html.index(older.public_id) < html.index(newer.public_id)
    assert "Delete customer T-1" in html and "Delete customer T-2" in html


def test_it_leaves_decided_overdue_and_foreign_requests_out(client, bob, support, globex):
    approved = make_approval(support, target="customer approved", status=Status.APPROVED)
    overdue = make_approval(support, target="customer overdue", ttl=timedelta(minutes=1))
    foreign = make_approval(make_config(globex, "Theirs"), target="customer theirs")
    client.force_login(bob)
    with travel(timedelta(minutes=2)):
        html = client.get(PARTIAL).content.decode()
    assert "Nothing is waiting for a decision" in html
    for approval in (approved, overdue, foreign):
        assert approval.public_id not in html


def test_it_refreshes_only_the_queue_on_the_configured_schedule(client, bob, support, settings):
    settings.APPROVALS_REFRESH_SECONDS = 7
    make_approval(support)
    client.force_login(bob)
    page = client.get(QUEUE).content.decode()
    assert f'hx-get="{PARTIAL}"' in page
    assert 'hx-trigger="every 7s, queue-refresh"' in page  # a hidden tab skips it: static/js/portal.js
    partial = client.get(PARTIAL).content.decode()
    assert "<html" not in partial and 'class="card approval' in partial


def test_it_titles_each_card_with_the_act_and_its_object(client, bob, support):
    make_approval(support, boundary="delete", target="customer T-4821")
    make_approval(support, boundary="mcp_server", target="mcp_billing", operation="")
    make_approval(support, boundary="mcp_server", target="mcp_billing", operation="issue_refund")
    make_approval(support, boundary="cell", target="12", operation="run")
    make_approval(support, boundary="worker", target="tech-lead", operation="start", point="exit")
    make_token_cap(support)
    client.force_login(bob)
    html = unescape(client.get(QUEUE).content.decode())  # the text as shown: a card is kept in ASCII
    for title in (
        "Delete customer T-4821",
        "Call mcp_billing<",
        "Call issue_refund on mcp_billing",
        "Run cell 12",
        "Start worker tech-lead",
        "Token cap reached",
    ):
        assert title in html, title
    assert "entry — before the call" in html
    assert "exit — before its result returns" in html


def test_it_shows_what_the_level_allows_and_says_why(client, bob, support):
    make_approval(
        support,
        level="full",
        summary="Refund 49.00 USD",
        arguments={"amount_cents": 4900, "ticket_id": "T-4821"},
        message="Refunds move real money.",
    )
    make_approval(support, level="none", target="customer T-9")
    client.force_login(bob)
    html = client.get(QUEUE).content.decode()
    assert "Refunds move real money." in html
    assert "Refund 49.00 USD" in html
    assert "&quot;amount_cents&quot;: 4900,\n  &quot;ticket_id&quot;: &quot;T-4821&quot;" in html
    assert "passes only the target and operation (level none)" in html
    assert f'href="{reverse("rules:version", args=[support.public_id, 1])}">{support.public_id}@1</a>' in html


def test_it_shows_a_token_cap_card_with_a_meter_and_its_buttons(client, bob, support):
    make_token_cap(support, tokens_used=45_000, token_cap=50_000, scope="workspace")
    client.force_login(bob)
    html = client.get(QUEUE).content.decode()
    assert "<strong>45,000</strong> of 50,000 tokens used (90% of the cap)" in html
    assert 'data-percent="90"' in html  # sized by static/js/portal.js (no inline style under the CSP)
    assert "workspace-wide token limit" in html
    assert f"{reverse('rules:settings', args=[support.public_id])}#token-caps" in html
    assert html.index('value="stop"') < html.index('value="proceed"')
    assert "Stop the run" in html and "Proceed past cap" in html


def test_it_puts_reject_left_and_approve_rightmost(client, bob, support):
    make_approval(support)
    client.force_login(bob)
    html = client.get(QUEUE).content.decode()
    start = html.index('<form class="decide"')
    form = html[start : html.index("</form>", start)]
    buttons = [part.split(">")[0] for part in form.split("<button")[1:]]
    assert ['value="reject"' in b for b in buttons] == [True, False]
    assert ['value="approve"' in b for b in buttons] == [False, True]


def test_it_explains_the_plan_on_a_free_workspace(client, db):
    hobby = make_workspace("hobby", plan="free")
    dora = make_member(hobby, "dora@hobby.test", "admin")
    client.force_login(dora)
    html = client.get(QUEUE).content.decode()
    assert "Human-in-the-Loop is a Pro and Enterprise feature" in html
    assert 'id="queue"' not in html


def test_it_sends_strangers_to_log_in(client, support):
    assert client.get(QUEUE).status_code == 302
    assert client.get(PARTIAL).status_code == 302


def _queries(client, url) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return [q["sql"] for q in queries]


def test_it_runs_the_same_queries_with_10_and_with_1000_requests(client, bob, support):
    publish(support)  # as every stored request's version is: the cards' frozen rules are then kept in the process
    make_many(support, 9)
    make_token_cap(support)
    client.force_login(bob)
    client.get(QUEUE)  # warm the session

    def queries() -> dict:
        both = {}
        for url in (QUEUE, PARTIAL):
            rendered_cards.clear()  # every card drawn, then every card taken from the cache
            both[url] = (_queries(client, url), _queries(client, url))
        return both

    with_10 = queries()
    make_many(support, 990)
    with_1000 = queries()
    for url in (QUEUE, PARTIAL):
        drawing, cached = with_1000[url]
        assert [len(q) for q in with_10[url]] == [len(drawing), len(cached)], url
        # session, user, memberships, the queue (and the page's frozen-workspace banner); nothing per card
        assert len(cached) <= (5 if url == QUEUE else 4), "\n".join(q[:150] for q in cached)
        # and once, the new cards' requests
        assert len(drawing) == len(cached) + 1, drawing


def test_it_fills_the_meter_at_most_once_past_the_cap(client, bob, support):
    make_token_cap(support, tokens_used=51_200, token_cap=50_000)
    client.force_login(bob)
    html = client.get(QUEUE).content.decode()
    assert "<strong>51,200</strong> of 50,000 tokens used (102% of the cap)" in html
    assert 'data-percent="100"' in html
    assert "the config's per-turn cap" in html


def test_quorum_cards_with_votes_cost_no_query_per_card(client, bob, alice, support, django_assert_max_num_queries):
    """Votes, who may still approve and each card's links are worked out for the page at once, not per card."""
    from approvals.models import Vote

    # Cards of a published rule, as registered ones are: each card asks its frozen rule for approver groups.
    rule = make_rule(support, approvals_required=2)
    version = publish(support).number

    def quorum_cards(count: int) -> list:
        cards = make_many(
            support, count, approvals_required=2, allow_run_grant=True, rule_id=rule.public_id, version=version
        )
        for approval in cards:
            Vote.objects.create(approval=approval, reviewer=alice, reviewer_email=alice.email)
        return cards

    first = quorum_cards(2)[0]
    client.force_login(bob)
    client.get(QUEUE)  # warm the session
    counts = {}
    for url in (QUEUE, PARTIAL):
        rendered_cards.clear()  # every card drawn, not taken from the cache
        counts[url] = len(_queries(client, url))
    quorum_cards(48)
    for url in (QUEUE, PARTIAL):
        rendered_cards.clear()
        with django_assert_max_num_queries(counts[url]):
            html = unescape(client.get(url).content.decode())
        assert html.count("1 of 2 approvals — alice@acme.test") == 50
        assert html.count("May still approve: bob@acme.test<") == 50
    decide = reverse("approvals:decide", args=[first.public_id])
    assert f'action="{decide}"' in html and f'hx-post="{decide}"' in html
    version = reverse("rules:version", args=[support.public_id, first.config_version])
    assert f'<a href="{version}">{support.public_id}@{first.config_version}</a>' in html


# The rendered-card cache (approvals/review/card_cache.py): a card is drawn once for what it shows.


def test_a_card_from_the_cache_is_the_card_drawn_afresh(client, bob, support):
    make_approval(support, target="customer T-1", allow_run_grant=True)
    make_approval(support, target="customer T-2", approvals_required=2)
    client.force_login(bob)
    rendered_cards.clear()
    drawn = client.get(PARTIAL).content.decode()
    assert len(rendered_cards) == 2
    kept = client.get(PARTIAL).content.decode()
    assert _without_csrf_tokens(kept) == _without_csrf_tokens(drawn)  # each render masks the token anew
    rendered_cards.clear()
    assert _without_csrf_tokens(client.get(PARTIAL).content.decode()) == _without_csrf_tokens(drawn)


def test_a_kept_card_shows_every_character_the_engine_sent(client, bob, support):
    summary = "Löschen: Kunde «Müller» — 顧客 🚀"
    make_approval(support, target="customer T-1", summary=summary)
    client.force_login(bob)
    rendered_cards.clear()
    assert summary in unescape(client.get(PARTIAL).content.decode())
    assert summary in unescape(client.get(PARTIAL).content.decode())  # from the cache


def _without_csrf_tokens(html: str) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)


def test_a_card_from_the_cache_carries_this_requests_csrf_token_and_countdown(bob, support):
    from django.middleware.csrf import _unmask_cipher_token
    from django.test import Client

    approval = make_approval(support, target="customer T-1", ttl=timedelta(hours=5))
    rendered_cards.clear()
    tokens = []
    for _ in range(2):  # two browsers of the same reviewer: two CSRF secrets, the second page from the cache
        browser = Client(enforce_csrf_checks=True)
        browser.force_login(bob)
        html = unescape(browser.get(PARTIAL).content.decode())
        token = html.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
        assert _unmask_cipher_token(token) == browser.cookies["csrftoken"].value
        tokens.append(token)
        assert "expires in 4\xa0hours, 59\xa0minutes<" in html
    assert tokens[0] != tokens[1]
    # What is kept holds neither: both are written in on every render.
    (kept,) = rendered_cards._cards.values()
    assert "csrfmiddlewaretoken" in kept and token not in kept and tokens[0] not in kept
    assert "expires in 4" not in kept and EXPIRES_MARKER in kept
    # The cached card's form posts with that browser's token.
    response = browser.post(
        reverse("approvals:decide", args=[approval.public_id]), {"decision": "reject", "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302
    approval.refresh_from_db()
    assert approval.status == Status.REJECTED


# Committed as it goes, as in the portal: a card is known by its row's version (xmin), and every
# statement of one transaction writes the same version — the test's own transaction would hide a change.
@pytest.mark.django_db(transaction=True)
def test_a_vote_a_rename_or_a_changed_row_draws_the_card_again(client, bob, alice, support):
    approval = make_approval(support, target="customer T-1", approvals_required=2)
    client.force_login(bob)
    assert "0 of 2 approvals" in client.get(PARTIAL).content.decode()
    Vote.objects.create(approval=approval, reviewer=alice, reviewer_email=alice.email)
    assert "1 of 2 approvals — alice@acme.test" in unescape(client.get(PARTIAL).content.decode())
    support.name = "Support agent (EU)"
    support.save(update_fields=["name"])
    assert "Support agent (EU)" in client.get(PARTIAL).content.decode()
    with connection.cursor() as cursor:  # the database allows it on a pending request; the card must follow
        cursor.execute("UPDATE approvals_approvalrequest SET target = 'customer T-9' WHERE id = %s", [approval.pk])
    html = client.get(PARTIAL).content.decode()
    assert "Delete customer T-9" in html and "customer T-1" not in html


def test_each_reviewer_sees_their_own_card(client, bob, alice, support):
    """Four eyes hides Approve from the person the run acts for: the cache keeps a card per viewer."""
    make_approval(support, target="customer T-1", requested_by=bob.email)
    client.force_login(bob)
    assert "Requested by you" in client.get(PARTIAL).content.decode()
    client.force_login(alice)
    html = client.get(PARTIAL).content.decode()
    assert "Requested by you" not in html and 'value="approve"' in html


def test_the_cache_keeps_at_most_its_size(client, bob, support, monkeypatch):
    monkeypatch.setattr(rendered_cards, "max_cards", 3)
    rendered_cards.clear()
    make_many(support, 5)
    client.force_login(bob)
    assert client.get(PARTIAL).content.decode().count('class="card approval') == 5
    assert len(rendered_cards) == 3


@pytest.fixture
def halts_heard():
    """As in a server process whose LISTEN connection hears every halt made or lifted (edge/hub.py)."""
    from approvals.halts.services import halts_in_force

    halts_in_force.invalidate(live=True)
    yield halts_in_force
    halts_in_force.invalidate(live=False)


def test_the_frozen_banner_costs_no_query_where_the_process_knows_of_no_halt(
    client, alice, bob, acme, support, halts_heard, django_capture_on_commit_callbacks
):
    from approvals.halts.services import workspace_freeze

    make_approval(support)
    client.force_login(bob)
    client.get(QUEUE)  # learns that acme has no halt in force
    halt_reads = [sql for sql in _queries(client, QUEUE) if "approvals_halt" in sql]
    assert halt_reads == []
    with django_capture_on_commit_callbacks(execute=True):
        workspace_freeze(workspace=acme, user=alice, reason="The agent is deleting the wrong customers.")
    html = client.get(QUEUE).content.decode()
    assert "Workspace frozen" in html and "deleting the wrong customers" in html
