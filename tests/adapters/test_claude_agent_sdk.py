"""hitl_client.claude_agent_sdk: `can_use_tool` called as the Claude Agent SDK calls it, a person answering."""

import asyncio

import pytest
from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext
from hitl_client import AsyncHitlClient
from hitl_client.claude_agent_sdk import HitlPermissions

from approvals.models import ApprovalRequest

from ..helpers import make_token
from .claude_hook import make_coding_config
from .support import Reviewer

pytestmark = pytest.mark.live_http

DESTROY = {"command": "terraform destroy -auto-approve", "description": "Tear down staging"}


@pytest.fixture
def engine_key(acme) -> str:
    return make_token(acme, engine="deploy-agent")


@pytest.fixture
def coding(acme, alice):
    return make_coding_config(acme, alice)


def can_use_tool(url: str, key: str, config, tool_name: str, tool_input: dict, *, tool_use_id="toolu_01", **options):
    """What the SDK does for a permission request: await can_use_tool(name, input, ToolPermissionContext(…))."""

    async def run():
        client = AsyncHitlClient(url, key)
        permissions = HitlPermissions(client, await client.served(config.public_id), run_id="deploy-42", **options)
        context = ToolPermissionContext(tool_use_id=tool_use_id, suggestions=[])
        return await permissions(tool_name, tool_input, context)

    return asyncio.run(run())


def test_an_approved_call_is_allowed_as_proposed(live_server, engine_key, coding, bob_api):
    reviewer = Reviewer(bob_api, "approve")

    result = can_use_tool(live_server.url, engine_key, coding, "Bash", DESTROY)
    [decided] = reviewer.finish()

    assert result == PermissionResultAllow(updated_input=None)
    assert (decided["operation"], decided["caller"], decided["run_id"]) == (
        "terraform destroy",
        "claude-agent-sdk",
        "deploy-42",
    )


def test_a_rejected_call_is_denied_with_the_reviewers_words(live_server, engine_key, coding, bob_api):
    reviewer = Reviewer(bob_api, "reject", "Staging is in use by the demo")

    result = can_use_tool(live_server.url, engine_key, coding, "Bash", DESTROY)
    reviewer.finish()

    assert isinstance(result, PermissionResultDeny)
    assert "Staging is in use by the demo" in result.message


def test_an_edited_call_is_allowed_with_the_edit_as_updated_input(live_server, engine_key, coding, bob_api):
    edited = {"command": "terraform destroy -target=aws_instance.scratch", "description": "Only the scratch box"}
    reviewer = Reviewer(bob_api, "approve", body={"arguments": edited})

    result = can_use_tool(live_server.url, engine_key, coding, "Bash", DESTROY)
    reviewer.finish()

    assert result == PermissionResultAllow(updated_input=edited)


def test_a_call_nothing_gates_is_allowed_or_handed_to_otherwise(live_server, engine_key, coding):
    asked = []

    async def otherwise(tool_name, tool_input, context):
        asked.append((tool_name, context.tool_use_id))
        return PermissionResultDeny(message="not in this sandbox")

    plain = can_use_tool(live_server.url, engine_key, coding, "Bash", {"command": "ls"})
    handed = can_use_tool(live_server.url, engine_key, coding, "Read", {"file_path": "/x"}, otherwise=otherwise)

    assert plain == PermissionResultAllow()
    assert handed == PermissionResultDeny(message="not in this sandbox")
    assert asked == [("Read", "toolu_01")]
    assert not ApprovalRequest.objects.exists()


def test_claudes_questions_are_asked_in_the_portal_and_answered_the_sdks_way(live_server, engine_key, coding, bob_api):
    questions = [
        {
            "question": "Which environment should I deploy to?",
            "header": "Environment",
            "options": [{"label": "staging", "description": "safe"}, {"label": "production"}],
            "multiSelect": False,
        },
        {
            "question": "Which checks should run first?",
            "header": "Checks",
            "options": [{"label": "unit"}, {"label": "e2e"}, {"label": "lint"}],
            "multiSelect": True,
        },
    ]
    reviewer = Reviewer(bob_api, "answer", body={"answers": {"q1": "staging", "q2": ["unit", "lint"]}})

    result = can_use_tool(live_server.url, engine_key, coding, "AskUserQuestion", {"questions": questions})
    [decided] = reviewer.finish()

    assert result == PermissionResultAllow(
        updated_input={
            "questions": questions,
            "answers": {
                "Which environment should I deploy to?": "staging",
                "Which checks should run first?": "unit, lint",
            },
        }
    )
    assert decided["kind"] == "question"
    assert decided["title"] == "Environment · Checks"


def test_declined_questions_are_a_deny_saying_so(live_server, engine_key, coding, bob_api):
    options = [{"label": "yes"}, {"label": "no"}]
    question = {"question": "Drop the legacy table?", "header": "Legacy", "options": options}
    reviewer = Reviewer(bob_api, "decline", "Ask the DBA, not me")

    result = can_use_tool(live_server.url, engine_key, coding, "AskUserQuestion", {"questions": [question]})
    reviewer.finish()

    assert isinstance(result, PermissionResultDeny)
    assert "Ask the DBA, not me" in result.message


def test_a_portal_that_cannot_be_reached_denies(live_server, engine_key, coding):
    async def run():
        served = await AsyncHitlClient(live_server.url, engine_key).served(coding.public_id)
        permissions = HitlPermissions(AsyncHitlClient("http://127.0.0.1:9", engine_key, retry_for=0.5), served)
        return await permissions("Bash", DESTROY, ToolPermissionContext(tool_use_id="toolu_9"))

    result = asyncio.run(run())

    assert isinstance(result, PermissionResultDeny)
    assert "could not be asked" in result.message and "unreachable" in result.message
