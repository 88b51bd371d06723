"""The tool table the Claude Code hook and the Claude Agent SDK adapter share (hitl_client.claude_tools)."""

import pytest
from hitl_client.claude_tools import ToolCall, ToolTable


@pytest.mark.parametrize(
    ("tool_name", "tool_input", "call"),
    [
        ("mcp__billing__refund", {"amount": 5}, ToolCall("mcp_server", "mcp_billing", "refund")),
        ("mcp__github_enterprise__create_pr", {}, ToolCall("mcp_server", "mcp_github_enterprise", "create_pr")),
        ("Task", {"subagent_type": "db-migrator", "prompt": "…"}, ToolCall("worker", "db-migrator", "Task")),
        ("Agent", {"prompt": "…"}, ToolCall("worker", "general-purpose", "Agent")),
        (
            "NotebookEdit",
            {"notebook_path": "/w/a.ipynb", "edit_mode": "delete"},
            ToolCall("cell", "/w/a.ipynb", "delete"),
        ),
        ("Bash", {"command": "rm -rf build/out"}, ToolCall("delete", "build/out", "rm")),
        ("Bash", {"command": "sudo rm -f /etc/hosts"}, ToolCall("delete", "/etc/hosts", "rm")),
        ("Bash", {"command": "rmdir old"}, ToolCall("delete", "old", "rmdir")),
        ("Bash", {"command": "git clean -fdx"}, ToolCall("delete", "git clean -fdx", "git clean")),
        (
            "Bash",
            {"command": "git push --force origin main"},
            ToolCall("delete", "git push --force origin main", "git push --force"),
        ),
        ("Bash", {"command": "git push -f"}, ToolCall("delete", "git push -f", "git push --force")),
        (
            "Bash",
            {"command": "git reset --hard HEAD~3"},
            ToolCall("delete", "git reset --hard HEAD~3", "git reset --hard"),
        ),
        ("Bash", {"command": "psql -c 'DROP TABLE orders'"}, ToolCall("delete", "orders", "DROP")),
        ("Bash", {"command": "psql -c 'truncate table users'"}, ToolCall("delete", "users", "TRUNCATE")),
        ("Bash", {"command": 'sqlite3 app.db "DELETE FROM sessions"'}, ToolCall("delete", "sessions", "DELETE FROM")),
        (
            "Bash",
            {"command": "kubectl -n prod delete deployment web"},
            ToolCall("delete", "kubectl -n prod delete deployment web", "kubectl delete"),
        ),
        (
            "Bash",
            {"command": "terraform destroy -auto-approve"},
            ToolCall("delete", "terraform destroy -auto-approve", "terraform destroy"),
        ),
        (
            "Write",
            {"file_path": "/w/m.sql", "content": "DROP TABLE IF EXISTS legacy;"},
            ToolCall("delete", "legacy", "DROP"),
        ),
        (
            "Edit",
            {"file_path": "/w/m.sql", "old_string": "x", "new_string": "delete from audit"},
            ToolCall("delete", "audit", "DELETE FROM"),
        ),
    ],
)
def test_it_maps_a_tool_call_to_the_gated_call_it_is(tool_name, tool_input, call):
    assert ToolTable().call_of(tool_name, tool_input) == call


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "docker run --rm alpine true",
        "echo performance",
        "git push origin main",
        "npm run format",
        "truncate -s 0 x",
    ],
)
def test_it_leaves_what_destroys_nothing_alone(command):
    assert ToolTable().call_of("Bash", {"command": command}) is None


@pytest.mark.parametrize(
    "tool_input",
    [
        {"file_path": "/w/run.sh", "content": "rm -rf /"},
        {"file_path": "/w/notes.md", "content": "We dropped the idea."},
    ],
)
def test_a_file_written_is_read_for_sql_only(tool_input):
    assert ToolTable().call_of("Write", tool_input) is None


@pytest.mark.parametrize(
    "command",
    ["rm -rf build/a src", "rm -rf build/a; rm -rf src", "rm -rf build/x && git reset --hard", "rm build/x -rf"],
)
def test_a_command_destroying_more_than_one_thing_is_judged_whole(command):
    """A condition reading the target (`target.startsWith("build/")`) must never let an unseen second object through."""
    assert ToolTable().call_of("Bash", {"command": command}).target == command
