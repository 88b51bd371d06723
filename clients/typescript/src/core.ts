// The contract's pure parts (docs/api.md, "Engines"): keys, digests, gate matching, bodies. No I/O.
// Each mirrors clients/python/hitl_client/_core.py, so an engine asks the same question whichever
// client it uses: the same idempotency key, the same digest, the same trimmed body.
import { createHash } from "node:crypto";

import type { Gate, GatedCall, Served } from "./types.js";

export const ANY = "*";
export const LONG_POLL_SECONDS = 30; // the portal's maximum `wait`
export const INERT_NOTICE = "HITL: inert (Free plan or no enabled rules) — the call may proceed";

/** The same call of the same run asks once, even if the engine restarts and asks again. */
export function idempotencyKey(runId: string, threadId: string, callId: string): string {
  return "hitl-" + sha256(pythonJson([runId, threadId, callId]));
}

/** docs/api.md's call_digest, computed on the engine's side of the wire. */
export function callDigest(target: string, operation: string, args: unknown): string {
  return sha256(pythonJson({ target, operation, arguments: args ?? null }));
}

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/**
 * JSON exactly as the portal writes it for a digest: Python's `json.dumps(value, sort_keys=True,
 * separators=(",", ":"), ensure_ascii=False)` of the value the portal parsed from our body.
 */
export function pythonJson(value: unknown, separators: [string, string] = [",", ":"]): string {
  const [item, key] = separators;
  if (value === null || value === undefined) return "null";
  if (typeof value === "number") return pythonNumber(value);
  if (typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map((v) => pythonJson(v, separators)).join(item) + "]";
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined) // JSON.stringify, which sends the body, drops them too
      .sort(([a], [b]) => byCodePoint(a, b));
    return "{" + entries.map(([k, v]) => JSON.stringify(k) + key + pythonJson(v, separators)).join(item) + "}";
  }
  return "null";
}

// Python sorts keys by code point; JavaScript's default sort compares UTF-16 units.
function byCodePoint(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

// A number as the portal writes it back: JSON.stringify's text is what it parsed — an int when the text
// has neither "." nor "e" (written as is), else a float, which Python writes as its repr.
function pythonNumber(n: number): string {
  if (!Number.isFinite(n)) return "null";
  const text = JSON.stringify(n);
  if (!/[.e]/.test(text)) return text;
  const [mantissa, exponent] = n.toExponential().split("e"); // the shortest round-trip digits, as repr's
  const exp = Number(exponent);
  if (exp >= -4 && exp < 16) return text; // both write it fixed, with the same digits
  const sign = exp < 0 ? "-" : "+";
  const digits = String(Math.abs(exp)).padStart(2, "0");
  return `${mantissa}e${sign}${digits}`;
}

/** The first gate (in order) that matches this call, while HITL is active for the served version. */
export function findGate(served: Served, call: Pick<GatedCall, "kind" | "target" | "operation" | "point">): Gate | null {
  if (served.hitl?.state !== "active") return null;
  return firstGate(served, call);
}

/** Would a rule gate this call if HITL were active? (An inert config still says so in the log.) */
export function wouldGate(served: Served, call: Pick<GatedCall, "kind" | "target" | "operation" | "point">): boolean {
  return firstGate(served, call) !== null;
}

// Which field of a call a rule's `match` names: the operation for `delete` (drop_table, on any target),
// the target for the other kinds. The portal serves it on every gate as `match_field`; a gate served
// without one (an older portal) falls back to this copy of the portal's table.
const MATCH_FIELDS: Record<string, "operation" | "target"> = { delete: "operation", mcp_server: "target", cell: "target", worker: "target" };

export function matchField(gate: Gate): "operation" | "target" {
  const field = (gate as { match_field?: string }).match_field ?? MATCH_FIELDS[gate.kind as string] ?? "target";
  return field === "operation" ? "operation" : "target";
}

function firstGate(served: Served, call: Pick<GatedCall, "kind" | "target" | "operation" | "point">): Gate | null {
  const point = call.point ?? "entry";
  const gates = [...((served.gates ?? []) as Gate[])].sort((a, b) => (a.order ?? 10) - (b.order ?? 10));
  for (const gate of gates) {
    if (gate.enabled === false || gate.kind !== call.kind || gate.point !== point) continue;
    if (gate.match === ANY || gate.match === (matchField(gate) === "operation" ? call.operation : call.target)) return gate;
  }
  return null;
}

/** What of the arguments the version's level lets the engine pass (and so what the digest covers). */
export function passedArguments(served: Served, args: unknown): unknown {
  return served.pass_information_level === "full" ? (args ?? null) : null;
}

/** The digest of the call as it will run, over what the level let the engine pass. */
export function runningDigest(served: Served, call: GatedCall, args: unknown): string {
  return callDigest(call.target, call.operation, passedArguments(served, args));
}

/** The registration body: only what the config's level allows — the portal refuses more, by design. */
export function gateBody(served: Served, gate: Gate, call: GatedCall, ttlSeconds?: number): Record<string, unknown> {
  const body: Record<string, unknown> = {
    kind: "gate",
    config_id: served.config_id,
    config_version: served.version,
    rule_id: gate.id,
    run_id: call.runId,
    thread_id: call.threadId,
    caller: call.caller,
    target: call.target,
    operation: call.operation,
  };
  const level = served.pass_information_level;
  if (call.summary && (level === "summary" || level === "full")) body.summary = call.summary.slice(0, 2000);
  const args = passedArguments(served, call.arguments);
  if (args !== null) {
    body.arguments = args;
    if (call.argumentsSchema) body.arguments_schema = call.argumentsSchema; // it describes them: sent beside them
  }
  if (call.requestedBy) body.requested_by = call.requestedBy;
  if (ttlSeconds !== undefined) body.ttl_seconds = ttlSeconds;
  return body;
}

export function outcomeBody(status: string, extra: { executionId?: string; detail?: string; callDigest?: string } = {}) {
  const body: Record<string, unknown> = { status };
  if (extra.executionId) body.execution_id = extra.executionId.slice(0, 255);
  if (extra.detail) body.detail = extra.detail.slice(0, 2000);
  if (extra.callDigest) body.call_digest = extra.callDigest; // what ran: a digest not approved is recorded
  return body;
}

/** JSON as a person or a model reads it back: keys sorted, non-ASCII kept (the Python client's wording). */
export function canonicalJson(value: unknown): string {
  return pythonJson(value, [", ", ": "]);
}
