// judge(): the portal's answer (and the receipt's verified claims) → what the engine does. No portal needed:
// every status the API can answer, held against the contract (docs/api.md; issue 36's verdicts).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";

import { answersOf, callDigest, judge, reviewOf } from "hitl-client";

const served = {
  config_id: "cfg_1", version: 1, hitl: { state: "active", log_line: "HITL: ACTIVE" }, pass_information_level: "full",
  questions: true, token_caps: {}, gates: [{ id: "rul_1", kind: "delete", match: "*", point: "entry", enabled: true, order: 10 }],
};
const call = { kind: "delete", target: "customer T-4821", operation: "delete_customer", runId: "r", threadId: "t", callId: "c", caller: "bot", arguments: { id: 1 } };
const digest = callDigest(call.target, call.operation, call.arguments);
const approved = {
  id: "apr_1", status: "approved", call_digest: digest, execution: null, receipt: "x.y.z",
  decision: { outcome: "approved", action: "resume", decided_by: "bob@acme.test", reason: "", edited: false, call_digest: digest, arguments: { id: 1 } },
};
const claims = { iss: "http://portal", sub: "apr_1", status: "approved", action: "resume", call_digest: digest, decided_by: "bob@acme.test", decided_at: "2026-12-03T00:00:00Z", iat: 1 };

test("approved, with a receipt whose signed claims say so: it runs, with the call's own arguments", () => {
  const verdict = judge(served, call, approved, { claims });
  assert.deepEqual([verdict.state, verdict.allowed, verdict.arguments, verdict.edited, verdict.callDigest], ["approved", true, { id: 1 }, false, digest]);
  assert.equal(verdict.message, "Approved by bob@acme.test.");
});

test("the receipt wins over the unsigned JSON: any disagreement, a missing receipt or a bad signature runs nothing", () => {
  const cases = [
    [undefined, /carries no receipt/],
    [{ problem: "the receipt does not verify: signature verification failed" }, /does not verify/],
    [{ claims: { ...claims, status: "rejected", action: "halt" } }, /says the request was rejected, not approved/],
    [{ claims: { ...claims, sub: "apr_2" } }, /"apr_2"'s, not "apr_1"'s/],
    [{ claims: { ...claims, action: "halt" } }, /action is "halt", not resume/],
    [{ claims: { ...claims, call_digest: "0".repeat(64) } }, /approves another call/],
  ];
  for (const [receipt, words] of cases) {
    const verdict = judge(served, call, approved, receipt);
    assert.deepEqual([verdict.state, verdict.allowed], ["receipt_refused", false]);
    assert.match(verdict.message, words);
  }
});

test("run once: reported already → already_executed; started and never completed → in_doubt; neither runs", () => {
  const executed = judge(served, call, { ...approved, execution: { status: "executed", reported_at: "2026-12-03T10:00:00Z" } }, { claims });
  assert.deepEqual([executed.state, executed.allowed], ["already_executed", false]);
  const started = judge(served, call, { ...approved, execution: { status: "started" } }, { claims });
  assert.deepEqual([started.state, started.allowed], ["in_doubt", false]);
  assert.match(started.message, /nobody knows whether it ran\. It was not run again/);
});

test("an edit runs as edited; a call that is not what was approved does not run", () => {
  const edit = { id: 2 };
  const editDigest = callDigest(call.target, call.operation, edit);
  const editedAnswer = { ...approved, decision: { ...approved.decision, edited: true, arguments: edit, call_digest: editDigest } };
  const verdict = judge(served, call, editedAnswer, { claims: { ...claims, call_digest: editDigest } });
  assert.deepEqual([verdict.state, verdict.arguments, verdict.edited, verdict.callDigest], ["approved", edit, true, editDigest]);
  assert.match(verdict.message, /with edited arguments: \{"id": 2\} \(that is what runs\)\.$/);
  const other = judge(served, { ...call, arguments: { id: 3 } }, approved, { claims });
  assert.deepEqual([other.state, other.allowed], ["digest_mismatch", false]);
});

test("every other answer: what runs, what does not, and what the agent is told", () => {
  const decided = (status, decision) => ({ ...approved, status, decision: { ...approved.decision, ...decision } });
  const cases = [
    [{ status: "inert", notice: "HITL: inert — the call may proceed" }, "inert", true, /inert/],
    [{ status: "allowed", shadow: true, notice: "Shadow rule: counted." }, "allowed", true, /Shadow rule: counted\./],
    [{ status: "allowed", shadow: false, notice: "Its condition is false." }, "allowed", true, /condition is false/],
    [decided("rejected", { outcome: "rejected", action: "halt", reason: "Open dispute." }), "rejected", false, /bob@acme\.test rejected this call: Open dispute\. Do not retry it\.$/],
    [decided("expired", { outcome: "rejected", action: "halt", expired: true, decided_by: null }), "expired", false, /^Nobody answered .* No person refused it/],
    [decided("expired", { outcome: "rejected", action: "halt", expired: true, undeliverable: true, decided_by: null }), "undeliverable", false, /^Nobody could be reached/],
    [decided("withdrawn", { withdrawn: true, reason: "Not needed." }), "withdrawn", false, /withdrawn by the requester: Not needed, so the call was not run/],
    [{ ...approved, status: "pending", decision: null }, "timeout", false, /^Still waiting/],
  ];
  for (const [answer, state, allowed, words] of cases) {
    const verdict = judge(served, call, answer, { claims });
    assert.deepEqual([verdict.state, verdict.allowed], [state, allowed], JSON.stringify(answer));
    assert.match(verdict.message, words);
  }
  const ungated = judge({ ...served, gates: [] }, call, { status: "inert" });
  assert.equal(ungated.allowed, true);
});

test("questions and plans: a halt is neither still waiting nor a request to revise", () => {
  const halt = { outcome: "rejected", action: "halt", decided_by: "bob@acme.test", reason: "Runaway." };
  assert.equal(answersOf({ id: "apr_q", status: "rejected", decision: halt }).state, "halted");
  assert.equal(answersOf({ id: "apr_q", status: "expired", decision: { expired: true } }).state, "expired");
  assert.equal(answersOf({ id: "apr_q", status: "pending", decision: null }).state, "timeout");
  const halted = reviewOf({ id: "apr_p", status: "rejected", decision: halt });
  assert.deepEqual([halted.state, halted.approved, halted.changesRequested], ["halted", false, false]);
  const revise = reviewOf({ id: "apr_p", status: "rejected", decision: { ...halt, action: "revise", reason: "Half." } });
  assert.deepEqual([revise.state, revise.feedback], ["changes_requested", "Half."]);
});

test("the digest is the portal's: Python's json.dumps of what it parsed, for awkward values too", () => {
  const values = [
    { amount: 0.00001, tiny: 1.5e-7, big: 1e21, int: 1e16, half: 0.5, neg: -2.5e-5 },
    { "ä": "ü", "é": ["\u2028", "\u001f", "😀"], z: null, a: true, "\ud83d\ude00": 1, "\uffff": 2 },
    [1, "two", { three: [3.25] }],
    null,
  ];
  for (const args of values) {
    const body = JSON.stringify({ target: "t", operation: "o", arguments: args });
    const python = execFileSync("python3", ["-c", [
      "import hashlib, json, sys",
      "v = json.loads(sys.stdin.read())",
      "print(hashlib.sha256(json.dumps(v, sort_keys=True, separators=(',', ':'), ensure_ascii=False).encode()).hexdigest())",
    ].join("\n")], { input: body, encoding: "utf8" }).trim();
    assert.equal(callDigest("t", "o", args), python, JSON.stringify(args));
  }
});
