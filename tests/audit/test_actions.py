"""Every change of state named in API.md leaves its audit record, by the person or engine who made it."""

import json
from datetime import timedelta

from django.core.management import call_command

from approvals.expiry.expire import approval_sweep_overdue
from approvals.models import ApprovalRequest
from audit.models import AuditRecord
from tests.helpers import make_token, travel

from .helpers import assert_chain, export


class Caller:
    """The Django test client with a Bearer token: the API's real views, no live server needed."""

    def __init__(self, client, token: str):
        self.client, self.auth = client, f"Bearer {token}"

    def post(self, path: str, body: dict | None = None, status: int | None = None) -> dict:
        response = self.client.post(
            path, json.dumps(body or {}), content_type="application/json", HTTP_AUTHORIZATION=self.auth
        )
        assert status is None or response.status_code == status, response.content
        return response.json() if response.content else {}


def latest(workspace, action: str) -> AuditRecord:
    return AuditRecord.objects.filter(workspace=workspace, action=action).order_by("-id").first()


def test_every_change_named_in_api_md_appends_its_record(client, acme, alice, bob, capsys):
    as_alice = Caller(client, make_token(acme, user=alice))
    as_bob = Caller(client, make_token(acme, user=bob))

    config = as_alice.post("/api/v1/configs", {"name": "Support agent"}, 201)
    as_alice.client.patch(
        f"/api/v1/configs/{config['id']}",
        json.dumps({"pass_information_level": "full"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=as_alice.auth,
    )
    rule = as_alice.post(f"/api/v1/configs/{config['id']}/rules", {}, 201)
    contact = as_alice.post(
        f"/api/v1/configs/{config['id']}/contacts",
        {"name": "On call", "channel": "email", "channel_ref": "${HITL_ACME_ONCALL_EMAIL}"},
        201,
    )
    as_alice.post(f"/api/v1/configs/{config['id']}/publish", {"note": "first"}, 201)
    as_alice.client.patch(
        f"/api/v1/configs/{config['id']}/rules/{rule['id']}",
        json.dumps({"message": "Look twice"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=as_alice.auth,
    )
    as_alice.post(f"/api/v1/configs/{config['id']}/publish", {"note": "second"}, 201)
    as_alice.post(f"/api/v1/configs/{config['id']}/pin", {"version": 1}, 200)

    engine = Caller(client, make_token(acme, engine="support-engine"))
    body = {
        "kind": "gate",
        "config_id": config["id"],
        "config_version": 1,
        "rule_id": rule["id"],
        "run_id": "run_1",
        "thread_id": "thr_1",
        "caller": "support-bot",
        "target": "customer T-4821",
        "operation": "delete",
    }
    approved = engine.post("/api/v1/approvals", body, 201)
    as_bob.post(f"/api/v1/approvals/{approved['id']}/decision", {"decision": "approve", "reason": "ok"}, 200)
    engine.post(f"/api/v1/approvals/{approved['id']}/outcome", {"status": "failed", "detail": "timeout"}, 200)

    read_late = engine.post("/api/v1/approvals", {**body, "run_id": "run_2", "ttl_seconds": 60}, 201)
    swept = engine.post("/api/v1/approvals", {**body, "run_id": "run_3", "ttl_seconds": 60}, 201)
    with travel(timedelta(minutes=2)):
        # Deciding too late persists the expiry (expiry on read); the sweep expires the other.
        as_bob.post(f"/api/v1/approvals/{read_late['id']}/decision", {"decision": "approve"}, 200)
        assert approval_sweep_overdue() == 1

    call_command("hitl", "workspace", "plan", "acme", "enterprise")
    hint = make_token(acme, engine="spare")[:11]
    call_command("hitl", "token", "revoke", hint)
    call_command("hitl", "member", "add", "dave@acme.test", "--workspace", "acme", "--role", "reviewer")
    capsys.readouterr()

    records = export(client, make_token(acme, user=alice))
    assert_chain(records)
    by_action: dict[str, list[dict]] = {}
    for record in records:
        by_action.setdefault(record["action"], []).append(record)

    def one(action: str, object: str) -> dict:
        found = [record for record in by_action.get(action, []) if record["object"] == object]
        assert found, f"no {action} record for {object}; have {sorted(by_action)}"
        return found[-1]

    assert one("config.changed", config["id"])["actor"] == "alice@acme.test"
    assert one("config.changed", config["id"])["data"]["pass_information_level"] == "full"
    assert [r["data"]["change"] for r in by_action["rule.changed"]] == ["created", "updated"]
    assert one("rule.changed", rule["id"])["data"]["rule"]["message"] == "Look twice"
    assert one("contact.changed", contact["id"])["data"]["contact"]["channel_ref"] == "${HITL_ACME_ONCALL_EMAIL}"
    assert [r["data"]["version"] for r in by_action["config.published"]] == [1, 2]
    assert one("config.pinned", config["id"])["data"] == {"config_id": config["id"], "version": 1}

    registered = one("approval.registered", approved["id"])
    assert registered["actor"] == "engine:support-engine"
    assert registered["data"]["call_digest"] == approved["call_digest"]
    decided = one("approval.decided", approved["id"])
    assert (decided["actor"], decided["data"]["outcome"], decided["data"]["reason"]) == (
        "bob@acme.test",
        "approved",
        "ok",
    )
    outcome = one("approval.outcome", approved["id"])
    assert (outcome["actor"], outcome["data"]["status"]) == ("engine:support-engine", "failed")
    assert one("approval.expired", read_late["id"])["actor"] == "system"
    assert one("approval.expired", swept["id"])["actor"] == "system"
    assert "approval.decided" not in {r["action"] for r in records if r["object"] == read_late["id"]}

    assert one("workspace.plan_changed", "acme")["data"] == {"from": "pro", "to": "enterprise"}
    assert one("token.revoked", hint)["data"]["engine"] == "spare"
    assert {r["data"]["engine"] for r in by_action["token.created"]} >= {"support-engine", "spare"}
    assert one("member.changed", "dave@acme.test")["data"] == {"change": "added", "role": "reviewer"}
    assert one("member.changed", "bob@acme.test")["data"]["role"] == "reviewer"

    # Each request's story is complete, and nothing was recorded twice.
    assert ApprovalRequest.objects.count() == len(by_action["approval.registered"]) == 3
    assert len(by_action["approval.expired"]) == 2


def test_rule_and_contact_deletions_are_recorded_with_what_was_deleted(client, acme, alice):
    as_alice = Caller(client, make_token(acme, user=alice))
    config = as_alice.post("/api/v1/configs", {"name": "Support agent"}, 201)
    rule = as_alice.post(f"/api/v1/configs/{config['id']}/rules", {"message": "careful"}, 201)
    client.delete(f"/api/v1/configs/{config['id']}/rules/{rule['id']}", HTTP_AUTHORIZATION=as_alice.auth)

    deleted = latest(acme, "rule.changed")
    assert deleted.object == rule["id"]
    assert deleted.data["change"] == "deleted" and deleted.data["rule"]["message"] == "careful"


def test_a_refused_change_leaves_no_record(client, acme, alice):
    as_alice = Caller(client, make_token(acme, user=alice))
    before = AuditRecord.objects.filter(workspace=acme).count()
    as_alice.post("/api/v1/configs", {"name": ""}, 400)
    assert AuditRecord.objects.filter(workspace=acme).count() == before


def test_votes_and_run_grants_are_recorded_as_they_happen(client, acme, alice, bob):
    as_alice = Caller(client, make_token(acme, user=alice))
    as_bob = Caller(client, make_token(acme, user=bob))
    engine = Caller(client, make_token(acme, engine="support-engine"))
    config = as_alice.post("/api/v1/configs", {"name": "Support agent"}, 201)
    quorum = as_alice.post(f"/api/v1/configs/{config['id']}/rules", {"approvals_required": 2}, 201)
    granting = as_alice.post(
        f"/api/v1/configs/{config['id']}/rules", {"kind": "worker", "match": "*", "allow_run_grant": True}, 201
    )
    as_alice.post(f"/api/v1/configs/{config['id']}/publish", {}, 201)
    body = {
        "kind": "gate",
        "config_id": config["id"],
        "config_version": 1,
        "run_id": "run_1",
        "thread_id": "thr_1",
        "caller": "support-bot",
        "target": "customer T-4821",
        "operation": "delete",
    }

    voted = engine.post("/api/v1/approvals", {**body, "rule_id": quorum["id"]}, 201)
    as_bob.post(f"/api/v1/approvals/{voted['id']}/decision", {"decision": "approve", "reason": "checked"}, 200)
    as_alice.post(f"/api/v1/approvals/{voted['id']}/decision", {"decision": "approve"}, 200)

    first = engine.post("/api/v1/approvals", {**body, "rule_id": granting["id"]}, 201)
    answer = as_bob.post(f"/api/v1/approvals/{first['id']}/decision", {"decision": "approve", "grant": "run"}, 200)
    grant_id = answer["decision"]["grant_id"]
    covered = engine.post("/api/v1/approvals", {**body, "rule_id": granting["id"], "operation": "start"}, 201)
    assert covered["status"] == "approved" and covered["decision"]["grant_id"] == grant_id
    revoked = client.delete(f"/api/v1/grants/{grant_id}", HTTP_AUTHORIZATION=as_bob.auth)
    assert revoked.status_code == 204

    records = export(client, make_token(acme, user=alice))
    assert_chain(records)
    story = [(r["action"], r["actor"]) for r in records if r["object"] in (voted["id"], grant_id)]
    assert story == [
        ("approval.registered", "engine:support-engine"),
        ("approval.voted", "bob@acme.test"),
        ("approval.voted", "alice@acme.test"),
        ("approval.decided", "alice@acme.test"),
        ("grant.created", "bob@acme.test"),
        ("grant.used", "engine:support-engine"),
        ("grant.revoked", "bob@acme.test"),
    ]
    used = next(r for r in records if r["action"] == "grant.used")
    assert used["data"] == {"approval": covered["id"]}
