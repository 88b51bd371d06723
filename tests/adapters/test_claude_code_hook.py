"""`hitl-hook claude-code`: the installed console script, fed Claude Code's PreToolUse JSON, against the live portal."""

import json
import time

import pytest
from django.utils import timezone

from approvals.expiry.expire import expire_requests
from approvals.models import ApprovalRequest

from ..helpers import make_config, make_rule, make_token, publish
from .claude_hook import (
    SESSION,
    BrokenPortal,
    decision_of,
    finish,
    hook_input,
    make_coding_config,
    run_hook,
    start_hook,
)
from .support import Reviewer, wait_until_pending

pytestmark = pytest.mark.live_http

DESTROY = hook_input("Bash", {"command": "terraform destroy -auto-approve", "description": "Tear down staging"})


@pytest.fixture
def engine_key(acme) -> str:
    return make_token(acme, engine="claude-code")


@pytest.fixture
def coding(acme, alice):
    return make_coding_config(acme, alice)


def hook(live_server, engine_key, config, stdin, *args, **options):
    return run_hook(stdin, "--config", config.public_id, *args, url=live_server.url, key=engine_key, **options)


def test_a_tool_nothing_gates_gets_no_answer_at_once(live_server, engine_key, coding):
    done = hook(live_server, engine_key, coding, hook_input("Bash", {"command": "ls -la build/"}))

    assert (done.returncode, done.stdout) == (0, "")
    assert not ApprovalRequest.objects.exists()


def test_a_destructive_call_the_served_table_does_not_gate_gets_no_answer(live_server, engine_key, acme, alice):
    config = make_config(acme, "Only MCP", pass_information_level="full")
    make_rule(config, kind="mcp_server", match="mcp_billing")
    publish(config, alice)

    done = hook(live_server, engine_key, config, DESTROY)

    assert (done.returncode, done.stdout) == (0, "")
    assert not ApprovalRequest.objects.exists()


def test_an_inert_config_gets_no_answer(live_server, engine_key, acme, alice, coding):
    acme.plan = "free"
    acme.save(update_fields=["plan"])

    done = hook(live_server, engine_key, coding, DESTROY)

    assert (done.returncode, done.stdout) == (0, "")
    assert not ApprovalRequest.objects.exists()


def test_an_approved_call_is_allowed_and_the_reviewer_saw_what_claude_wants(live_server, engine_key, coding, bob_api):
    reviewer = Reviewer(bob_api, "approve", "staging only, go ahead")

    decision = decision_of(hook(live_server, engine_key, coding, DESTROY))
    [decided] = reviewer.finish()

    assert decision["permissionDecision"] == "allow"
    assert "bob@acme.test" in decision["permissionDecisionReason"]
    assert "updatedInput" not in decision
    assert (decided["kind"], decided["boundary"], decided["operation"], decided["caller"]) == (
        "gate",
        "delete",
        "terraform destroy",
        "claude-code",
    )
    assert decided["target"] == "terraform destroy -auto-approve"
    assert decided["run_id"] == SESSION
    assert decided["arguments"] == DESTROY["tool_input"]
    assert "Bash in /home/dev/shop: terraform destroy -auto-approve" in decided["summary"]


def test_a_rejected_call_is_denied_with_the_reviewers_words(live_server, engine_key, coding, bob_api):
    reviewer = Reviewer(bob_api, "reject", "Not on a Friday")

    decision = decision_of(hook(live_server, engine_key, coding, DESTROY))
    reviewer.finish()

    assert decision["permissionDecision"] == "deny"
    assert "Not on a Friday" in decision["permissionDecisionReason"]
    assert "bob@acme.test" in decision["permissionDecisionReason"]


def test_an_edited_call_is_allowed_with_the_edit_as_updated_input(live_server, engine_key, coding, bob_api):
    edited = {"command": "rm -rf build/cache", "description": "Clean the cache only"}
    reviewer = Reviewer(bob_api, "approve", body={"arguments": edited})

    stdin = hook_input("Bash", {"command": "rm -rf build", "description": "Clean the build"})
    decision = decision_of(hook(live_server, engine_key, coding, stdin))
    [decided] = reviewer.finish()

    assert decision["permissionDecision"] == "allow"
    assert decision["updatedInput"] == edited
    assert (decided["operation"], decided["target"]) == ("rm", "build")


def test_an_expired_request_is_denied_saying_nobody_answered(live_server, engine_key, coding, bob_api):
    process = start_hook(DESTROY, "--config", coding.public_id, url=live_server.url, key=engine_key)
    [pending] = wait_until_pending(bob_api)
    ApprovalRequest.objects.filter(public_id=pending["id"]).update(expires_at=timezone.now())
    expire_requests(ApprovalRequest.objects.filter(public_id=pending["id"]))

    decision = decision_of(finish(process))
    assert decision["permissionDecision"] == "deny"
    assert "Nobody answered" in decision["permissionDecisionReason"]
    assert "rejected" not in decision["permissionDecisionReason"]


def test_a_wait_that_runs_out_is_denied_saying_nobody_answered(live_server, engine_key, coding):
    started = time.monotonic()
    decision = decision_of(hook(live_server, engine_key, coding, DESTROY, "--wait", "1"))

    assert time.monotonic() - started < 15
    assert decision["permissionDecision"] == "deny"
    assert "Nobody answered the approval request within 1 s" in decision["permissionDecisionReason"]
    assert ApprovalRequest.objects.get().status == "pending"  # still in the queue, as the reason says


def test_a_portal_that_cannot_be_reached_denies_naming_the_problem(engine_key, coding):
    done = run_hook(DESTROY, "--config", coding.public_id, url="http://127.0.0.1:9", key=engine_key)

    decision = decision_of(done)
    assert decision["permissionDecision"] == "deny"
    assert "could not be reached" in decision["permissionDecisionReason"]
    assert "http://127.0.0.1:9" in decision["permissionDecisionReason"]


def test_a_portal_answering_5xx_denies_naming_the_status(engine_key, coding):
    with BrokenPortal() as portal:
        done = run_hook(DESTROY, "--config", coding.public_id, url=portal.url, key=engine_key)

    decision = decision_of(done)
    assert decision["permissionDecision"] == "deny"
    assert "answered 503" in decision["permissionDecisionReason"]
    assert "The portal is restarting." in decision["permissionDecisionReason"]


def test_a_portal_that_times_out_denies_saying_so(engine_key, coding):
    with BrokenPortal(silent=True) as portal:
        started = time.monotonic()
        done = run_hook(DESTROY, "--config", coding.public_id, "--timeout", "1", url=portal.url, key=engine_key)

    assert time.monotonic() - started < 10
    decision = decision_of(done)
    assert decision["permissionDecision"] == "deny"
    assert "timed out" in decision["permissionDecisionReason"]


def test_on_error_ask_falls_back_to_claude_codes_own_prompt(engine_key, coding):
    done = run_hook(
        DESTROY, "--config", coding.public_id, "--on-error", "ask", url="http://127.0.0.1:9", key=engine_key
    )

    decision = decision_of(done)
    assert decision["permissionDecision"] == "ask"
    assert "could not be reached" in decision["permissionDecisionReason"]


@pytest.mark.parametrize(
    ("stdin", "says"),
    [
        ("rm -rf /", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({"hook_event_name": "PreToolUse", "tool_input": {}}), "names no tool"),
        (json.dumps(hook_input("Bash", {"command": "rm -rf /"}, hook_event_name="PostToolUse")), "PreToolUse"),
    ],
)
def test_bad_hook_input_is_answered_with_a_reason_not_a_traceback(engine_key, coding, stdin, says):
    done = run_hook(stdin, "--config", coding.public_id, url="http://127.0.0.1:9", key=engine_key)

    decision = decision_of(done)
    assert decision["permissionDecision"] == "deny"
    assert says in decision["permissionDecisionReason"]
    assert "Traceback" not in done.stdout + done.stderr


def test_a_hook_started_without_its_config_denies_naming_it(engine_key):
    done = run_hook(DESTROY, url="http://127.0.0.1:9", key=engine_key)

    decision = decision_of(done)
    assert decision["permissionDecision"] == "deny"
    assert "--config" in decision["permissionDecisionReason"]


def test_a_tool_the_table_does_not_know_gets_no_answer(live_server, engine_key, coding):
    done = hook(live_server, engine_key, coding, hook_input("WebFetch", {"url": "https://example.com"}))

    assert (done.returncode, done.stdout) == (0, "")


def test_a_map_file_adds_tools_and_patterns(live_server, engine_key, acme, alice, bob_api, tmp_path):
    config = make_config(acme, "Coding agent", pass_information_level="full")
    make_rule(config, kind="worker", match="web")
    make_rule(config, kind="delete", match="*", order=20)
    publish(config, alice)
    table = tmp_path / "hitl-map.json"
    table.write_text(
        json.dumps(
            {
                "tools": {"WebFetch": {"kind": "worker", "target": "web", "operation": "fetch"}},
                "patterns": [{"name": "helm uninstall", "regex": r"\bhelm\s+uninstall\s+(?P<object>\S+)"}],
            }
        )
    )
    reviewer = Reviewer(bob_api, "reject", "not now", count=2)

    fetched = hook(
        live_server, engine_key, config, hook_input("WebFetch", {"url": "https://x.test"}), "--map", str(table)
    )
    uninstall = hook_input("Bash", {"command": "helm uninstall shop-api"}, tool_use_id="toolu_02")
    uninstalled = hook(live_server, engine_key, config, uninstall, "--map", str(table))
    decided = reviewer.finish()

    assert decision_of(fetched)["permissionDecision"] == decision_of(uninstalled)["permissionDecision"] == "deny"
    assert {(d["boundary"], d["target"], d["operation"]) for d in decided} == {
        ("worker", "web", "fetch"),
        ("delete", "shop-api", "helm uninstall"),
    }


def test_a_map_file_that_does_not_parse_denies_naming_it(engine_key, coding, tmp_path):
    table = tmp_path / "hitl-map.json"
    table.write_text('{"patterns": [{"name": "bad", "regex": "(unclosed"}]}')

    done = run_hook(
        DESTROY, "--config", coding.public_id, "--map", str(table), url="http://127.0.0.1:9", key=engine_key
    )

    decision = decision_of(done)
    assert decision["permissionDecision"] == "deny"
    assert "patterns[0].regex" in decision["permissionDecisionReason"]


# docs/coding-agents.md's rule: `rm` inside build/ goes through, everything else destructive is asked.
BUILD_ONLY = '!(operation == "rm" && target.matches("^build/[A-Za-z0-9._/-]*$") && !target.contains(".."))'


def test_the_docs_condition_lets_rm_inside_build_through_and_asks_for_everything_else(
    live_server, engine_key, acme, alice, bob_api
):
    config = make_config(acme, "Coding agent", pass_information_level="full")
    make_rule(config, kind="delete", match="*", condition=BUILD_ONLY)
    publish(config, alice)
    through = ["rm -rf build/out", "rm build/app.js", "rm -rf build/"]
    asked = ["rm -rf src", "rm -rf build/../src", "rm -rf build/$(cat x)", "rm -rf build/a src", "git clean -fdx"]
    reviewer = Reviewer(bob_api, "reject", "ask me first", count=len(asked))

    answers = {
        command: hook(live_server, engine_key, config, hook_input("Bash", {"command": command}, tool_use_id=f"t{i}"))
        for i, command in enumerate(through + asked)
    }
    reviewer.finish()

    assert {command: answers[command].stdout for command in through} == dict.fromkeys(through, "")
    assert all(decision_of(answers[command])["permissionDecision"] == "deny" for command in asked)
    assert sorted(ApprovalRequest.objects.values_list("target", flat=True)) == sorted(
        ["src", "build/../src", "rm -rf build/$(cat x)", "rm -rf build/a src", "git clean -fdx"]
    )
