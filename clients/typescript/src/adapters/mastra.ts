// Mastra (`@mastra/core`): the portal answers its tool approvals, by run id.
//
//   const gates = new HitlMastra(client, served, { caller: "support-bot", kinds: { deleteCustomer: "delete" } });
//   const agent = new Agent({ …, tools: { deleteCustomer: gates.gated(deleteCustomer) } });   // in a Mastra with storage
//   const output = await gates.generate(agent, "Delete customer T-4821", { runId: "conv-42" });
//
// `gated(tool)` gives the tool `requireApproval` from the served table (or its own policy, whichever asks)
// and runs what was approved — the reviewer's edit where they edited — once, reporting it. When a run
// suspends for approval, the tool call becomes a portal request; the person's decision resumes it by
// Mastra's run id: `approveToolCallGenerate`, or `declineToolCallGenerate` with what the person said (the
// model reads it). A wait that gives up returns the suspended output: `gates.resume(agent, output, ids)`
// later (after a restart too) waits on the same request and resumes the same Mastra run.
import type { Agent } from "@mastra/core/agent";

import type { HitlClient } from "../client.js";
import type { Served } from "../types.js";
import { ToolGates, type ToolGateOptions } from "./tools.js";

type Output = Awaited<ReturnType<Agent["generate"]>>;
type Ids = { runId: string; threadId?: string };

export class HitlMastra extends ToolGates {
  constructor(client: HitlClient, served: Served, options: ToolGateOptions) {
    super(client, served, options);
  }

  /** The tool (a copy), asking for approval where a served rule gates it, and running what the portal approved. */
  gated<T extends { id: string; execute?: (...args: any[]) => any; requireApproval?: unknown }>(tool: T): T {
    const own = tool.requireApproval;
    const execute = tool.execute;
    const copy = Object.assign(Object.create(Object.getPrototypeOf(tool)), tool) as T;
    copy.requireApproval = async (input: unknown, context?: unknown) =>
      this.gates(tool.id, input) || (typeof own === "function" ? Boolean(await own(input, context)) : Boolean(own));
    if (execute) {
      copy.execute = (input: unknown, context?: { agent?: { toolCallId?: string } }) =>
        this.execute(context?.agent?.toolCallId, input, (args) => execute.call(tool, args, context));
    }
    return copy;
  }

  /** `agent.generate` until the run ends, each suspension for approval answered by the portal. */
  async generate(agent: Agent, messages: Parameters<Agent["generate"]>[0], ids: Ids, options: Record<string, unknown> = {}): Promise<Output> {
    return this.resume(agent, await agent.generate(messages, options as any), ids, options);
  }

  /** Answer a run suspended for a tool approval (by its Mastra run id), and the next ones, until it ends. */
  async resume(agent: Agent, output: Output, ids: Ids, options: Record<string, unknown> = {}): Promise<Output> {
    for (;;) {
      const pending = (output as { suspendPayload?: { toolCallId?: string; toolName?: string; args?: unknown } }).suspendPayload;
      if (output.finishReason !== "suspended" || !pending?.toolCallId) return output;
      const verdict = await this.decide(pending.toolName ?? "tool", pending.args ?? null, { ...ids, callId: pending.toolCallId });
      const which = { ...options, runId: output.runId!, toolCallId: pending.toolCallId };
      if (verdict.allowed) output = (await agent.approveToolCallGenerate(which as any)) as Output;
      else if (verdict.state === "timeout") return output;
      else output = (await agent.declineToolCallGenerate({ ...which, reason: verdict.message } as any)) as Output;
    }
  }
}
