"""A request's own page is reachable: linked from every card and every history row; decided, it shows why."""

import pytest

from approvals.review.decide import approval_decide
from tests.factories import make_approval, make_token_cap
from tests.helpers import make_config

QUEUE_CARDS = "/hitl/approvals/queue/"


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent", pass_information_level="full")


def detail_link(approval) -> str:
    return f'href="/hitl/approvals/{approval.public_id}/"'


def test_every_card_links_to_its_request_page(client, bob, support):
    gate = make_approval(support)
    cap = make_token_cap(support)
    client.force_login(bob)

    html = client.get("/hitl/approvals/").content.decode()

    for approval in (gate, cap):
        card = html[html.index(f'id="card-{approval.public_id}"') :]
        assert detail_link(approval) in card[: card.index("</article>")]
    assert client.get(f"/hitl/approvals/{gate.public_id}/").status_code == 200


def test_every_history_row_links_to_its_request_page(client, bob, support):
    rows = [make_approval(support, target=f"customer {n}") for n in range(3)]
    for approval in rows:
        approval_decide(approval=approval, user=bob, decision="reject", reason="not today")
    client.force_login(bob)

    html = client.get("/hitl/approvals/history/").content.decode()

    for approval in rows:
        row = html[html.index(f'id="row-{approval.public_id}"') :]
        assert detail_link(approval) in row[: row.index("</tr>")]


def test_the_decided_page_and_the_decided_line_show_the_reason(client, bob, support):
    approval = make_approval(support)
    client.force_login(bob)

    decided = client.post(
        f"/hitl/approvals/{approval.public_id}/decide/",
        {"decision": "approve", "reason": "Ticket T-4821 checked"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    page = client.get(f"/hitl/approvals/{approval.public_id}/").content.decode()

    line = decided[decided.index('class="decided-line"') :]
    assert "Approved by bob@acme.test" in line[:200] and "Ticket T-4821 checked" in line[:300]
    assert "Ticket T-4821 checked" in page[page.index('id="request"') :]


def test_a_token_cap_card_does_not_say_what_will_run(client, bob, support):
    cap = make_token_cap(support, level="full")
    client.force_login(bob)

    html = client.get("/hitl/approvals/").content.decode()

    card = html[html.index(f'id="card-{cap.public_id}"') :]
    card = card[: card.index("</article>")]
    assert "what will run" not in card
    assert "tokens used" in card
