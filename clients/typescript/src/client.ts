// The client: one portal, one engine key, fetch with a long-poll. Every answer goes through `judge`
// (verdicts.ts), so this file is only the asking, the waiting and the running.
import * as core from "./core.js";
import { LONG_POLL_SECONDS } from "./core.js";
import * as q from "./questions.js";
import { JWKS_PATH, keysOf, kidOf, verifyReceipt, type ReceiptKeys } from "./receipts.js";
import type { Approval, GatedCall, PortalAnswer, Question, Served } from "./types.js";
import { editToRetry, judge, notAsked, startedVerdict, type ReceiptCheck, type Verdict } from "./verdicts.js";

// Statuses worth asking again for: the portal restarting, a proxy in between, or too many waits on one key.
const RETRYABLE = new Set([408, 429, 500, 502, 503, 504]);

/** The portal refused a call (4xx) or could not be reached; `code` is docs/api.md's error code. */
export class HitlError extends Error {
  constructor(
    message: string,
    readonly status: number | null = null,
    readonly code: string = "",
    readonly fields: Record<string, unknown> = {},
    readonly retryAfter: number | null = null,
  ) {
    super(message);
    this.name = "HitlError";
  }

  /** Unreachable, or a status that says "later": asking again with the same key is safe. */
  get retryable(): boolean {
    return this.status === null || RETRYABLE.has(this.status);
  }
}

export interface Log {
  info(message: string): void;
  warn(message: string): void;
}

export interface ClientOptions {
  timeoutMs?: number; // per HTTP call; must exceed the long-poll's 30 s
  retryForMs?: number; // how long a short call keeps reconnecting before it throws
  log?: Log;
  fetch?: typeof fetch;
}

export interface WaitOptions {
  /** Seconds to wait for a person before the verdict says `timeout` (default: until decided or expired). */
  waitTimeout?: number;
  /** Told the pending request once it is in the queue. */
  onPending?: (approval: Approval) => void;
}

export interface GateOptions extends WaitOptions {
  /** Runs the call with what was approved (a reviewer's edit, where they edited); its value is `verdict.result`. */
  execute?: (args: any) => unknown;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class Backoff {
  private attempt = 0;
  next(error: HitlError): number {
    this.attempt += 1;
    if (error.retryAfter !== null) return Math.min(error.retryAfter * 1000, 15_000);
    const ceiling = Math.min(15_000, 250 * 2 ** (this.attempt - 1));
    return ceiling / 2 + (Math.random() * ceiling) / 2;
  }
  reset() {
    this.attempt = 0;
  }
}

export class HitlClient {
  readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly retryForMs: number;
  private readonly log: Log;
  private readonly fetch: typeof fetch;
  private receiptKeys: ReceiptKeys | null = null;

  constructor(baseUrl: string, private readonly engineKey: string, options: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 45_000;
    this.retryForMs = options.retryForMs ?? 10_000;
    this.log = options.log ?? { info: (m) => console.info(m), warn: (m) => console.warn(m) };
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  // --- HTTP ---------------------------------------------------------------------------------

  private async callOnce(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<any> {
    let response: Response;
    try {
      response = await this.fetch(this.baseUrl + path, {
        method,
        headers: {
          Authorization: `Bearer ${this.engineKey}`,
          Accept: "application/json",
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
      throw new HitlError(`The portal at ${this.baseUrl} is unreachable: ${cause}`);
    }
    const text = await response.text();
    if (response.ok) return text ? JSON.parse(text) : null;
    let detail: Record<string, any> = {};
    try {
      const parsed = JSON.parse(text)?.error;
      if (parsed && typeof parsed === "object") detail = parsed;
    } catch {
      // not the JSON error envelope (a proxy's page): the status says enough
    }
    const retryAfter = Number(response.headers.get("retry-after"));
    throw new HitlError(
      detail.message || `HTTP ${response.status} from the portal`,
      response.status,
      detail.code ?? "",
      detail.fields ?? {},
      response.headers.has("retry-after") && Number.isFinite(retryAfter) ? retryAfter : null,
    );
  }

  /** One call, reconnecting with backoff while the portal is unreachable or says "later". */
  private async call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<any> {
    const deadline = Date.now() + this.retryForMs;
    const backoff = new Backoff();
    for (;;) {
      try {
        return await this.callOnce(method, path, body, headers);
      } catch (error) {
        if (!(error instanceof HitlError)) throw error;
        const delay = backoff.next(error);
        if (!error.retryable || Date.now() + delay > deadline) throw error;
        this.log.warn(`HITL: ${error.message} — trying again in ${(delay / 1000).toFixed(1)} s`);
        await sleep(delay);
      }
    }
  }

  // --- The API, one method per endpoint -----------------------------------------------------

  /** The served gate table; logs its HITL line, the first thing to check when nothing pauses. */
  async served(configId: string): Promise<Served> {
    const served: Served = await this.call("GET", `/api/v1/configs/${encodeURIComponent(configId)}/served`);
    this.log.info(`${served.hitl.log_line} (${served.config_id}@${served.version})`);
    return served;
  }

  /** POST a registration under an idempotency key: a retry (or a restarted engine) gets the same request. */
  register(body: Record<string, unknown>, key: string): Promise<PortalAnswer> {
    return this.call("POST", "/api/v1/approvals", body, { "Idempotency-Key": key });
  }

  /** Register a gated call; the request, or `{status: "inert" | "allowed", …}`. Safe to retry. */
  requestApproval(served: Served, call: GatedCall, ttlSeconds?: number): Promise<PortalAnswer> {
    const gate = core.findGate(served, call);
    if (!gate) throw new Error(`No served gate matches ${call.kind} on ${call.target}.`);
    return this.register(core.gateBody(served, gate, call, ttlSeconds), core.idempotencyKey(call.runId, call.threadId, call.callId));
  }

  get(approvalId: string, waitSeconds = 0): Promise<Approval> {
    const query = waitSeconds > 0 ? `?wait=${Math.round(waitSeconds * 1000) / 1000}` : "";
    return this.callOnce("GET", `/api/v1/approvals/${encodeURIComponent(approvalId)}${query}`);
  }

  /**
   * Long-poll until decided (or expired); after `timeout` seconds give it back still pending. A dropped
   * connection, a restarting portal or a 429 is not an answer: it reconnects with backoff until the deadline.
   */
  async wait(approvalId: string, timeout?: number): Promise<Approval> {
    const deadline = timeout === undefined ? null : Date.now() + timeout * 1000;
    const backoff = new Backoff();
    let approval: Approval | null = null;
    for (;;) {
      const remaining = deadline === null ? null : (deadline - Date.now()) / 1000;
      const chunk = remaining === null ? LONG_POLL_SECONDS : Math.max(0, Math.min(LONG_POLL_SECONDS, remaining));
      try {
        approval = await this.get(approvalId, chunk);
        backoff.reset();
      } catch (error) {
        if (!(error instanceof HitlError) || !error.retryable) throw error;
        const delay = backoff.next(error);
        if (deadline !== null && Date.now() + delay >= deadline) {
          if (approval === null) throw error;
          return approval;
        }
        this.log.warn(`HITL: waiting for ${approvalId}: ${error.message} — reconnecting in ${(delay / 1000).toFixed(1)} s`);
        await sleep(delay);
        continue;
      }
      if (approval.status !== "pending" || (deadline !== null && Date.now() >= deadline)) return approval;
    }
  }

  reportOutcome(approvalId: string, status: "started" | "executed" | "failed", extra: { executionId?: string; detail?: string; callDigest?: string } = {}): Promise<Approval> {
    return this.call("POST", `/api/v1/approvals/${encodeURIComponent(approvalId)}/outcome`, core.outcomeBody(status, extra));
  }

  /** Fetch the portal's receipt keys (again). */
  async jwks(): Promise<ReceiptKeys> {
    this.receiptKeys = await keysOf(await this.call("GET", JWKS_PATH));
    return this.receiptKeys;
  }

  /** The receipt's signature checked against the portal's keys (fetched again when it names one we lack). */
  async checkReceipt(approval: Approval): Promise<ReceiptCheck> {
    const receipt = (approval as { receipt?: unknown }).receipt;
    const kid = kidOf(receipt);
    let keys = this.receiptKeys;
    if (keys === null || (kid !== null && !keys.has(kid))) {
      try {
        keys = await this.jwks();
      } catch (error) {
        return { problem: `the portal's receipt keys could not be fetched: ${(error as Error).message}` };
      }
    }
    return verifyReceipt(receipt, keys);
  }

  // --- The whole boundary -------------------------------------------------------------------

  /** The verdict on an answer for this call: `judge`, with the receipt checked where it could run. */
  async judged(served: Served, call: GatedCall, answer: PortalAnswer): Promise<Verdict> {
    const unsigned = judge(served, call, answer, { problem: "not checked yet" });
    if (unsigned.state !== "receipt_refused") return unsigned; // nothing to run, or it runs unasked
    return judge(served, call, answer, await this.checkReceipt(answer as Approval));
  }

  /**
   * Find the gate, ask, wait, and check the digest and the receipt — everything but running the call.
   * For frameworks that run the call themselves: run it only when `verdict.allowed`, with
   * `verdict.arguments`, after `started(verdict)`; then `report(verdict)`.
   */
  async decideCall(served: Served, call: GatedCall, options: WaitOptions = {}): Promise<Verdict> {
    const unasked = notAsked(served, call);
    if (unasked) {
      if (unasked.state === "inert") this.log.info(unasked.message);
      return unasked;
    }
    let answer = await this.requestApproval(served, call);
    if (answer.status === "pending") {
      options.onPending?.(answer as Approval);
      answer = await this.wait((answer as Approval).id, options.waitTimeout);
    }
    const verdict = await this.judged(served, call, answer);
    if (verdict.state === "inert" || verdict.state === "allowed") this.log.info(verdict.message);
    return verdict;
  }

  /**
   * Record that an approved call is about to run (`started`), so that a restart never runs it twice, and
   * answer what may run: the verdict itself when this engine recorded `started` first; `in_doubt` (or
   * `already_executed`) when the portal answers `already_reported` — another process, or this engine
   * before a restart, started (or finished) it already, so it must not run.
   */
  async started(verdict: Verdict): Promise<Verdict> {
    if (verdict.state !== "approved" || !verdict.approval) return verdict;
    const answer = await this.reportOutcome(verdict.approval.id, "started", { callDigest: verdict.callDigest ?? undefined });
    return startedVerdict(verdict, answer);
  }

  /** Report what happened to an approved call that ran (`verdict.result`) or threw (`verdict.error`). */
  async report(verdict: Verdict): Promise<Verdict> {
    const approval = verdict.approval;
    if (!approval || (verdict.state !== "approved" && verdict.state !== "edit_to_retry")) return verdict;
    const execution = approval.execution as { status?: string } | null | undefined;
    if (execution && execution.status !== "started") return verdict;
    let status: "executed" | "failed";
    let extra: { executionId?: string; detail?: string; callDigest?: string };
    if (verdict.state === "edit_to_retry") {
      [status, extra] = ["failed", { detail: "Approved with edits this engine could not run as edited: nothing ran; the agent was told the edit." }];
    } else if (verdict.error === undefined) {
      const executionId = typeof verdict.result === "string" ? verdict.result : undefined;
      [status, extra] = ["executed", { executionId, callDigest: verdict.callDigest ?? undefined }];
    } else {
      const error = verdict.error as Error;
      [status, extra] = ["failed", { detail: `${error?.name ?? "Error"}: ${error?.message ?? String(error)}`, callDigest: verdict.callDigest ?? undefined }];
    }
    verdict.approval = await this.reportOutcome(approval.id, status, extra);
    return verdict;
  }

  /**
   * Find the gate, ask, wait, check the digest and the receipt, mark it started, run it (`execute`) and
   * report the outcome. Fails closed: rejected, expired, a wait that gave up, a digest or receipt that
   * does not match, or a call that may have run already never runs. An `execute()` that takes no
   * arguments runs the call as proposed, so an edited approval does not go through it (`edit_to_retry`).
   */
  async gateCall(served: Served, call: GatedCall, options: GateOptions = {}): Promise<Verdict> {
    const verdict = await this.decideCall(served, call, options);
    const execute = options.execute;
    if (!verdict.allowed || !execute) return verdict;
    if (verdict.edited && execute.length === 0) return this.report(editToRetry(verdict));
    const startedOnce = await this.started(verdict);
    if (!startedOnce.allowed) return startedOnce;
    try {
      verdict.result = await execute(verdict.arguments);
    } catch (error) {
      verdict.error = error; // the call's failure is reported as an outcome, not thrown through us
    }
    return this.report(verdict);
  }

  // --- Questions and plans ------------------------------------------------------------------

  /**
   * Ask people one to eight questions (docs/api.md's shape) and wait: `answers.state` tells an answer from
   * a decline, a halt and an expiry; `answers.values[id]` reads one answer; `answers.message` is for the agent.
   */
  async ask(served: Served, questions: Question | Question[], options: q.AskOptions & WaitOptions): Promise<q.Answers> {
    const listed = q.asQuestions(questions);
    if (!q.questionsActive(served)) {
      this.log.info(q.QUESTIONS_INERT_NOTICE);
      return q.inertAnswers();
    }
    const answer = await this.registered(q.questionBody(served, listed, options), options);
    return q.answersOf(answer, listed);
  }

  /** Show people a Markdown plan and wait: `review.approved`, or `review.changesRequested` with `review.feedback`. */
  async reviewPlan(served: Served, plan: string, options: q.AskOptions & WaitOptions): Promise<q.PlanReview> {
    if (!q.questionsActive(served)) {
      this.log.info(q.QUESTIONS_INERT_NOTICE);
      return q.inertReview();
    }
    return q.reviewOf(await this.registered(q.planBody(served, plan, options), options));
  }

  private async registered(body: Record<string, unknown>, options: q.AskOptions & WaitOptions): Promise<PortalAnswer> {
    const answer = await this.register(body, core.idempotencyKey(options.runId, options.threadId, options.callId));
    if (answer.status === "inert") this.log.info((answer as { notice: string }).notice);
    if (answer.status !== "pending") return answer;
    options.onPending?.(answer as Approval);
    return this.wait((answer as Approval).id, options.waitTimeout);
  }
}
