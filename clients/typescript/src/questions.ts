// Questions and plans (docs/api.md, "Questions and plans"): bodies, and what the agent is told — the
// Python client's words (clients/python/hitl_client/_questions.py). An answer, a decline, a halt and an
// expiry are never confused: an expired question is "nobody answered", never the recommended option.
import { canonicalJson } from "./core.js";
import { withdrawnMessage } from "./verdicts.js";
import type { Approval, PortalAnswer, Question, Served } from "./types.js";

export const MAX_QUESTIONS = 8;
export const MAX_TITLE = 200;
export const MAX_PLAN = 20_000;
export const QUESTIONS_INERT_NOTICE = "HITL: inert (Free plan or no enabled rules) — nobody can answer; go on with your best assumption";

export type AnswersState = "answered" | "declined" | "halted" | "expired" | "withdrawn" | "timeout" | "inert";
export type ReviewState = "approved" | "changes_requested" | "halted" | "expired" | "withdrawn" | "timeout" | "inert";

export interface Answers {
  state: AnswersState;
  message: string; // what to tell the agent
  values: Record<string, unknown>; // question id → answer, when answered
  reason: string; // the decliner's (or halter's) words; empty when answered
  answeredBy: string | null;
  approval: Approval | null;
}

export interface PlanReview {
  state: ReviewState;
  message: string;
  approved: boolean; // approved, or inert (nobody can review: go on), as a gate's `allowed` is
  changesRequested: boolean;
  feedback: string; // what to change (or the note they approved with)
  reviewedBy: string | null;
  approval: Approval | null;
}

/** Can anyone answer a question on this served version? (`served.questions`, else HITL's state.) */
export function questionsActive(served: Served): boolean {
  if (served.hitl?.state !== "active") return false;
  return (served as { questions?: boolean }).questions !== false;
}

export function asQuestions(questions: Question | Question[]): Question[] {
  const listed = Array.isArray(questions) ? questions : [questions];
  if (listed.length < 1 || listed.length > MAX_QUESTIONS) throw new RangeError(`Ask 1 to ${MAX_QUESTIONS} questions at once, not ${listed.length}.`);
  return listed;
}

export function defaultTitle(questions: Question[]): string {
  const prompt = String(questions[0].prompt || questions[0].id || "A question");
  return prompt.length <= MAX_TITLE ? prompt : prompt.slice(0, MAX_TITLE - 1) + "…";
}

export interface AskOptions {
  runId: string;
  threadId: string;
  callId: string;
  caller: string;
  title?: string;
  ttlSeconds?: number;
  requestedBy?: string;
}

function baseBody(served: Served, kind: string, title: string, o: AskOptions): Record<string, unknown> {
  const body: Record<string, unknown> = {
    kind, config_id: served.config_id, config_version: served.version, run_id: o.runId, thread_id: o.threadId,
    caller: o.caller, title: title.slice(0, MAX_TITLE),
  };
  if (o.ttlSeconds !== undefined) body.ttl_seconds = o.ttlSeconds;
  if (o.requestedBy) body.requested_by = o.requestedBy;
  return body;
}

export function questionBody(served: Served, questions: Question[], o: AskOptions): Record<string, unknown> {
  return { ...baseBody(served, "question", o.title ?? defaultTitle(questions), o), questions };
}

export function planBody(served: Served, plan: string, o: AskOptions): Record<string, unknown> {
  // Refused whole rather than cut: a truncated plan is not the plan.
  if (plan.length > MAX_PLAN) throw new RangeError(`A plan is at most ${MAX_PLAN.toLocaleString("en")} characters; this one has ${plan.length.toLocaleString("en")}.`);
  return { ...baseBody(served, "plan", o.title ?? "Review this plan", o), plan };
}

function shown(value: unknown): string {
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (Array.isArray(value)) return value.map(shown).join(", ") || "(none)";
  if (typeof value === "string") return value;
  return canonicalJson(value);
}

const trimmed = (text: unknown) => String(text ?? "").replace(/[. ]+$/, "");

function decisionOf(approval: Approval | null): Record<string, any> {
  return (approval?.decision ?? {}) as Record<string, any>;
}

function answers(state: AnswersState, message: string, approval: Approval | null, values: Record<string, unknown> = {}): Answers {
  const decision = decisionOf(approval);
  return { state, message, values, approval, reason: state === "answered" ? "" : decision.reason || "", answeredBy: decision.decided_by ?? null };
}

export function inertAnswers(notice: string = QUESTIONS_INERT_NOTICE): Answers {
  return answers("inert", notice, null);
}

/** A question request as what the engine reads and the agent is told. */
export function answersOf(answer: PortalAnswer, questions: Question[] = []): Answers {
  const status = answer.status as string;
  if (status === "inert") return inertAnswers((answer as { notice?: string }).notice || QUESTIONS_INERT_NOTICE);
  const approval = answer as Approval;
  const decision = decisionOf(approval);
  const asked = ((approval as { questions?: Question[] }).questions ?? questions) as Question[];
  if (status === "answered") {
    const values = (decision.answers ?? {}) as Record<string, unknown>;
    const who = decision.decided_by || "A person";
    const prompts = new Map(asked.map((q) => [q.id, q.prompt || q.id]));
    const order = [...[...prompts.keys()].filter((id) => id in values), ...Object.keys(values).filter((id) => !prompts.has(id))];
    const lines = order.map((id) => `- ${prompts.get(id) ?? id} (${id}): ${shown(values[id])}`);
    const skipped = [...prompts].filter(([id]) => !(id in values)).map(([id, prompt]) => `- ${prompt} (${id}): no answer`);
    return answers("answered", [`${who} answered:`, ...lines, ...skipped].join("\n"), approval, { ...values });
  }
  if (status === "declined") {
    const who = decision.decided_by || "A person";
    const words = decision.reason ? `: ${trimmed(decision.reason)}` : " (no reason given)";
    return answers("declined", `${who} declined to answer${words}. Go on without these answers and do not ask the same again.`, approval);
  }
  if (status === "rejected" && decision.action === "halt") return answers("halted", halted(decision, "these questions"), approval);
  if (status === "expired") {
    return answers("expired",
      "Nobody answered before the question's deadline, and no answer was chosen for anyone. Continue " +
      "with your best assumption and say which one you made.", approval);
  }
  if (status === "withdrawn") return answers("withdrawn", withdrawn(decision, "question"), approval);
  return answers("timeout", "Still waiting for a person's answer; the question stays open until it expires.", approval);
}

function halted(decision: Record<string, any>, what: string): string {
  const who = decision.decided_by || "A person";
  return `${who} halted this run: ${trimmed(decision.reason || "no reason given")}. Nobody will answer ${what}. ` +
    "Stop the run now: do not act, do not retry, and do not ask again.";
}

function withdrawn(decision: Record<string, any>, what: string): string {
  return withdrawnMessage(decision, what === "plan" ? "nobody will review the plan" : "nobody will answer it");
}

function review(state: ReviewState, message: string, approval: Approval | null): PlanReview {
  const decision = decisionOf(approval);
  const spoken = state === "approved" || state === "changes_requested";
  return {
    state, message, approval, approved: state === "approved" || state === "inert", changesRequested: state === "changes_requested",
    feedback: spoken ? decision.reason || "" : "", reviewedBy: decision.decided_by ?? null,
  };
}

export function inertReview(notice: string = QUESTIONS_INERT_NOTICE): PlanReview {
  return review("inert", notice, null);
}

/** A plan request as what the engine reads and the agent is told. */
export function reviewOf(answer: PortalAnswer): PlanReview {
  const status = answer.status as string;
  if (status === "inert") return inertReview((answer as { notice?: string }).notice || QUESTIONS_INERT_NOTICE);
  const approval = answer as Approval;
  const decision = decisionOf(approval);
  const who = decision.decided_by || "A reviewer";
  if (status === "approved") {
    const note = decision.reason ? ` (${decision.reason})` : "";
    return review("approved", `${who} approved the plan${note}. Go ahead with it.`, approval);
  }
  if (status === "rejected" && decision.action === "halt") return review("halted", halted(decision, "this plan"), approval);
  if (status === "rejected") {
    return review("changes_requested",
      `${who} asked for changes to the plan: ${trimmed(decision.reason || "no reason given")}. Revise the plan and show it again before acting on it.`, approval);
  }
  if (status === "expired") {
    return review("expired",
      "Nobody reviewed the plan before its deadline, so it is not approved — and no person asked for " +
      "changes either. Do not act on it unreviewed; show it again later, or ask how to go on.", approval);
  }
  if (status === "withdrawn") return review("withdrawn", withdrawn(decision, "plan"), approval);
  return review("timeout", "Still waiting for a person to review the plan; it stays open until it expires.", approval);
}
