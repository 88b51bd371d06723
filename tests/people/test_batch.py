"""Batch decisions: several requests at once, each decided as if alone, nothing decided silently."""

import pytest

from approvals.models import ApprovalRequest, Status, Vote
from audit.models import AuditRecord
from tests.factories import make_approval, make_token_cap
from tests.helpers import error_of, make_config, make_rule, make_token, publish
from tests.people.support import group_world, grouped_approval

URL = "/api/v1/approvals/decide"


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent", pass_information_level="full")


def test_it_decides_each_request_with_its_own_decision_and_audit_record(bob_api, support):
    approvals = [make_approval(support, target=f"customer {n}") for n in range(3)]
    response = bob_api.post(URL, {"ids": [a.public_id for a in approvals], "decision": "reject", "reason": "Spam run"})
    assert response.status_code == 200
    assert response.json() == {"results": [{"id": a.public_id, "status": "rejected"} for a in approvals]}
    rows = ApprovalRequest.objects.filter(pk__in=[a.pk for a in approvals])
    assert {(r.status, r.reason, r.decided_by_email) for r in rows} == {("rejected", "Spam run", "bob@acme.test")}
    assert AuditRecord.objects.filter(action="approval.decided").count() == 3
    for approval in approvals:
        assert bob_api.get(f"/api/v1/approvals/{approval.public_id}").json()["receipt"]


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"decision": "approve"}, "ids"),
        ({"ids": [], "decision": "approve"}, "ids"),
        ({"ids": [f"apr_{n}" for n in range(1000)], "decision": "approve"}, "ids"),
        ({"ids": [f"apr_{n}" for n in range(101)], "decision": "approve"}, "ids"),
        ({"ids": "apr_x", "decision": "approve"}, "ids"),
        ({"ids": [7], "decision": "approve"}, "ids"),
        ({"ids": ["apr_x"]}, "decision"),
        ({"ids": ["apr_x"], "decision": "maybe"}, "decision"),
        ({"ids": ["apr_x"], "decision": "reject", "reason": "x" * 2001}, "reason"),
    ],
)
def test_it_names_the_field_of_each_bad_batch(bob_api, support, payload, field):
    response = bob_api.post(URL, payload)
    assert response.status_code == 400
    assert field in error_of(response)["fields"]


def test_it_decides_nothing_when_an_id_is_another_workspaces(bob_api, charlie, globex, support):
    ours = make_approval(support)
    theirs = make_approval(make_config(globex, "Globex agent"))
    response = bob_api.post(URL, {"ids": [ours.public_id, theirs.public_id, "apr_nope"], "decision": "approve"})
    assert response.status_code == 404
    error = error_of(response)
    assert theirs.public_id in error["fields"]["ids"] and "apr_nope" in error["fields"]["ids"]
    assert ours.public_id not in error["fields"]["ids"]
    assert ApprovalRequest.objects.filter(status=Status.PENDING).count() == 2


def test_engines_and_outsiders_may_not_decide_a_batch(engine_api, anonymous_api, charlie_api, support):
    approval = make_approval(support)
    body = {"ids": [approval.public_id], "decision": "approve"}
    assert anonymous_api.post(URL, body).status_code == 401
    assert engine_api.post(URL, body).status_code == 403
    assert charlie_api.post(URL, body).status_code == 404
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING


def test_it_answers_per_item_what_a_single_decision_would(make_api, acme, alice, bob):
    config = make_config(acme, "Mixed agent", pass_information_level="full")
    plain = make_rule(config)
    passkey = make_rule(config, require_passkey=True)
    quorum = make_rule(config, approvals_required=2)
    publish(config)
    world = group_world(acme, alice)
    items = {
        "plain": make_approval(config, rule_id=plain.public_id),
        "passkey": make_approval(config, rule_id=passkey.public_id, require_passkey=True),
        "quorum": make_approval(config, rule_id=quorum.public_id, approvals_required=2),
        "mine": make_approval(config, rule_id=plain.public_id, requested_by="bob@acme.test"),
        "group": grouped_approval(world),
        "cap": make_token_cap(config),
        "done": make_approval(config, rule_id=plain.public_id),
    }
    bob_api = make_api(make_token(acme, user=bob))
    bob_api.post(f"/api/v1/approvals/{items['done'].public_id}/decision", {"decision": "reject", "reason": "no"})
    response = bob_api.post(URL, {"ids": [a.public_id for a in items.values()], "decision": "approve"})
    assert response.status_code == 200
    results = {name: result for name, result in zip(items, response.json()["results"], strict=True)}
    assert results["plain"] == {"id": items["plain"].public_id, "status": "approved"}
    assert results["passkey"]["code"] == "passkey_required" and results["passkey"]["status"] == "pending"
    assert results["passkey"]["url"].endswith(f"/hitl/approvals/{items['passkey'].public_id}/")
    assert (results["quorum"]["code"], results["quorum"]["status"]) == ("voted", "pending")
    assert (results["mine"]["code"], results["mine"]["status"]) == ("self_approval", "pending")
    assert (results["group"]["code"], results["group"]["status"]) == ("not_an_approver", "pending")
    assert (results["cap"]["code"], results["cap"]["status"]) == ("invalid", "pending")
    assert (results["done"]["code"], results["done"]["status"]) == ("already_decided", "rejected")
    assert all(result.get("message") for name, result in results.items() if name != "plain")
    assert Vote.objects.filter(approval=items["quorum"]).count() == 1
    again = bob_api.post(URL, {"ids": [items["quorum"].public_id], "decision": "approve"}).json()["results"]
    assert again[0]["code"] == "already_voted"
