"""The request's page shows what the engine reported after the approval: executed or failed, its detail, and a
warning when what ran is not what was approved (docs/api.md, Outcome)."""

import pytest

from .engine_support import decide, gate_body


@pytest.fixture
def approved(engine_api, bob, support) -> dict:
    approval = engine_api.post("/api/v1/approvals", json=gate_body(support)).json()
    decide(approval["id"], bob, "approve")
    return approval


def _page(client, bob, approval: dict) -> str:
    client.force_login(bob)
    response = client.get(f"/hitl/approvals/{approval['id']}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_shows_an_executed_call_and_its_detail(client, engine_api, bob, approved):
    assert 'id="execution"' not in _page(client, bob, approved)  # nothing reported yet

    engine_api.post(
        f"/api/v1/approvals/{approved['id']}/outcome",
        json={"status": "executed", "execution_id": "exec_42", "detail": "3 rows deleted"},
    )
    html = _page(client, bob, approved)

    assert "Outcome reported by the engine: <strong>executed · exec_42</strong>" in html
    assert "“3 rows deleted”" in html
    assert "digest-mismatch" not in html


def test_the_page_shows_a_failed_call_that_ran_something_else_with_the_warning(client, engine_api, bob, approved):
    engine_api.post(
        f"/api/v1/approvals/{approved['id']}/outcome",
        json={"status": "failed", "detail": "CRM timed out", "call_digest": "0" * 64},
    )

    html = _page(client, bob, approved)

    assert "Outcome reported by the engine: <strong>failed</strong>" in html
    assert "“CRM timed out”" in html
    assert 'id="digest-warning"' in html and "0" * 64 in html
