// What every framework adapter shares: a tool call as a gated call, the portal's verdict on it kept by
// the framework's tool call id, and the approved call run once — with the reviewer's edit, `started`
// before it and the outcome after (client.ts does each step; this only ties them to a tool call id).
import type { HitlClient } from "../client.js";
import { wouldGate } from "../core.js";
import type { GatedCall, Served } from "../types.js";
import type { Verdict } from "../verdicts.js";

export type Kind = GatedCall["kind"];

export interface ToolGateOptions {
  caller: string;
  /** Tool name → rule kind (`delete`, `mcp_server`, `cell`, `worker`); others are `defaultKind`. */
  kinds?: Record<string, Kind>;
  defaultKind?: Kind;
  /** The call's target as the rules match it (default: the tool's name). */
  target?: (tool: string, args: any) => string;
  /** Seconds to wait for a person before the agent is told it is still waiting (default: until decided). */
  waitTimeout?: number;
}

export class ToolGates {
  /** Every verdict so far, by the framework's tool call id. */
  readonly verdicts = new Map<string, Verdict>();
  private readonly ran = new Set<string>();

  constructor(
    readonly client: HitlClient,
    readonly served: Served,
    readonly options: ToolGateOptions,
  ) {}

  callFor(tool: string, args: unknown, ids: { runId: string; threadId?: string; callId: string }): GatedCall {
    const kind = this.options.kinds?.[tool] ?? this.options.defaultKind ?? "worker";
    const target = this.options.target?.(tool, args) ?? tool;
    return {
      kind, target, operation: tool, runId: ids.runId, threadId: ids.threadId ?? ids.runId, callId: ids.callId,
      caller: this.options.caller, arguments: args,
      // Never the arguments: at level summary they must not reach the portal, not even inside the summary.
      summary: target !== tool ? `${tool} on ${target}` : tool,
    };
  }

  /** Does a served rule gate this tool call (active, or inert: then the portal's notice is logged and it runs)? */
  gates(tool: string, args: unknown): boolean {
    const call = this.callFor(tool, args, { runId: "", callId: "" });
    return wouldGate(this.served, call);
  }

  /** Ask the portal and wait: the verdict, kept for the tool's execution under its call id. */
  async decide(tool: string, args: unknown, ids: { runId: string; threadId?: string; callId: string }): Promise<Verdict> {
    const verdict = await this.client.decideCall(this.served, this.callFor(tool, args, ids), { waitTimeout: this.options.waitTimeout });
    this.verdicts.set(ids.callId, verdict);
    return verdict;
  }

  /**
   * Run a tool call the framework executes: an approved one with what was approved (the reviewer's edit),
   * marked started first and its outcome reported after; a call the portal was not asked about as it came.
   */
  async execute<T>(callId: string | undefined, args: unknown, run: (args: any) => T | Promise<T>): Promise<T> {
    const verdict = callId === undefined ? undefined : this.verdicts.get(callId);
    if (!verdict || verdict.state !== "approved") return run(args);
    if (this.ran.has(callId!)) throw new Error(`HITL: tool call ${callId} has run already; it never runs twice.`);
    this.ran.add(callId!);
    const once = await this.client.started(verdict);
    if (!once.allowed) {
      this.verdicts.set(callId!, once); // started (or finished) elsewhere already: it must not run here
      throw new Error(once.message);
    }
    try {
      verdict.result = await run(verdict.arguments);
      return verdict.result as T;
    } catch (error) {
      verdict.error = error;
      throw error;
    } finally {
      await this.client.report(verdict);
    }
  }
}
