// The Claude Agent SDK recipe (docs/engines.md): the SDK's `query()` run offline — Claude Code against a
// stand-in for Anthropic's API (fake-anthropic.js) — with `canUseTool` and the hooks from the adapter; and
// `canUseTool` called directly as the SDK calls it, for the cases a scripted model does not reach.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { query } from "@anthropic-ai/claude-agent-sdk";
import { HitlClaude } from "hitl-client/claude-agent-sdk";

import { fakeAnthropic } from "./fake-anthropic.js";
import { asReviewer, client, decide, pendingOf, portal, runId } from "./support.js";

// Claude Code starts as a process of its own: on a busy machine its first request can take a while.
const STARTUP_MS = 120_000;

/** A session in a scratch directory with build/cache and build/tmp, the model asking to run `command`. */
async function session(run, command, reviewer) {
  const api = await fakeAnthropic(command);
  const cwd = mkdtempSync(join(tmpdir(), "hitl-claude-"));
  mkdirSync(join(cwd, "build", "cache"), { recursive: true });
  mkdirSync(join(cwd, "build", "tmp"), { recursive: true });
  const hitl = client();
  // A bounded wait, and the session aborted when the test ends: a test that fails never leaves Claude Code waiting.
  const gates = new HitlClaude(hitl, await hitl.served(portal.configId), { runId: run, waitTimeout: STARTUP_MS / 1000 });
  const abortController = new AbortController();
  const messages = [];
  try {
    const env = { ...process.env, ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: "sk-ant-offline", HOME: cwd, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1" };
    const options = { cwd, env, abortController, model: "claude-sonnet-4-5", maxTurns: 3, settingSources: [], canUseTool: gates.canUseTool, hooks: gates.hooks };
    const talk = (async () => {
      for await (const message of query({ prompt: "Clear the build cache", options })) messages.push(message);
    })();
    await Promise.all([talk, reviewer]);
    return { left: ["cache", "tmp"].filter((dir) => existsSync(join(cwd, "build", dir))), messages, gates, api };
  } finally {
    abortController.abort();
    api.close();
    rmSync(cwd, { recursive: true, force: true });
  }
}

const toolResult = (messages) => messages.flatMap((m) => (m.type === "user" && Array.isArray(m.message.content) ? m.message.content : [])).find((c) => c.type === "tool_result");

test("Claude Agent SDK, run offline: the session pauses at rm, shows in the queue, and the command runs on approve", async () => {
  const run = runId("claude-sdk-approve");
  const reviewer = pendingOf(run, 1, STARTUP_MS).then(async ([pending]) => {
    assert.deepEqual([pending.target, pending.operation, pending.arguments.command], ["build/cache", "rm", "rm -rf build/cache"]);
    return decide(run, { decision: "approve" });
  });
  const { left, messages, gates } = await session(run, "rm -rf build/cache", reviewer);
  assert.deepEqual(left, ["tmp"]);
  assert.equal(messages.at(-1).subtype, "success");
  const stored = await asReviewer("GET", `/api/v1/approvals/${gates.gates.verdicts.get("toolu_01").approval.id}`);
  assert.equal(stored.execution.status, "executed");
});

test("Claude Agent SDK, run offline: on reject nothing runs and the model reads the reviewer's reason", async () => {
  const run = runId("claude-sdk-reject");
  const { left, messages } = await session(run, "rm -rf build/cache", decide(run, { decision: "reject", reason: "Keep the cache." }, STARTUP_MS));
  assert.deepEqual(left, ["cache", "tmp"]);
  assert.match(JSON.stringify(toolResult(messages).content), /rejected this call: Keep the cache\. Do not retry it\./);
});

test("Claude Agent SDK, run offline: on an edit the edited command runs", async () => {
  const run = runId("claude-sdk-edit");
  const { left } = await session(run, "rm -rf build/cache", decide(run, { decision: "approve", arguments: { command: "rm -rf build/tmp" } }, STARTUP_MS));
  assert.deepEqual(left, ["cache"]);
});

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
    decide(run, { decision: "approve", arguments: { command: "rm -rf build/tmp" } }, STARTUP_MS),
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
