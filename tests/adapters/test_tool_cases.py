"""clients/conformance/tool_cases.json, the Python side: each tool call is the gated call the table says.

The TypeScript adapter runs the same file (clients/typescript/test/tool-cases.test.js): both read
clients/conformance/tool_patterns.json, so a rule gates the same calls whichever client asks.
"""

import json
from pathlib import Path

import pytest
from hitl_client import claude_tools
from hitl_client.claude_tools import ToolTable

CONFORMANCE = Path(__file__).resolve().parents[2] / "clients" / "conformance"
CASES = json.loads((CONFORMANCE / "tool_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[case["about"] for case in CASES])
def test_each_tool_call_is_the_gated_call_the_table_says(case):
    table = ToolTable().extended(case["map"]) if "map" in case else ToolTable()
    call = table.call_of(case["tool"], case["input"])
    assert (call._asdict() if call else None) == case["call"]


def test_the_package_reads_the_one_table():
    """The package's tool_patterns.json is the conformance table itself (a link), not a copy that may drift."""
    assert Path(claude_tools.TABLE_FILE).resolve() == (CONFORMANCE / "tool_patterns.json").resolve()


def test_the_table_covers_the_contract_and_every_pattern_is_exercised():
    names = {pattern.name for pattern in claude_tools.PATTERNS}
    assert names >= {"rm", "rmdir", "git clean", "git push --force", "git reset --hard", "DROP", "TRUNCATE"}
    assert names >= {"DELETE FROM", "kubectl delete", "terraform destroy"}
    operations = {case["call"]["operation"] for case in CASES if case["call"] and "map" not in case}
    assert names <= operations, f"no case exercises {sorted(names - operations)}"
    assert len(CASES) >= 50
