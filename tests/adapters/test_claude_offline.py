"""Claude Code itself, offline: the CLI the claude-agent-sdk wheel ships, a scripted Messages API, the live portal.

The model wants `rm -rf build/out` in a throwaway project. With `hitl-hook` as its PreToolUse hook
(and, through the SDK, with `HitlPermissions` as `can_use_tool`), a person's answer in the portal
decides whether the directory is gone, and what Claude reads back.
"""

import asyncio
import json
import os
import subprocess
from pathlib import Path

import claude_agent_sdk
import pytest
from claude_agent_sdk import ClaudeAgentOptions, query
from hitl_client import AsyncHitlClient
from hitl_client.claude_agent_sdk import HitlPermissions

from ..helpers import make_token
from .claude_hook import HOOK, make_coding_config
from .fake_anthropic import FakeAnthropic, offline_env
from .support import Reviewer

pytestmark = pytest.mark.live_http

CLAUDE = str(Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude")
CLEAN = {"command": "rm -rf build/out", "description": "Clean the build output"}


@pytest.fixture
def engine_key(acme) -> str:
    return make_token(acme, engine="claude-code")


@pytest.fixture
def coding(acme, alice):
    return make_coding_config(acme, alice)


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "project" / "build" / "out" / "cache").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    return tmp_path / "project"


def claude_print(project: Path, api: FakeAnthropic, hook_command: str, portal_env: dict) -> dict:
    """`claude -p` in the project with the hook in its settings, as a developer would run it."""
    settings = project.parent / "settings.json"
    hook = {"type": "command", "timeout": 120, "command": hook_command}
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HITL_", "ANTHROPIC_", "CLAUDE"))}
    env.update(offline_env(api.url, str(project.parent / "home")), **portal_env)
    done = subprocess.run(
        [CLAUDE, "-p", "Clean the build", "--settings", str(settings), "--output-format", "json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_claude_code_runs_what_the_reviewer_approved(live_server, engine_key, coding, project, bob_api):
    reviewer = Reviewer(bob_api, "approve", timeout=120)
    with FakeAnthropic("Bash", CLEAN) as api:
        result = claude_print(
            project,
            api,
            f"{HOOK} claude-code --config {coding.public_id}",
            {"HITL_URL": live_server.url, "HITL_ENGINE_KEY": engine_key},
        )
    [decided] = reviewer.finish()

    assert not (project / "build" / "out").exists()
    assert result["permission_denials"] == []
    assert (decided["operation"], decided["target"], decided["run_id"]) == ("rm", "build/out", result["session_id"])


def test_claude_reads_the_reviewers_reason_and_nothing_is_deleted(live_server, engine_key, coding, project, bob_api):
    reviewer = Reviewer(bob_api, "reject", "Keep build/out, the release reads it", timeout=120)
    with FakeAnthropic("Bash", CLEAN) as api:
        claude_print(
            project,
            api,
            f"{HOOK} claude-code --config {coding.public_id}",
            {"HITL_URL": live_server.url, "HITL_ENGINE_KEY": engine_key},
        )
    reviewer.finish()

    assert (project / "build" / "out" / "cache").is_dir()
    [seen] = api.tool_results
    assert seen["is_error"] is True
    assert "bob@acme.test rejected this call: Keep build/out, the release reads it" in json.dumps(seen["content"])


def test_claude_code_runs_the_reviewers_edit(live_server, engine_key, coding, project, bob_api):
    edited = {"command": "rm -rf build/out/cache", "description": "Only the cache"}
    reviewer = Reviewer(bob_api, "approve", body={"arguments": edited}, timeout=120)
    with FakeAnthropic("Bash", CLEAN) as api:
        claude_print(
            project,
            api,
            f"{HOOK} claude-code --config {coding.public_id}",
            {"HITL_URL": live_server.url, "HITL_ENGINE_KEY": engine_key},
        )
    reviewer.finish()

    assert (project / "build" / "out").is_dir()
    assert not (project / "build" / "out" / "cache").exists()


def test_the_agent_sdks_can_use_tool_is_answered_by_a_person(live_server, engine_key, coding, project, bob_api):
    reviewer = Reviewer(bob_api, "reject", "Not during the release freeze", timeout=120)

    async def run(api: FakeAnthropic) -> list:
        client = AsyncHitlClient(live_server.url, engine_key)
        permissions = HitlPermissions(client, await client.served(coding.public_id), run_id="sdk-run-1")
        options = ClaudeAgentOptions(
            can_use_tool=permissions,
            cwd=str(project),
            cli_path=CLAUDE,
            env=offline_env(api.url, str(project.parent / "home")),
            setting_sources=[],
        )

        async def prompt():
            yield {"type": "user", "message": {"role": "user", "content": "Clean the build"}}

        return [message async for message in query(prompt=prompt(), options=options)]

    with FakeAnthropic("Bash", CLEAN) as api:
        messages = asyncio.run(run(api))
    [decided] = reviewer.finish()

    assert (project / "build" / "out" / "cache").is_dir()
    assert "Not during the release freeze" in json.dumps(api.tool_results[0]["content"])
    assert (decided["caller"], decided["run_id"], decided["operation"]) == ("claude-agent-sdk", "sdk-run-1", "rm")
    assert type(messages[-1]).__name__ == "ResultMessage"


def test_the_hook_in_project_settings_gates_an_agent_sdk_run(live_server, engine_key, coding, project, bob_api):
    """The SDK runs Claude Code underneath: with project settings loaded, the project's hook answers."""
    hook = {"type": "command", "timeout": 120, "command": f"{HOOK} claude-code --config {coding.public_id}"}
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}})
    )
    reviewer = Reviewer(bob_api, "reject", "The hook said no", timeout=120)

    async def run(api: FakeAnthropic) -> list:
        env = offline_env(api.url, str(project.parent / "home"))
        env.update(HITL_URL=live_server.url, HITL_ENGINE_KEY=engine_key)
        options = ClaudeAgentOptions(cwd=str(project), cli_path=CLAUDE, env=env, setting_sources=["project"])
        return [message async for message in query(prompt="Clean the build", options=options)]

    with FakeAnthropic("Bash", CLEAN) as api:
        asyncio.run(run(api))
    [decided] = reviewer.finish()

    assert (project / "build" / "out" / "cache").is_dir()
    assert "The hook said no" in json.dumps(api.tool_results[0]["content"])
    assert decided["caller"] == "claude-code"
