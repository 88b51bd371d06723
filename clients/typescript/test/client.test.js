// HitlClient against the real portal: a call gated, a person deciding, the call run once (or not at all).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";

import { HitlClient, callDigest } from "hitl-client";

import { asReviewer, client, decide, makeConfig, pendingOf, portal, runId } from "./support.js";

function deleteCall(run, more = {}) {
  return {
    kind: "delete", target: "customer T-4821", operation: "delete_customer", runId: run, threadId: "thr_1",
    callId: "call_1", caller: "support-bot", summary: "Delete the customer record", arguments: { customer_id: "T-4821" },
    ...more,
  };
}

test("an approved call runs once, with its own arguments, and its outcome is reported", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("approve");
  const ran = [];
  const reviewer = decide(run, { decision: "approve", reason: "checked the ticket" });
  const verdict = await hitl.gateCall(served, deleteCall(run), { execute: (args) => (ran.push(args), "crm-op-1") });
  await reviewer;

  assert.deepEqual(ran, [{ customer_id: "T-4821" }]);
  assert.equal(verdict.state, "approved");
  assert.equal(verdict.allowed, true);
  assert.match(verdict.message, /^Approved by \S+@\S+ \(checked the ticket\)\.$/);
  const stored = await asReviewer("GET", `/api/v1/approvals/${verdict.approval.id}`);
  assert.equal(stored.execution.status, "executed");
  assert.equal(stored.execution.execution_id, "crm-op-1");
  assert.equal(stored.call_digest, callDigest("customer T-4821", "delete_customer", { customer_id: "T-4821" }));

  // A restarted engine asking again for the same call gets the same request, and never runs it twice.
  const again = await client().gateCall(served, deleteCall(run), { execute: (args) => ran.push(args) });
  assert.equal(again.state, "already_executed");
  assert.equal(ran.length, 1);
});

test("a rejected call does not run, and the agent is told the reviewer's reason", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("reject");
  let ran = false;
  const reviewer = decide(run, { decision: "reject", reason: "Customer has an open dispute." });
  const verdict = await hitl.gateCall(served, deleteCall(run), { execute: () => (ran = true) });
  await reviewer;

  assert.equal(ran, false);
  assert.equal(verdict.state, "rejected");
  assert.equal(verdict.allowed, false);
  assert.match(verdict.message, /rejected this call: Customer has an open dispute\. Do not retry it\.$/);
  assert.equal(verdict.reason, "Customer has an open dispute.");
});

test("an approval with edits runs the edited call, and the outcome carries the edit's digest", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("edit");
  const ran = [];
  const reviewer = decide(run, { decision: "approve", arguments: { customer_id: "T-4822" } });
  const verdict = await hitl.gateCall(served, deleteCall(run), { execute: (args) => ran.push(args) });
  await reviewer;

  assert.deepEqual(ran, [{ customer_id: "T-4822" }]);
  assert.equal(verdict.edited, true);
  assert.match(verdict.message, /with edited arguments: \{"customer_id": "T-4822"\} \(that is what runs\)/);
  const stored = await asReviewer("GET", `/api/v1/approvals/${verdict.approval.id}`);
  assert.equal(stored.execution.status, "executed");
  assert.equal(stored.execution.digest_matches, true);
});

test("an edit that an execute() without arguments cannot run is not run: the agent is told the edit", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("edit-retry");
  let ran = false;
  const reviewer = decide(run, { decision: "approve", arguments: { customer_id: "T-4822" } });
  const verdict = await hitl.gateCall(served, deleteCall(run), { execute: () => (ran = true) });
  await reviewer;

  assert.equal(ran, false);
  assert.equal(verdict.state, "edit_to_retry");
  assert.match(verdict.message, /Make the call again with exactly these arguments: \{"customer_id": "T-4822"\}$/);
});

test("a call no rule gates runs at once, and nothing is queued", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("ungated");
  const verdict = await hitl.gateCall(served, { ...deleteCall(run), kind: "worker" }, { execute: () => "ran" });
  assert.deepEqual([verdict.state, verdict.allowed, verdict.result], ["not_gated", true, "ran"]);
});

test("a shadow rule and a false condition let the call through: allowed, counted, never queued", async () => {
  const shadow = await makeConfig("Shadow", [{ kind: "delete", match: "*", mode: "shadow" }]);
  const condition = await makeConfig("Big refunds", [{ kind: "delete", match: "*", condition: "arguments.amount_cents > 10000" }]);
  const hitl = client();
  const run = runId("allowed");

  const counted = await hitl.gateCall(await hitl.served(shadow), deleteCall(run), { execute: () => "ran" });
  assert.deepEqual([counted.state, counted.allowed, counted.result], ["allowed", true, "ran"]);

  const small = deleteCall(run, { callId: "call_2", arguments: { amount_cents: 500 } });
  const through = await hitl.gateCall(await hitl.served(condition), small, { execute: () => "ran" });
  assert.deepEqual([through.state, through.allowed, through.result], ["allowed", true, "ran"]);

  const queued = await asReviewer("GET", "/api/v1/approvals?status=pending");
  assert.equal(queued.results.filter((r) => r.run_id === run).length, 0);
});

test("a wait that gives up says so and runs nothing; the request stays in the queue", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("timeout");
  let ran = false;
  const started = Date.now();
  const verdict = await hitl.gateCall(served, deleteCall(run), { execute: () => (ran = true), waitTimeout: 1 });
  assert.ok(Date.now() - started < 5000);
  assert.equal(ran, false);
  assert.equal(verdict.state, "timeout");
  assert.match(verdict.message, /^Still waiting for a person's decision/);
  assert.equal((await pendingOf(run)).length, 1);
  await asReviewer("POST", `/api/v1/approvals/${verdict.approval.id}/decision`, { decision: "reject", reason: "tidy up" });
});

test("a rejected request's JSON changed to approved is refused by its own receipt", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("forged");
  const reviewer = decide(run, { decision: "reject", reason: "no" });
  const rejected = await hitl.gateCall(served, deleteCall(run));
  await reviewer;
  assert.equal(rejected.state, "rejected");

  const call = deleteCall(run);
  const digest = callDigest(call.target, call.operation, call.arguments);
  const forged = {
    ...rejected.approval, status: "approved",
    decision: { ...rejected.approval.decision, outcome: "approved", action: "resume", call_digest: digest },
  };
  const verdict = await hitl.judged(served, call, forged);
  assert.equal(verdict.state, "receipt_refused");
  assert.equal(verdict.allowed, false);
  assert.match(verdict.message, /the receipt says the request was rejected, not approved/);

  const unsigned = await hitl.judged(served, call, { ...forged, receipt: forged.receipt.replace(/\.[^.]+$/, ".AAAA") });
  assert.equal(unsigned.state, "receipt_refused");
  assert.match(unsigned.message, /the receipt does not verify/);
});

test("ask: people's answers come back by question id; a decline is not an answer", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("ask");
  const question = { id: "env", prompt: "Deploy where?", type: "choice", options: [{ value: "staging" }, { value: "prod" }] };
  const ids = { runId: run, threadId: "thr_1", caller: "support-bot" };

  const answering = decide(run, { decision: "answer", answers: { env: "staging" } });
  const answers = await hitl.ask(served, question, { ...ids, callId: "ask-env" });
  await answering;
  assert.equal(answers.state, "answered");
  assert.equal(answers.values.env, "staging");
  assert.match(answers.message, /answered:\n- Deploy where\? \(env\): staging$/);

  const declining = decide(run, { decision: "decline", reason: "Not my call." });
  const declined = await hitl.ask(served, question, { ...ids, callId: "ask-env-2" });
  await declining;
  assert.equal(declined.state, "declined");
  assert.equal(declined.reason, "Not my call.");
  assert.deepEqual(declined.values, {});
});

test("reviewPlan: approved, or changes asked with the reviewer's words", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("plan");
  const ids = { runId: run, threadId: "thr_1", caller: "support-bot" };

  const approving = decide(run, { decision: "approve" });
  const review = await hitl.reviewPlan(served, "1. Refund\n2. Close the ticket", { ...ids, callId: "plan-1" });
  await approving;
  assert.deepEqual([review.state, review.approved], ["approved", true]);

  const revising = decide(run, { decision: "revise", reason: "Refund only half." });
  const revised = await hitl.reviewPlan(served, "1. Refund all", { ...ids, callId: "plan-2" });
  await revising;
  assert.deepEqual([revised.state, revised.changesRequested, revised.feedback], ["changes_requested", true, "Refund only half."]);
});

test("a halted run: its question and its plan say halted, never still waiting or revise", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("halt");
  const ids = { runId: run, threadId: "thr_1", caller: "support-bot" };
  await asReviewer("POST", "/api/v1/runs/halt", { run_id: run, reason: "Runaway agent." });
  try {
    const answers = await hitl.ask(served, { id: "go", prompt: "Go on?", type: "boolean" }, { ...ids, callId: "q" });
    assert.equal(answers.state, "halted");
    assert.match(answers.message, /halted this run: Runaway agent\. Nobody will answer these questions\. Stop the run now/);
    const review = await hitl.reviewPlan(served, "Keep going", { ...ids, callId: "p" });
    assert.deepEqual([review.state, review.approved, review.changesRequested], ["halted", false, false]);
    const gated = await hitl.gateCall(served, deleteCall(run), { execute: () => assert.fail("a halted run's call ran") });
    assert.equal(gated.state, "rejected");
    assert.match(gated.message, /Runaway agent/);
  } finally {
    await asReviewer("DELETE", `/api/v1/runs/halt/${run}`);
  }
});

test("bad input comes back as a HitlError naming the field, never as a run", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("bad");
  await assert.rejects(
    hitl.gateCall(served, deleteCall(run, { target: "x".repeat(501) }), { execute: () => assert.fail("ran") }),
    (error) => error.name === "HitlError" && error.status === 400 && "target" in error.fields,
  );
});

test("run once: `started` is recorded before the call runs, and an engine restarted after it does not run it (in doubt)", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("started");
  const reviewer = decide(run, { decision: "approve" });
  const first = await hitl.decideCall(served, deleteCall(run));
  await reviewer;
  assert.equal(first.state, "approved");

  // The first engine records `started`, and then dies before it reports an outcome.
  const started = await hitl.started(first);
  assert.equal(started.state, "approved");
  assert.equal((await asReviewer("GET", `/api/v1/approvals/${first.approval.id}`)).execution.status, "started");

  // Restarted, it asks again for the same call: it gets the same request back and does not run it.
  let ran = false;
  const again = await client().gateCall(served, deleteCall(run), { execute: () => (ran = true) });
  assert.equal(ran, false);
  assert.equal(again.state, "in_doubt");
  assert.equal(again.allowed, false);
  assert.match(again.message, /approved and started .*nobody knows whether it ran\. It was not run again\. Do not retry it/);
  // Two engines holding the same approval: the second `started` is refused, so only one could ever run it.
  const second = await client().started(first);
  assert.equal(second.state, "in_doubt");
  assert.equal((await asReviewer("GET", `/api/v1/approvals/${first.approval.id}`)).execution.status, "started");
});

test("gateCall records `started` before `execute` runs", async () => {
  const hitl = client();
  const served = await hitl.served(portal.configId);
  const run = runId("started-first");
  const reviewer = decide(run, { decision: "approve" });
  const seen = [];
  let asked = null;
  const verdict = await hitl.gateCall(served, deleteCall(run), {
    onPending: (approval) => (asked = approval.id),
    execute: async () => {
      const approval = await asReviewer("GET", `/api/v1/approvals/${asked}`);
      seen.push(approval.execution?.status ?? null);
      return "crm-op-2";
    },
  });
  await reviewer;
  assert.deepEqual(seen, ["started"]);
  assert.equal((await asReviewer("GET", `/api/v1/approvals/${verdict.approval.id}`)).execution.status, "executed");
});

test("a wait a proxy answers 502 then 503 (a node restarting) asks again and surfaces nothing", async () => {
  let refused = 0;
  const proxy = createServer(async (request, response) => {
    if (request.url.includes("wait=") && refused < 2) {
      refused += 1;
      response.writeHead(refused === 1 ? 502 : 503, { "Content-Type": "text/html" });
      response.end("<html><body><h1>Bad Gateway</h1></body></html>"); // nginx's page, not the JSON envelope
      return;
    }
    const chunks = [];
    for await (const chunk of request) chunks.push(chunk);
    const headers = { ...request.headers };
    for (const hop of ["host", "connection", "content-length"]) delete headers[hop];
    const upstream = await fetch(portal.url + request.url, {
      method: request.method,
      headers,
      body: chunks.length ? Buffer.concat(chunks) : undefined,
    });
    response.writeHead(upstream.status, { "Content-Type": upstream.headers.get("content-type") ?? "application/json" });
    response.end(Buffer.from(await upstream.arrayBuffer()));
  });
  await new Promise((listening) => proxy.listen(0, "127.0.0.1", listening));
  const warned = [];
  const hitl = new HitlClient(`http://127.0.0.1:${proxy.address().port}`, portal.engineKey, {
    log: { info() {}, warn: (message) => warned.push(message) },
  });
  try {
    const served = await hitl.served(portal.configId);
    const run = runId("restart");
    const deciding = decide(run, { decision: "approve" });
    const verdict = await hitl.gateCall(served, deleteCall(run), { execute: () => "exec_restart", waitTimeout: 30 });
    await deciding;
    assert.equal(verdict.state, "approved");
    assert.equal(refused, 2);
    assert.equal(warned.length, 2); // each said as a reconnect, never thrown
  } finally {
    proxy.closeAllConnections();
    proxy.close();
  }
});
