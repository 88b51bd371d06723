// Claude Agent SDK for TypeScript (`@anthropic-ai/claude-agent-sdk`): the portal answers `canUseTool`.
//
//   const gates = new HitlClaude(client, served, { runId: sessionId });
//   for await (const message of query({ prompt, options: { canUseTool: gates.canUseTool, hooks: gates.hooks } })) …
//
// A tool call maps to a gated call by the table `hitl-hook` reads too (claude-tools.ts, docs/api.md "Coding
// agents"): MCP tools (`mcp__<server>__<tool>`) to `mcp_server` with target `mcp_<server>`, `Task`/`Agent` to
// `worker`, `NotebookEdit` to `cell`, a destructive shell command or SQL written to a file to `delete` (`map`
// extends the table), and `kinds` names any other tool's kind; a call no served rule gates is allowed at once. A gated call waits
// for a person: allowed (with `updatedInput` when they edited it) or denied with their words. The SDK's own
// question tool (`AskUserQuestion`) goes to the portal as questions, and the answers come back as the
// tool's `answers`. `hooks` (PostToolUse, PostToolUseFailure) report what an approved call did.
import type { CanUseTool, HookCallbackMatcher, HookEvent, PermissionResult } from "@anthropic-ai/claude-agent-sdk";

import type { HitlClient } from "../client.js";
import { findGate, wouldGate } from "../core.js";
import type { Question, Served } from "../types.js";
import { ClaudeToolTable, type ToolCall, type ToolMap } from "./claude-tools.js";
import { ToolGates, type Kind } from "./tools.js";

export interface ClaudeGateOptions {
  /** The run these calls belong to: the session id, or your own run id. */
  runId: string;
  caller?: string; // default "claude-agent-sdk"
  /** Tool name → rule kind for tools the table does not map (target and operation: the tool's name). */
  kinds?: Record<string, Kind>;
  /** Extends the tool table as `hitl-hook --map FILE` does: more tools, more patterns, or `replace: true`. */
  map?: ToolMap;
  waitTimeout?: number;
}

export class HitlClaude {
  readonly gates: ToolGates;
  readonly table: ClaudeToolTable;

  constructor(
    readonly client: HitlClient,
    readonly served: Served,
    readonly options: ClaudeGateOptions,
  ) {
    const kinds = Object.fromEntries(Object.entries(options.kinds ?? {}).map(([tool, kind]) => [tool, { kind }]));
    this.table = new ClaudeToolTable({ ...options.map, tools: { ...kinds, ...options.map?.tools } });
    this.gates = new ToolGates(client, served, { caller: options.caller ?? "claude-agent-sdk", waitTimeout: options.waitTimeout });
  }

  /** The gated call a tool call is (clients/conformance/tool_patterns.json), or null when nothing gates it. */
  map(toolName: string, input: Record<string, unknown>): ToolCall | null {
    return this.table.callOf(toolName, input);
  }

  /** `canUseTool` for `query()`: allow, allow with the reviewer's edit, or deny with what the person said. */
  readonly canUseTool: CanUseTool = async (toolName, input, { toolUseID }): Promise<PermissionResult> => {
    if (toolName === "AskUserQuestion" && Array.isArray(input.questions)) return this.askPeople(input, toolUseID);
    const mapped = this.map(toolName, input);
    const call = mapped && {
      ...mapped, runId: this.options.runId, threadId: this.options.runId, callId: toolUseID,
      caller: this.options.caller ?? "claude-agent-sdk", arguments: input, summary: `${mapped.operation} on ${mapped.target}`,
    };
    if (!call || !wouldGate(this.served, call)) return { behavior: "allow", updatedInput: input };
    const verdict = await this.client.decideCall(this.served, call, { waitTimeout: this.options.waitTimeout });
    this.gates.verdicts.set(toolUseID, verdict);
    if (!verdict.allowed) return { behavior: "deny", message: verdict.message };
    if (findGate(this.served, call)) {
      // The SDK runs it now: `started` first, so a restart does not run it again; not at all if it was started elsewhere.
      const once = await this.client.started(verdict);
      if (!once.allowed) {
        this.gates.verdicts.set(toolUseID, once);
        return { behavior: "deny", message: once.message };
      }
    }
    const updatedInput = verdict.edited ? (verdict.arguments as Record<string, unknown>) : input;
    return { behavior: "allow", updatedInput };
  };

  /** The SDK's question tool, asked through the portal: the answers go back as the tool's `answers`. */
  private async askPeople(input: Record<string, unknown>, toolUseID: string): Promise<PermissionResult> {
    const asked = input.questions as { question: string; header?: string; options: { label: string; description?: string }[]; multiSelect?: boolean }[];
    const questions: Question[] = asked.map((q, index) => ({
      id: `q${index + 1}`, prompt: q.question, type: "choice", multi: Boolean(q.multiSelect),
      options: q.options.map((option) => ({ value: option.label, description: option.description })),
    })) as Question[];
    const answers = await this.client.ask(this.served, questions, {
      runId: this.options.runId, threadId: this.options.runId, callId: toolUseID, caller: this.options.caller ?? "claude-agent-sdk",
      title: asked[0]?.header || undefined, waitTimeout: this.options.waitTimeout,
    });
    if (answers.state !== "answered") return { behavior: "deny", message: answers.message };
    const byQuestion: Record<string, string> = {};
    asked.forEach((q, index) => {
      const value = answers.values[`q${index + 1}`];
      if (value !== undefined) byQuestion[q.question] = Array.isArray(value) ? value.join(", ") : String(value);
    });
    return { behavior: "allow", updatedInput: { ...input, answers: byQuestion } };
  }

  /** Hooks that report what an approved call did (PostToolUse: executed; PostToolUseFailure: failed). */
  get hooks(): Partial<Record<HookEvent, HookCallbackMatcher[]>> {
    const report = (failed: boolean) => async (hookInput: any) => {
      const verdict = this.gates.verdicts.get(hookInput.tool_use_id);
      if (verdict?.state === "approved") {
        if (failed) verdict.error = new Error(String(hookInput.error ?? "the tool failed"));
        else verdict.result = undefined;
        await this.client.report(verdict);
      }
      return {};
    };
    return { PostToolUse: [{ hooks: [report(false)] }], PostToolUseFailure: [{ hooks: [report(true)] }] };
  }
}
