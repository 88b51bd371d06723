"""The conformance table (clients/conformance/cases.json, its README beside it), for the Python side.

One module sets a case's world up and drives its steps, so the portal's run (tests/approvals/
test_conformance.py), the client's (tests/test_client_conformance.py) and each adapter's run the
same cases the same way — and another language's client runs the same file its own way.
"""

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from hitl_client import GatedCall, _core

from approvals.expiry.expire import expire_requests
from approvals.expiry.undeliverable import approval_sweep_undeliverable
from approvals.models import ApprovalRequest
from people import services as people_services
from workspaces.services import workspace_set_plan

from .helpers import make_config, make_rule, publish, travel

CASES_PATH = Path(__file__).resolve().parents[1] / "clients" / "conformance" / "cases.json"
TABLE = json.loads(CASES_PATH.read_text(encoding="utf-8"))
DEFAULTS = TABLE["defaults"]


def cases(*, where=lambda case: True) -> list:
    """The table's cases that `where` keeps, as pytest params named by their ids."""
    return [pytest.param(case, id=case["id"]) for case in TABLE["cases"] if where(case)]


def is_gate(case: dict) -> bool:
    return "call" in case


def mismatches(expected: Any, actual: Any, path: str = "answer") -> list[str]:
    """Where `actual` differs from `expected`: every key `expected` names, recursively; nothing else."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r}"]
        found = []
        for key, value in expected.items():
            found += (
                mismatches(value, actual.get(key), f"{path}.{key}") if key in actual else [f"{path}.{key}: missing"]
            )
        return found
    return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]


def world(case: dict, workspace, admin):
    """The case's config, published (v1); then its plan (publishing on Free is refused, downgrading is not)."""
    config = make_config(
        workspace, "Conformance", pass_information_level=case["config"].get("pass_information_level", "full")
    )
    groups = _people(case, workspace, admin)
    for rule in case["config"]["rules"]:
        make_rule(config, **{**rule, "approver_groups": [groups[name] for name in rule.get("approver_groups", [])]})
    publish(config, admin)
    if case["config"].get("plan"):
        workspace_set_plan(workspace=workspace, plan=case["config"]["plan"])
    return config


def _people(case: dict, workspace, admin) -> dict[str, str]:
    """The case's approver groups (name → id, rules name them by name) and delegations (from → to, a day)."""
    groups = {}
    for group in case["config"].get("groups", []):
        made = people_services.group_create(workspace=workspace, name=group["name"], user=admin)
        for email in group["members"]:
            people_services.group_member_add(group=made, email=email, user=admin)
        groups[group["name"]] = made.public_id
    for delegation in case["config"].get("delegations", []):
        people_services.delegation_start(
            workspace=workspace,
            delegator=get_user_model().objects.get(email=delegation["from"]),
            delegate_email=delegation["to"],
            until=timezone.now() + timedelta(days=1),
        )
    return groups


def call_of(case: dict) -> GatedCall:
    return GatedCall(**{**DEFAULTS["run"], **case["call"]})


def before(case: dict, *, admin_api, reviewer_api, client, served: dict) -> None:
    """What happens before the engine asks: a halt of its run, or an earlier engine that started the call."""
    for step in case.get("before", []):
        if "halt_run" in step:
            halted = admin_api.post("/api/v1/runs/halt", {"run_id": DEFAULTS["run"]["run_id"], **step["halt_run"]})
            assert halted.status_code in (200, 201), halted.text
        if "started_before" in step:
            # The same registration the engine will make (same idempotency key), decided, and `started`
            # recorded by that earlier engine, which then died.
            call = call_of(case)
            approval = client.request_approval(served, _core.gate_of(served, call), call)
            decided = reviewer_api.post(f"/api/v1/approvals/{approval['id']}/decision", step["started_before"])
            assert decided.status_code == 200, decided.text
            client.report_outcome(approval["id"], status="started")


def act(step: dict, approval_id: str, *, reviewer_api) -> None:
    """One step a person (or the clock) takes while the request pends."""
    if "decide" in step:
        decided = reviewer_api.post(f"/api/v1/approvals/{approval_id}/decision", step["decide"])
        assert decided.status_code == 200, decided.text
    elif "withdraw" in step:  # the person the run acts for (the call's requested_by) takes it back
        withdrawn = reviewer_api.post(f"/api/v1/approvals/{approval_id}/withdraw", step["withdraw"])
        assert withdrawn.status_code == 200, withdrawn.text
    elif "expire" in step:
        with travel(timedelta(hours=25)):
            expire_requests(ApprovalRequest.objects.filter(public_id=approval_id))
    elif "undeliverable" in step:
        with travel(timedelta(seconds=601)):  # HITL_UNDELIVERABLE_SECONDS (600) and a moment
            assert approval_sweep_undeliverable() == 1
    # wait_timeout: nobody does anything; the engine's wait gives up.


def wait_timeout(case: dict) -> float:
    for step in case.get("steps", []):
        if "wait_timeout" in step:
            return step["wait_timeout"]
    return 20
