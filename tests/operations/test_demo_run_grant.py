"""The demo shows a newcomer a run grant: one of its rules allows them, and its pending card offers one."""

from approvals.models import ApprovalRequest
from launch import demo
from rules.models import Rule


def test_the_demo_has_a_rule_that_allows_run_grants_and_a_card_that_offers_one(db, client):
    acme, _key = demo._seed()
    granting = Rule.objects.get(config__workspace=acme, allow_run_grant=True)
    pending = ApprovalRequest.objects.get(workspace=acme, rule_id=granting.public_id)
    client.force_login(acme.memberships.get(role="admin").user)

    html = client.get("/hitl/approvals/").content.decode()

    card = html[html.index(f'id="card-{pending.public_id}"') :]
    assert "Approve for the rest of this run" in card[: card.index("</article>")]
