// From the portal's answer to what the engine does and tells the agent: one pure function, `judge`.
// The states and their words are the Python client's (clients/python/hitl_client/_core.py), so an
// agent hears the same thing whichever client its engine uses, and the conformance table's cases
// (a served table, a call, the portal's answer, the receipt's claims → the verdict) run on it as is.
import { canonicalJson, findGate, INERT_NOTICE, runningDigest, wouldGate } from "./core.js";
import type { Approval, GatedCall, PortalAnswer, ReceiptClaims, Served } from "./types.js";

export type VerdictState =
  | "not_gated" // no rule gates the call: it runs
  | "inert" // a rule would, but HITL is inert for this version: it runs
  | "allowed" // the portal let it through without asking (a false condition, a shadow rule): it runs
  | "approved" // a person approved it (maybe with edits) and the receipt proves it: it runs once
  | "rejected"
  | "expired" // nobody answered before the deadline
  | "undeliverable" // nobody could be told, and nobody opened it
  | "withdrawn" // the requester (or the engine) took the request back
  | "timeout" // still pending when the engine stopped waiting
  | "digest_mismatch" // what was approved is not what would run
  | "edit_to_retry" // approved with edits this engine cannot run as edited
  | "receipt_refused" // the signed receipt does not prove this approval of this call
  | "already_executed" // approved, and its outcome is reported: never run twice
  | "in_doubt"; // approved and started, its outcome never reported: it may have run; never run again

export interface Verdict {
  allowed: boolean;
  state: VerdictState;
  message: string; // what to tell the agent
  reason: string; // the reviewer's own words (or the expiry's), for a framework that takes a rejection message
  approval: Approval | null;
  /** What to run once allowed: the call's own arguments, or the reviewer's edit of them (`edited`). */
  arguments: unknown;
  edited: boolean;
  callDigest: string | null; // the digest of what runs, reported with the outcome
  result?: unknown;
  error?: unknown;
}

/** The receipt as far as its signature goes: its verified claims, or why it could not be verified. */
export type ReceiptCheck = { claims: ReceiptClaims } | { problem: string };

function verdict(allowed: boolean, state: VerdictState, message: string, approval: Approval | null, more: Partial<Verdict> = {}): Verdict {
  const reason = ((approval?.decision ?? {}) as { reason?: string | null }).reason ?? "";
  return { allowed, state, message, reason, approval, arguments: null, edited: false, callDigest: null, ...more };
}

/** The verdict for a call the portal is not asked about (no gate, or inert), else null. */
export function notAsked(served: Served, call: GatedCall): Verdict | null {
  if (findGate(served, call)) return null;
  if (wouldGate(served, call)) return verdict(true, "inert", INERT_NOTICE, null, { arguments: call.arguments ?? null });
  return verdict(true, "not_gated", "No rule gates this call.", null, { arguments: call.arguments ?? null });
}

/**
 * What the portal's answer says, read alone: the status (and for `approved`, who and with what edit).
 * `judge` adds what must hold before anything runs; nothing runs on this alone.
 */
// Who decided, and — a delegate's decision — for whom: "bob@… on behalf of alice@…".
function decidersWords(decision: Record<string, any>, nobody: string): string {
  const who = decision.decided_by || nobody;
  return decision.on_behalf_of ? `${who} on behalf of ${decision.on_behalf_of}` : who;
}

export function verdictOf(answer: PortalAnswer): Verdict {
  const status = answer.status as string;
  if (status === "inert") {
    const notice = (answer as { notice?: string }).notice || INERT_NOTICE;
    return verdict(true, "inert", notice, null);
  }
  if (status === "allowed") {
    const shadow = (answer as { shadow?: boolean }).shadow === true;
    const notice = (answer as { notice?: string }).notice;
    const message = notice || (shadow
      ? "HITL: allowed — the rule is in shadow mode: the call is counted, never paused; it may proceed"
      : "HITL: allowed — the rule's condition does not hold for this call; it may proceed");
    return verdict(true, "allowed", message, null);
  }
  const approval = answer as Approval;
  const decision = (approval.decision ?? {}) as Record<string, any>;
  if (status === "approved") {
    const note = decision.reason ? ` (${decision.reason})` : "";
    const who = decidersWords(decision, "a reviewer");
    const edit = decision.edited ? ` with edited arguments: ${canonicalJson(decision.arguments ?? null)} (that is what runs)` : "";
    return verdict(true, "approved", `Approved by ${who}${note}${edit}.`, approval);
  }
  if (status === "expired" && decision.undeliverable) {
    return verdict(false, "undeliverable",
      "Nobody could be reached about this approval request (no notification was delivered and nobody " +
      "opened it), so the call was not run. No person refused it, and waiting will not help: tell the " +
      "user their approvers could not be reached, and do not retry it until they say so.", approval);
  }
  if (status === "expired") {
    return verdict(false, "expired",
      "Nobody answered the approval request before its deadline, so the call was not run. No person " +
      "refused it: continue with your best assumption, say so, and ask again later only if it still " +
      "blocks the work.", approval);
  }
  if (status === "rejected") {
    const reason = String(decision.reason || "no reason given").replace(/[. ]+$/, "");
    const who = decidersWords(decision, "A reviewer");
    return verdict(false, "rejected", `${who} rejected this call: ${reason}. Do not retry it.`, approval);
  }
  if (status === "withdrawn") return verdict(false, "withdrawn", withdrawnMessage(decision, "the call was not run"), approval);
  return verdict(false, "timeout",
    "Still waiting for a person's decision; the call was not run. It stays in the queue until it expires.", approval);
}

/** What was approved to run, and whether a reviewer edited it: `decision.arguments` when edited, else the call's own. */
export function approvedArguments(approval: Approval, call: GatedCall): [unknown, boolean] {
  const decision = (approval.decision ?? {}) as Record<string, any>;
  if (decision.edited) return [decision.arguments ?? null, true];
  return [call.arguments ?? null, false];
}

/** The digest of what was approved: `decision.call_digest`, or the proposal's where the portal gives none. */
export function approvedDigest(approval: Approval): string | null {
  const decision = (approval.decision ?? {}) as Record<string, any>;
  return decision.call_digest || approval.call_digest || null;
}

/**
 * The verdict on the portal's answer for this call: run it only when this says `allowed`.
 *
 * An approval runs only when it is not run yet (an outcome reported: `already_executed`; `started` and
 * never completed: `in_doubt`), when what would run is what was approved (the digest), and when the
 * receipt's signed claims say so — the request, approved, resumed, this digest. Where the unsigned JSON
 * and the signed claims disagree, the claims win and nothing runs.
 */
export function judge(served: Served, call: GatedCall, answer: PortalAnswer, receipt?: ReceiptCheck): Verdict {
  const read = verdictOf(answer);
  if (read.state === "inert" || read.state === "allowed") return { ...read, arguments: call.arguments ?? null };
  if (read.state !== "approved") return read;
  const approval = read.approval!;
  const execution = (approval.execution ?? null) as Record<string, any> | null;
  if (execution?.status === "started") return inDoubt(approval);
  if (execution) return alreadyExecuted(approval);
  const [args, edited] = approvedArguments(approval, call);
  const digest = runningDigest(served, call, args);
  if (approvedDigest(approval) !== digest) {
    return verdict(false, "digest_mismatch",
      "The approved call differs from the one about to run, so it was not run. Ask again for this call.", approval);
  }
  const problem = receiptProblem(approval, digest, receipt);
  if (problem) return receiptRefused(approval, problem);
  return { ...read, arguments: args, edited, callDigest: digest };
}

/** Why the receipt does not prove that this request was approved for this call, or null when it does. */
export function receiptProblem(approval: Approval, digest: string, receipt?: ReceiptCheck): string | null {
  if (!receipt) return "the approved request carries no receipt: nothing proves the approval";
  if ("problem" in receipt) return receipt.problem;
  const claims = receipt.claims;
  const decision = (approval.decision ?? {}) as Record<string, any>;
  if (claims.sub !== approval.id) return `the receipt is ${JSON.stringify(claims.sub)}'s, not ${JSON.stringify(approval.id)}'s`;
  if (claims.status !== "approved") return `the receipt says the request was ${claims.status}, not approved`;
  if (claims.action !== decision.action || claims.action !== "resume") return `the receipt's action is ${JSON.stringify(claims.action)}, not resume`;
  if (claims.call_digest !== digest) return "the receipt approves another call (its call_digest differs from the call's)";
  return null;
}

export function receiptRefused(approval: Approval, problem: string): Verdict {
  return verdict(false, "receipt_refused",
    `The approval could not be verified (${problem}), so the call was not run. Do not retry it; tell a person.`, approval);
}

function alreadyExecuted(approval: Approval): Verdict {
  const execution = (approval.execution ?? {}) as Record<string, any>;
  const when = execution.reported_at ? ` at ${execution.reported_at}` : "";
  return verdict(false, "already_executed",
    `This call was already executed: it was approved and reported ${execution.status || "executed"}${when} ` +
    `(${approval.id}), so it was not run again. Use its earlier result; do not retry it.`, approval, { result: execution });
}

function inDoubt(approval: Approval): Verdict {
  const execution = (approval.execution ?? {}) as Record<string, any>;
  const when = execution.reported_at ? ` at ${execution.reported_at}` : "";
  return verdict(false, "in_doubt",
    `This call was approved and started${when} (${approval.id}), but no outcome was ever reported, so ` +
    "nobody knows whether it ran. It was not run again. Do not retry it: tell the user its outcome is " +
    "unknown; a reviewer can record on the request's page what happened.", approval, { result: approval.execution });
}

/** The verdict once the portal answered `started`: it runs only where this engine recorded it first. */
export function startedVerdict(verdict: Verdict, answer: Approval & { already_reported?: boolean }): Verdict {
  if (answer.already_reported) {
    const execution = (answer.execution ?? null) as Record<string, any> | null;
    return execution?.status === "started" ? inDoubt(answer) : alreadyExecuted(answer);
  }
  verdict.approval = answer;
  return verdict;
}

/** Approved with edits an `execute()` without parameters cannot run as edited: nothing runs, the agent learns the edit. */
export function editToRetry(approved: Verdict): Verdict {
  const decision = (approved.approval?.decision ?? {}) as Record<string, any>;
  const who = decision.decided_by || "A reviewer";
  return verdict(false, "edit_to_retry",
    `${who} approved this call only with edited arguments, so the call as proposed was not run. ` +
    `Make the call again with exactly these arguments: ${canonicalJson(approved.arguments)}`,
    approved.approval, { arguments: approved.arguments, edited: true, callDigest: approved.callDigest });
}

/** The words for a request its requester (or its engine) took back: the work stops, nobody refused it. */
export function withdrawnMessage(decision: Record<string, any>, what: string): string {
  const reason = decision.reason ? `: ${String(decision.reason).replace(/[. ]+$/, "")}` : "";
  return `This request was withdrawn by the requester${reason}, so ${what}. Stop this work; do not retry it.`;
}
