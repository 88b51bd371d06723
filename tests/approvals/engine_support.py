"""Helpers for the engine API tests: a published config, registration bodies, a cross-thread query counter."""

import contextlib
import threading

from django.db.backends import utils as db_utils

from approvals.models import ApprovalRequest
from approvals.review.decide import approval_decide
from rules.vocabulary import match_field

from ..asgi import AsgiServer
from ..factories import make_bulk
from ..helpers import make_config, make_rule, publish


def make_support_config(workspace, user=None, **settings):
    """Published v1: gate every delete (entry), gate mcp_billing (entry), a disabled worker rule."""
    settings.setdefault("pass_information_level", "full")
    settings.setdefault("token_cap_per_turn", 1000)
    config = make_config(workspace, **settings)
    make_rule(config, message="Deletes of customer data need a second pair of eyes.")
    make_rule(config, kind="mcp_server", match="mcp_billing", message="Refunds move real money.", order=20)
    make_rule(config, kind="worker", match="*", enabled=False, order=30)
    publish(config, user)
    return config


def rule_ids(config, version: int = 1) -> list[str]:
    return [rule["id"] for rule in config.versions.get(number=version).rules]


def gate_body(config, version: int = 1, rule: int = 0, **overrides) -> dict:
    """A registration under the version's `rule`-th rule, of a call that rule takes in (its `match`)."""
    rules = config.versions.get(number=version).rules
    named = [frozen for frozen in rules if frozen["id"] == overrides.get("rule_id")]
    frozen = named[0] if named else rules[rule]
    body = {
        "kind": "gate",
        "config_id": config.public_id,
        "config_version": version,
        "rule_id": frozen["id"],
        "run_id": "run_1",
        "thread_id": "thr_1",
        "caller": "support-bot",
        "target": "customer T-4821",
        "operation": "delete",
        "summary": "Delete the customer record",
        "arguments": {"customer_id": "T-4821"},
    }
    if frozen["match"] != "*":
        body[match_field(frozen["kind"])] = frozen["match"]
    body.update(overrides)
    return {key: value for key, value in body.items() if value is not ...}


def token_cap_body(config, version: int = 1, **overrides) -> dict:
    body = {
        "kind": "token_cap",
        "config_id": config.public_id,
        "config_version": version,
        "run_id": "run_1",
        "thread_id": "thr_1",
        "caller": "support-bot",
        "scope": "turn",
        "tokens_used": 1200,
        "token_cap": 1000,
    }
    body.update(overrides)
    return body


def decide(public_id: str, user, decision: str, reason: str = ""):
    approval = ApprovalRequest.objects.get(public_id=public_id)
    return approval_decide(approval=approval, user=user, decision=decision, reason=reason)[0]


class QueryCounter:
    """Counts SQL statements run by any thread (the live server's included) while active."""

    def __init__(self):
        self.statements: list[str] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.statements)


@contextlib.contextmanager
def count_queries():
    """`CaptureQueriesContext` sees one connection; the live server answers on its own threads' connections."""
    counter = QueryCounter()
    original = db_utils.CursorWrapper.execute

    def execute(self, sql, params=None):
        with counter._lock:
            counter.statements.append(sql)
        return original(self, sql, params)

    db_utils.CursorWrapper.execute = execute
    try:
        yield counter
    finally:
        db_utils.CursorWrapper.execute = original


def bulk_requests(config, count: int, *, engine_key=None) -> None:
    """`count` decided and pending requests, so query counts are checked against a full table."""
    make_bulk(config, count, engine_key=engine_key, statuses=("approved", "pending"))


# The long-poll tests under the ASGI server (test_waiting_asgi) cap each key at
# this many waits, so that a test reaches the cap with a few.
WAIT_CAP = 2


@contextlib.contextmanager
def capped_server(**env: str):
    """The production ASGI server on the test database, each key capped at WAIT_CAP waits."""
    with AsgiServer(HITL_MAX_WAITS_PER_KEY=str(WAIT_CAP), **env) as running:
        yield running


def register_gates(api, config, n: int) -> list[str]:
    """Register n gated calls of `config` over HTTP (run_0 … run_n-1); their ids."""
    ids = []
    for i in range(n):
        response = api.post("/api/v1/approvals", json=gate_body(config, run_id=f"run_{i}"))
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
    return ids


def register(api, body: dict) -> dict:
    """Register one request over HTTP; the portal's answer (201, a new request)."""
    response = api.post("/api/v1/approvals", json=body)
    assert response.status_code == 201, response.text
    return response.json()
