// The Mastra recipe (docs/engines.md): an agent on the AI SDK's mock model calls a gated tool, the run
// suspends for approval, a person decides, and the run resumes by its run id.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { InMemoryStore } from "@mastra/core/storage";
import { createTool } from "@mastra/core/tools";
import { MockLanguageModelV3 } from "ai/test";
import { HitlMastra } from "hitl-client/mastra";
import { z } from "zod";

import { client, decide, pendingOf, portal, runId } from "./support.js";

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

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

async function agentRun(run, reviewer) {
  const hitl = client();
  const gates = new HitlMastra(hitl, await hitl.served(portal.configId), {
    caller: "support-bot", kinds: { deleteCustomer: "delete" }, target: (_tool, args) => `customer ${args.customerId}`,
  });
  const crm = ["T-4821", "T-4822"];
  const deleteCustomer = createTool({
    id: "deleteCustomer", description: "Delete a customer record", inputSchema: z.object({ customerId: z.string() }),
    execute: async ({ customerId }) => {
      crm.splice(crm.indexOf(customerId), 1);
      return `Deleted ${customerId}.`;
    },
  });
  const model = scriptedModel();
  const agent = new Agent({ id: "support-bot", name: "support-bot", instructions: "Help.", model, tools: { deleteCustomer: gates.gated(deleteCustomer) } });
  new Mastra({ agents: { supportBot: agent }, storage: new InMemoryStore(), logger: false }); // suspended runs are kept in its storage
  const [output] = await Promise.all([gates.generate(agent, "Delete customer T-4821", { runId: run }), reviewer]);
  return { output, crm, gates, model };
}

/** What the model read back about its tool call, in its second turn. */
function toolResultSeen(model) {
  const prompt = model.doGenerateCalls[1].prompt;
  return JSON.stringify(prompt.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((p) => p.type === "tool-result").output);
}

test("Mastra: the run suspends at the gated tool, shows in the queue, and resumes on approve", async () => {
  const run = runId("mastra-approve");
  const reviewer = pendingOf(run).then(async ([pending]) => {
    assert.deepEqual([pending.target, pending.operation, pending.arguments], ["customer T-4821", "deleteCustomer", { customerId: "T-4821" }]);
    return decide(run, { decision: "approve" });
  });
  const { output, crm, gates } = await agentRun(run, reviewer);
  assert.deepEqual(crm, ["T-4822"]);
  assert.equal(output.text, "Done.");
  const [verdict] = gates.verdicts.values();
  assert.equal(verdict.approval.execution.status, "executed");
});

test("Mastra: on reject nothing runs and the model reads the reviewer's reason", async () => {
  const run = runId("mastra-reject");
  const { crm, model } = await agentRun(run, decide(run, { decision: "reject", reason: "Open dispute." }));
  assert.deepEqual(crm, ["T-4821", "T-4822"]);
  assert.match(toolResultSeen(model), /rejected this call: Open dispute\. Do not retry it\./);
});

test("Mastra: on an edit the edited call runs", async () => {
  const run = runId("mastra-edit");
  const { crm, model, gates } = await agentRun(run, decide(run, { decision: "approve", arguments: { customerId: "T-4822" } }));
  assert.deepEqual(crm, ["T-4821"]);
  assert.match(toolResultSeen(model), /Deleted T-4822\./);
  const [verdict] = gates.verdicts.values();
  assert.deepEqual([verdict.edited, verdict.approval.execution.digest_matches], [true, true]);
});
