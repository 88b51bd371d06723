"""The history: decided and expired requests, newest first, filtered, keyset-paginated."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from approvals.models import ApprovalRequest, Status
from approvals.review.decide import approval_decide
from tests.factories import make_approval, make_many, make_token_cap
from tests.helpers import make_config, travel

HISTORY = "/hitl/approvals/history/"


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent")


def test_it_shows_who_decided_when_why_how_long_and_the_outcome(client, bob, support):
    start = timezone.now() - timedelta(minutes=10)
    approved = make_approval(support, target="customer A", created_at=start)
    with travel(timedelta(minutes=0)):
        approval_decide(approval=approved, user=bob, decision="approve", reason="Checked the ticket")
    ApprovalRequest.objects.filter(pk=approved.pk).update(
        execution_status="executed", execution_id="exe_42", executed_at=timezone.now()
    )
    unreported = make_approval(support, target="customer B", created_at=start + timedelta(minutes=1))
    approval_decide(approval=unreported, user=bob, decision="approve")
    client.force_login(bob)
    html = client.get(HISTORY).content.decode()
    row = html[html.index(f'id="row-{approved.public_id}"') :]
    row = row[: row.index("</tr>")]
    assert "Delete customer A" in row
    assert ">Approved</span> by bob@acme.test at" in row
    assert "Checked the ticket" in row
    assert "10m " in row  # waited about ten minutes
    assert "executed · exe_42" in row
    assert "outcome not reported" in html


def test_it_reads_expired_requests_as_nobody_answered_even_before_the_sweep(client, bob, support):
    swept = make_approval(support, target="customer swept", status=Status.EXPIRED, ttl=timedelta(hours=24))
    unswept = make_approval(support, target="customer unswept", ttl=timedelta(minutes=30))
    pending = make_approval(support, target="customer waiting", ttl=timedelta(hours=24))
    client.force_login(bob)
    with travel(timedelta(hours=1)):
        html = client.get(HISTORY).content.decode()
        only_expired = client.get(HISTORY, {"status": "expired"}).content.decode()
    assert html.count(">Expired</span> nobody answered; counted as rejected") == 2
    assert swept.public_id in only_expired and unswept.public_id in only_expired
    assert pending.public_id not in html
    assert "30m 00s" in html  # waited until its deadline


def test_it_still_lists_every_unswept_expiry_when_the_sweep_is_far_behind(client, bob, support, monkeypatch):
    # Past OVERDUE_SCAN_LIMIT the page stops trusting the small-index shortcut and reads them all.
    monkeypatch.setattr("approvals.review.selectors.OVERDUE_SCAN_LIMIT", 2)
    start = timezone.now()
    overdue = [
        make_approval(
            support, target=f"customer {n}", created_at=start + timedelta(seconds=n), ttl=timedelta(minutes=5)
        )
        for n in range(4)
    ]
    client.force_login(bob)
    with travel(timedelta(hours=1)):
        html = client.get(HISTORY).content.decode()
    assert html.count(">Expired</span> nobody answered; counted as rejected") == 4
    positions = [html.index(approval.public_id) for approval in reversed(overdue)]
    assert positions == sorted(positions)  # newest first


def test_it_lists_newest_first_and_filters_by_status_config_kind_and_date(client, alice, bob, acme, support):
    notebook = make_config(acme, "Data notebook")
    now = timezone.now()
    old = make_approval(support, target="customer old", created_at=now - timedelta(days=3), ttl=timedelta(days=4))
    cell = make_approval(
        notebook, boundary="cell", target="12", created_at=now - timedelta(days=1), ttl=timedelta(days=2)
    )
    cap = make_token_cap(support, created_at=now - timedelta(hours=1))
    for approval, decision in ((old, "reject"), (cell, "approve"), (cap, "stop")):
        approval_decide(approval=approval, user=alice, decision=decision)
    client.force_login(bob)

    def ids(**query) -> list[str]:
        html = client.get(HISTORY, query).content.decode()
        found = [(html.index(f'id="row-{a.public_id}"'), a.public_id) for a in (old, cell, cap) if a.public_id in html]
        return [public_id for _, public_id in sorted(found)]

    assert ids() == [cap.public_id, cell.public_id, old.public_id]
    assert ids(status="rejected") == [cap.public_id, old.public_id]
    assert ids(config=notebook.public_id) == [cell.public_id]
    assert ids(kind="token_cap") == [cap.public_id]
    assert ids(kind="cell") == [cell.public_id]
    yesterday = (now - timedelta(days=1)).date().isoformat()
    assert ids(date_from=yesterday) == [cap.public_id, cell.public_id]
    assert ids(date_to=(now - timedelta(days=2)).date().isoformat()) == [old.public_id]
    # A filter value nobody offered is shown as an error, never a 500.
    response = client.get(HISTORY, {"status": "bogus", "date_from": "yesterday"})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()


def test_it_pages_with_a_cursor_and_never_counts_the_table(client, bob, support):
    rows = make_many(support, 120, status=Status.REJECTED, decided_by_email="bob@acme.test")
    client.force_login(bob)
    seen: list[str] = []
    url = HISTORY + "?status=rejected"
    pages = 0
    while url:
        with CaptureQueriesContext(connection) as queries:
            html = client.get(url).content.decode()
        # A row's comment count is a subquery over that row's comments; the table itself is never counted.
        assert not any("COUNT(*)" in q["sql"].upper() for q in queries)
        seen += [r.public_id for r in rows if f'id="row-{r.public_id}"' in html]
        pages += 1
        marker = 'rel="next"'
        if marker in html:
            href = html[: html.index(marker)].rsplit('href="', 1)[1].split('"')[0]
            url = HISTORY + href.replace("&amp;", "&")
        else:
            url = None
    assert pages == 3
    assert sorted(seen) == sorted(r.public_id for r in rows) and len(seen) == len(set(seen))


def test_it_survives_a_cursor_it_did_not_write(client, bob, support):
    client.force_login(bob)
    assert client.get(HISTORY, {"cursor": "not-a-cursor"}).status_code == 200


def test_it_runs_the_same_queries_with_10_and_with_1000_requests(client, bob, support):
    make_many(support, 10, status=Status.APPROVED, decided_by_email="bob@acme.test")
    client.force_login(bob)
    client.get(HISTORY)

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(HISTORY, {"status": "approved"}).status_code == 200
        return len(queries)

    with_10 = count()
    make_many(support, 990, status=Status.APPROVED, decided_by_email="bob@acme.test")
    assert count() == with_10 <= 7  # …and one for the frozen-workspace banner every page shows


def test_it_shows_no_other_workspaces_requests(client, charlie, support):
    make_approval(support, status=Status.APPROVED)
    client.force_login(charlie)
    assert "No decided or expired requests match." in client.get(HISTORY).content.decode()


def test_it_filters_by_rule_by_who_decided_and_by_text_and_keeps_them_in_its_links(client, alice, bob, support):
    refund = make_approval(support, rule_id="rul_refunds", target="customer T-1", summary="Refund the order")
    export = make_approval(support, rule_id="rul_exports", target="customer T-2", operation="export")
    approval_decide(approval=refund, user=alice, decision="approve", reason="Goodwill")
    approval_decide(approval=export, user=bob, decision="reject", reason="Legal hold")
    client.force_login(bob)

    def ids(**query) -> set[str]:
        html = client.get(HISTORY, query).content.decode()
        return {a.public_id for a in (refund, export) if f'id="row-{a.public_id}"' in html}

    assert ids(rule="rul_refunds") == {refund.public_id}
    assert ids(decided_by="BOB@acme") == {export.public_id}
    assert ids(q="legal hold") == {export.public_id}  # the reason
    assert ids(q="refund the") == {refund.public_id}  # the summary
    assert ids(q=export.public_id) == {export.public_id}
    assert ids(q="nothing like it") == set()
    assert client.get(HISTORY, {"rule": "r" * 25}).status_code == 200  # too long: said beside the field
    html = client.get(HISTORY, {"q": "customer", "cursor": "x"}).content.decode()
    assert 'href="?q=customer" rel="first"' in html  # ← Newest keeps the filter, drops the cursor
