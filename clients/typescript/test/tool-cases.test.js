// clients/conformance/tool_cases.json, the TypeScript side: each tool call is the gated call the table says. No
// portal needed. The Python client runs the same file (tests/adapters/test_tool_cases.py): both read
// clients/conformance/tool_patterns.json, so a rule gates the same calls whichever client asks.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { ClaudeToolTable } from "hitl-client/claude-tools";
import { HitlClaude } from "hitl-client/claude-agent-sdk";

const CASES = JSON.parse(readFileSync(new URL("../../conformance/tool_cases.json", import.meta.url), "utf8")).cases;

for (const c of CASES) {
  test(`tool case: ${c.about}`, () => {
    const table = new ClaudeToolTable(c.map);
    assert.deepEqual(table.callOf(c.tool, c.input), c.call);
  });
}

test("the built package carries the one table, byte for byte", () => {
  const shipped = readFileSync(new URL("../dist/adapters/tool_patterns.json", import.meta.url), "utf8");
  assert.equal(shipped, readFileSync(new URL("../../conformance/tool_patterns.json", import.meta.url), "utf8"));
});

test("the canUseTool adapter maps by the same table, its `map` and `kinds` on top", () => {
  const served = { config_id: "cfg_1", version: 1, hitl: { state: "active" }, gates: [] };
  const claude = new HitlClaude(null, served, {
    runId: "r", kinds: { Deploy: "worker" },
    map: { patterns: [{ name: "helm uninstall", regex: "\\bhelm\\s+uninstall\\s+(?<object>\\S+)" }] },
  });
  assert.deepEqual(claude.map("Bash", { command: "rm -rf build/out" }), { kind: "delete", target: "build/out", operation: "rm" });
  assert.deepEqual(claude.map("Bash", { command: "helm uninstall web" }), { kind: "delete", target: "web", operation: "helm uninstall" });
  assert.deepEqual(claude.map("Deploy", {}), { kind: "worker", target: "Deploy", operation: "Deploy" });
  assert.equal(claude.map("Read", { file_path: "/etc/passwd" }), null);
});

test("a map it cannot read is refused, naming what is wrong", () => {
  assert.throws(() => new ClaudeToolTable({ tool: {} }), /unknown keys: tool/);
  assert.throws(() => new ClaudeToolTable({ tools: { X: { kind: "nope" } } }), /tools\.X: needs `kind`/);
  assert.throws(() => new ClaudeToolTable({ patterns: [{ name: "bad", regex: "(" }] }), /patterns\[0\]\.regex/);
  assert.throws(() => new ClaudeToolTable({ patterns: [{ regex: "x" }] }), /patterns\[0\]: needs `name`/);
});
