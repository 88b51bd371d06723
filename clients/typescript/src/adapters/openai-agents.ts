// OpenAI Agents SDK for JavaScript (`@openai/agents`): the portal answers the run's approval interruptions.
//
//   const gates = new HitlAgents(client, served, { caller: "support-bot", kinds: { deleteCustomer: "delete" } });
//   const agent = new Agent({ name: "support-bot", model, tools: [gates.gated(deleteCustomer)] });
//   const result = await gates.run(agent, "Delete customer T-4821", { runId: "conv-42" });
//
// `gated(tool)` gives the tool `needsApproval` from the served table (or its own policy, whichever asks),
// and runs what was approved — the reviewer's edit where they edited — once, reporting it. `run` answers each
// interruption from the portal: `state.approve(item)`, or `state.reject(item, { message })` with what the
// person said, and resumes. A wait that gives up returns the result with its interruptions: save
// `result.state.toString()`, and after a restart `run(agent, await RunState.fromString(agent, saved), …)`
// waits on the same requests (the idempotency key is run id, thread id and the model's call id).
import { run, type Agent, type FunctionTool, type RunResult, type RunState } from "@openai/agents";

import type { HitlClient } from "../client.js";
import type { Served } from "../types.js";
import { ToolGates, type ToolGateOptions } from "./tools.js";

function parsed(raw: unknown): unknown {
  if (typeof raw !== "string") return raw ?? null;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export class HitlAgents extends ToolGates {
  constructor(client: HitlClient, served: Served, options: ToolGateOptions) {
    super(client, served, options);
  }

  /** The tool, asking for approval where a served rule gates it, and running what the portal approved. */
  gated<T extends FunctionTool<any, any, any>>(tool: T): T {
    const ownPolicy = tool.needsApproval;
    return {
      ...tool,
      needsApproval: async (context: any, input: unknown, callId?: string) =>
        this.gates(tool.name, input) || (await ownPolicy(context, input, callId)),
      invoke: (context: any, input: string, details?: { toolCall?: { callId?: string } }) =>
        this.execute(details?.toolCall?.callId, input, (args) => tool.invoke(context, typeof args === "string" ? args : JSON.stringify(args), details as any)),
    };
  }

  /** `run` until the run ends, each interruption answered by the portal; or, if a wait gave up, with its interruptions. */
  async run(agent: Agent<any, any>, input: string | RunState<any, any> | any[], ids: { runId: string; threadId?: string }, options: Record<string, unknown> = {}): Promise<RunResult<any, any>> {
    let result = (await run(agent, input as any, options as any)) as RunResult<any, any>;
    while (result.interruptions?.length) {
      let waiting = false;
      for (const item of result.interruptions) {
        const raw = item.rawItem as { callId?: string; id?: string };
        const verdict = await this.decide(item.name ?? "tool", parsed(item.arguments), { ...ids, callId: String(raw.callId ?? raw.id) });
        if (verdict.allowed) result.state.approve(item);
        else if (verdict.state === "timeout") waiting = true;
        else result.state.reject(item, { message: verdict.message });
      }
      if (waiting) return result;
      result = (await run(agent, result.state, options as any)) as RunResult<any, any>;
    }
    return result;
  }
}
