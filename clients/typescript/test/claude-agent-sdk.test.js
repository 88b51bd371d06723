// The Claude Agent SDK recipe (docs/engines.md): `canUseTool` and the hooks called as the SDK calls them —
// the tool name, its input, and the options with the AbortSignal and the tool use id.
import assert from "node:assert/strict";
import { test } from "node:test";

import { HitlClaude } from "hitl-client/claude-agent-sdk";

import { asReviewer, client, decide, pendingOf, portal, runId } from "./support.js";

async function gatesFor(run) {
  const hitl = client();
  return new HitlClaude(hitl, await hitl.served(portal.configId), { runId: run });
}

const asTheSdk = (gates, toolName, input, toolUseID) =>
  gates.canUseTool(toolName, input, { signal: new AbortController().signal, toolUseID, requestId: `req_${toolUseID}`, suggestions: [] });

async function toolRan(gates, toolName, input, toolUseID) {
  const [matcher] = gates.hooks.PostToolUse;
  const hookInput = { hook_event_name: "PostToolUse", session_id: "s", transcript_path: "", cwd: "/tmp", tool_name: toolName, tool_input: input, tool_response: { stdout: "" }, tool_use_id: toolUseID };
  return matcher.hooks[0](hookInput, toolUseID, { signal: new AbortController().signal });
}

test("Claude Agent SDK: a destructive command pauses, shows in the queue, and is allowed on approve", async () => {
  const run = runId("claude-approve");
  const gates = await gatesFor(run);
  const input = { command: "rm -rf build/cache", description: "Clear the cache" };
  const reviewer = pendingOf(run).then(async ([pending]) => {
    assert.deepEqual([pending.kind, pending.target, pending.operation, pending.caller], ["gate", "build/cache", "rm", "claude-agent-sdk"]);
    return decide(run, { decision: "approve" });
  });
  const [result] = await Promise.all([asTheSdk(gates, "Bash", input, "toolu_1"), reviewer]);
  assert.deepEqual(result, { behavior: "allow", updatedInput: input });

  await toolRan(gates, "Bash", input, "toolu_1");
  const stored = await asReviewer("GET", `/api/v1/approvals/${gates.gates.verdicts.get("toolu_1").approval.id}`);
  assert.equal(stored.execution.status, "executed");
});

test("Claude Agent SDK: on reject the tool is denied with the reviewer's reason", async () => {
  const run = runId("claude-reject");
  const gates = await gatesFor(run);
  const [result] = await Promise.all([
    asTheSdk(gates, "Bash", { command: "terraform destroy -auto-approve" }, "toolu_2"),
    decide(run, { decision: "reject", reason: "Production is live." }),
  ]);
  assert.equal(result.behavior, "deny");
  assert.match(result.message, /rejected this call: Production is live\. Do not retry it\./);
});

test("Claude Agent SDK: on an edit the edited input runs (updatedInput)", async () => {
  const run = runId("claude-edit");
  const gates = await gatesFor(run);
  const [result] = await Promise.all([
    asTheSdk(gates, "Bash", { command: "rm -rf build" }, "toolu_3"),
    decide(run, { decision: "approve", arguments: { command: "rm -rf build/tmp" } }),
  ]);
  assert.deepEqual(result, { behavior: "allow", updatedInput: { command: "rm -rf build/tmp" } });
});

test("Claude Agent SDK: a tool no rule gates is allowed at once; questions go to people", async () => {
  const run = runId("claude-ask");
  const gates = await gatesFor(run);
  assert.deepEqual(await asTheSdk(gates, "Read", { file_path: "/etc/hosts" }, "toolu_4"), { behavior: "allow", updatedInput: { file_path: "/etc/hosts" } });
  assert.deepEqual(await asTheSdk(gates, "Bash", { command: "ls -la" }, "toolu_5"), { behavior: "allow", updatedInput: { command: "ls -la" } });

  const input = { questions: [{ question: "Deploy where?", header: "Target", multiSelect: false, options: [{ label: "staging", description: "safe" }, { label: "prod", description: "live" }] }] };
  const [result] = await Promise.all([asTheSdk(gates, "AskUserQuestion", input, "toolu_6"), decide(run, { decision: "answer", answers: { q1: "staging" } })]);
  assert.deepEqual(result, { behavior: "allow", updatedInput: { ...input, answers: { "Deploy where?": "staging" } } });
});
