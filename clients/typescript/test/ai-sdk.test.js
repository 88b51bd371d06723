// The Vercel AI SDK recipe (docs/engines.md): `ai` v7's own mock model calls a gated tool; a person decides.
import assert from "node:assert/strict";
import { test } from "node:test";

import { jsonSchema, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { HitlAiSdk } from "hitl-client/ai-sdk";

import { client, decide, pendingOf, portal, runId } from "./support.js";

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** The model asks to delete T-4821, then says what it was told. */
function scriptedModel() {
  const model = new MockLanguageModelV3({
    doGenerate: async () => {
      if (model.doGenerateCalls.length === 1) {
        const input = JSON.stringify({ customerId: "T-4821" });
        return { content: [{ type: "tool-call", toolCallId: "call_1", toolName: "deleteCustomer", input }], finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage, warnings: [] };
      }
      return { content: [{ type: "text", text: "Done." }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
    },
  });
  return model;
}

function crmTools(crm) {
  return {
    deleteCustomer: tool({
      description: "Delete a customer record",
      inputSchema: jsonSchema({ type: "object", properties: { customerId: { type: "string" } }, required: ["customerId"] }),
      execute: async ({ customerId }) => {
        crm.splice(crm.indexOf(customerId), 1);
        return `Deleted ${customerId}.`;
      },
    }),
    lookUp: tool({ description: "Look a customer up", inputSchema: jsonSchema({ type: "object" }), execute: async () => "found" }),
  };
}

async function agentRun(run, reviewer) {
  const hitl = client();
  const gates = new HitlAiSdk(hitl, await hitl.served(portal.configId), {
    caller: "support-bot", kinds: { deleteCustomer: "delete" }, target: (_tool, args) => `customer ${args.customerId}`,
  });
  const crm = ["T-4821", "T-4822"];
  const model = scriptedModel();
  const [result] = await Promise.all([gates.generateText({ model, tools: crmTools(crm), prompt: "Delete customer T-4821" }, { runId: run }), reviewer]);
  return { result, crm, gates, model };
}

/** What the model was told about the tool call, in its second turn. */
function toolResultSeen(model) {
  const prompt = model.doGenerateCalls[1].prompt;
  return prompt.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((p) => p.type === "tool-result");
}

test("AI SDK: the run pauses at the gated tool, shows in the queue, and proceeds on approve", async () => {
  const run = runId("ai-approve");
  const reviewer = pendingOf(run).then(async ([pending]) => {
    assert.deepEqual([pending.target, pending.operation, pending.arguments], ["customer T-4821", "deleteCustomer", { customerId: "T-4821" }]);
    return decide(run, { decision: "approve" });
  });
  const { result, crm, gates } = await agentRun(run, reviewer);
  assert.deepEqual(crm, ["T-4822"]);
  assert.equal(result.text, "Done.");
  const [verdict] = gates.verdicts.values();
  assert.equal(verdict.approval.execution.status, "executed");
});

test("AI SDK: on reject nothing runs and the model reads the reviewer's reason", async () => {
  const run = runId("ai-reject");
  const { crm, model } = await agentRun(run, decide(run, { decision: "reject", reason: "Open dispute." }));
  assert.deepEqual(crm, ["T-4821", "T-4822"]);
  const seen = toolResultSeen(model);
  assert.equal(seen.output.type, "execution-denied");
  assert.match(seen.output.reason, /rejected this call: Open dispute\. Do not retry it\./);
});

test("AI SDK: on an edit the edited call runs", async () => {
  const run = runId("ai-edit");
  const { crm, model, gates } = await agentRun(run, decide(run, { decision: "approve", arguments: { customerId: "T-4822" } }));
  assert.deepEqual(crm, ["T-4821"]);
  assert.match(JSON.stringify(toolResultSeen(model).output), /Deleted T-4822\./);
  const [verdict] = gates.verdicts.values();
  assert.deepEqual([verdict.edited, verdict.approval.execution.digest_matches], [true, true]);
});
