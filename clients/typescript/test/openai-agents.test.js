// The OpenAI Agents SDK for JS recipe (docs/engines.md): its ScriptedModel calls a gated tool; a person decides.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Agent, setTracingDisabled, tool } from "@openai/agents";
import { ScriptedModel, assistantMessage, functionCall } from "@openai/agents/testing";
import { HitlAgents } from "hitl-client/openai-agents";
import { z } from "zod";

import { client, decide, pendingOf, portal, runId } from "./support.js";

setTracingDisabled(true); // no network: the SDK would export traces

async function agentRun(run, reviewer) {
  const hitl = client();
  const gates = new HitlAgents(hitl, await hitl.served(portal.configId), {
    caller: "support-bot", kinds: { deleteCustomer: "delete" }, target: (_tool, args) => `customer ${args.customerId}`,
  });
  const crm = ["T-4821", "T-4822"];
  const deleteCustomer = tool({
    name: "deleteCustomer", description: "Delete a customer record", parameters: z.object({ customerId: z.string() }),
    execute: async ({ customerId }) => {
      crm.splice(crm.indexOf(customerId), 1);
      return `Deleted ${customerId}.`;
    },
  });
  const model = new ScriptedModel([[functionCall("deleteCustomer", { customerId: "T-4821" }, { callId: "call_1" })], [assistantMessage("Done.")]]);
  const agent = new Agent({ name: "support-bot", model, tools: [gates.gated(deleteCustomer)] });
  const [result] = await Promise.all([gates.run(agent, "Delete customer T-4821", { runId: run }), reviewer]);
  return { result, crm, gates, model };
}

/** What the model read back about its tool call, in its second turn. */
function toolOutputSeen(model) {
  return JSON.stringify(model.calls[1].request.input.find((item) => item.type === "function_call_result").output);
}

test("Agents SDK: the run is interrupted at the gated tool, shows in the queue, and resumes on approve", async () => {
  const run = runId("oa-approve");
  const reviewer = pendingOf(run).then(async ([pending]) => {
    assert.deepEqual([pending.target, pending.operation, pending.arguments], ["customer T-4821", "deleteCustomer", { customerId: "T-4821" }]);
    return decide(run, { decision: "approve" });
  });
  const { result, crm, gates } = await agentRun(run, reviewer);
  assert.deepEqual(crm, ["T-4822"]);
  assert.equal(result.finalOutput, "Done.");
  const [verdict] = gates.verdicts.values();
  assert.equal(verdict.approval.execution.status, "executed");
});

test("Agents SDK: on reject nothing runs and the model reads the reviewer's reason", async () => {
  const run = runId("oa-reject");
  const { crm, model } = await agentRun(run, decide(run, { decision: "reject", reason: "Open dispute." }));
  assert.deepEqual(crm, ["T-4821", "T-4822"]);
  assert.match(toolOutputSeen(model), /rejected this call: Open dispute\. Do not retry it\./);
});

test("Agents SDK: on an edit the edited call runs", async () => {
  const run = runId("oa-edit");
  const { crm, model, gates } = await agentRun(run, decide(run, { decision: "approve", arguments: { customerId: "T-4822" } }));
  assert.deepEqual(crm, ["T-4821"]);
  assert.match(toolOutputSeen(model), /Deleted T-4822\./);
  const [verdict] = gates.verdicts.values();
  assert.deepEqual([verdict.edited, verdict.approval.execution.digest_matches], [true, true]);
});
