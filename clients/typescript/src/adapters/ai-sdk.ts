// Vercel AI SDK (`ai` v7): the portal answers its tool approvals.
//
//   const gates = new HitlAiSdk(client, served, { caller: "support-bot", kinds: { deleteCustomer: "delete" } });
//   const result = await gates.generateText({ model, tools, messages }, { runId: "conv-42" });
//
// Each gated tool is given `toolApproval: "user-approval"` (the served table decides which); when a step ends
// with `tool-approval-request` parts, each becomes a portal request, and the person's decision goes back as
// the SDK's `tool-approval-response` (a rejection's reason is what the model reads); then the run goes on.
// The wrapped tools run what was approved — the reviewer's edit where they edited — once, and report it.
import { generateText, type GenerateTextResult, type ModelMessage, type ToolApprovalResponse, type ToolSet } from "ai";

import type { HitlClient } from "../client.js";
import type { Served } from "../types.js";
import { ToolGates, type ToolGateOptions } from "./tools.js";

type GenerateOptions = Parameters<typeof generateText>[0];

export class HitlAiSdk extends ToolGates {
  constructor(client: HitlClient, served: Served, options: ToolGateOptions) {
    super(client, served, options);
  }

  /** `toolApproval` for generateText / streamText / ToolLoopAgent: a person approves what a served rule gates. */
  readonly toolApproval = ({ toolCall }: { toolCall: { toolName: string; input: unknown } }) =>
    this.gates(toolCall.toolName, toolCall.input) ? ("user-approval" as const) : undefined;

  /** The tools, each run through the portal's verdict on its call (what was approved, once, reported). */
  tools<T extends ToolSet>(tools: T): T {
    const wrapped: Record<string, unknown> = {};
    for (const [name, tool] of Object.entries(tools)) {
      const execute = (tool as { execute?: (input: any, options: any) => unknown }).execute;
      wrapped[name] = execute
        ? { ...tool, execute: (input: unknown, options: { toolCallId?: string }) => this.execute(options?.toolCallId, input, (args) => execute(args, options)) }
        : tool;
    }
    return wrapped as T;
  }

  /** The portal's answers to a step's approval requests, as the SDK's tool message (null when none were asked). */
  async respond(result: { content: ReadonlyArray<any> }, ids: { runId: string; threadId?: string }): Promise<ModelMessage | null> {
    const responses: ToolApprovalResponse[] = [];
    for (const part of result.content) {
      if (part.type !== "tool-approval-request" || part.isAutomatic) continue;
      const verdict = await this.decide(part.toolCall.toolName, part.toolCall.input, { ...ids, callId: part.toolCall.toolCallId });
      responses.push({ type: "tool-approval-response", approvalId: part.approvalId, approved: verdict.allowed, reason: verdict.message });
    }
    return responses.length ? ({ role: "tool", content: responses } as ModelMessage) : null;
  }

  /**
   * `generateText` until the model is done, each approval answered by the portal on the way. The answer's
   * `messages` is the whole conversation (to continue it, or to save it).
   */
  async generateText(options: GenerateOptions, ids: { runId: string; threadId?: string }): Promise<GenerateTextResult<any, any, any> & { messages: ModelMessage[] }> {
    const { prompt, messages: given, ...rest } = options as GenerateOptions & { prompt?: string; messages?: ModelMessage[] };
    const messages: ModelMessage[] = [...(given ?? []), ...(typeof prompt === "string" ? [{ role: "user", content: prompt } as ModelMessage] : [])];
    const tools = this.tools((rest.tools ?? {}) as ToolSet);
    for (;;) {
      const result = await generateText({ ...rest, tools, toolApproval: this.toolApproval, messages } as GenerateOptions);
      messages.push(...result.responseMessages);
      const answers = await this.respond(result, ids);
      if (answers === null) return Object.assign(result, { messages });
      messages.push(answers);
    }
  }
}
