// hitl-client: gate an agent's calls behind a person's approval (docs/engines.md, "TypeScript").
export { HitlClient, HitlError, type ClientOptions, type GateOptions, type Log, type WaitOptions } from "./client.js";
export { ANY, INERT_NOTICE, LONG_POLL_SECONDS, callDigest, canonicalJson, findGate, idempotencyKey, wouldGate } from "./core.js";
export {
  QUESTIONS_INERT_NOTICE,
  answersOf,
  reviewOf,
  type Answers,
  type AnswersState,
  type AskOptions,
  type PlanReview,
  type ReviewState,
} from "./questions.js";
export { keysOf, verifyReceipt, type ReceiptKeys } from "./receipts.js";
export type { Approval, GatedCall, PortalAnswer, Question, ReceiptClaims, Served } from "./types.js";
export { judge, notAsked, verdictOf, type ReceiptCheck, type Verdict, type VerdictState } from "./verdicts.js";
