// The conformance table (clients/conformance/cases.json), the TypeScript client's side: each case's world
// built over the API (a config of its own, the case's rules, published), its `before` and `steps` done as
// the admin and the reviewer would, the client's gateCall / ask / reviewPlan driven through it, and what
// it ran and told the agent held to the case's `expect` — the same file the Python client and the portal run.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { findGate, judge } from "hitl-client";

import { asAdmin, asReviewer, client, decide, makeConfig, makePeople, runId, withdraw } from "./support.js";

const TABLE = JSON.parse(readFileSync(new URL("../../conformance/cases.json", import.meta.url), "utf8"));

// Cases whose world needs the portal's clock or plan moved (a deadline passed, nobody reached for
// HITL_UNDELIVERABLE_SECONDS, the Free plan): over the API alone they cannot be set up; the Python
// side runs them live (tests/test_client_conformance.py); here judge() is held to the portal's answer as
// the table gives it (the test after the loop).
const NEEDS_THE_CLOCK_OR_PLAN = (step) => "expire" in step || "undeliverable" in step;
// Approver groups and delegations are made over the People API (support.js makePeople), as the admin and
// the delegator would: those cases run live here too.
const apiOnly = (c) => !c.steps.some(NEEDS_THE_CLOCK_OR_PLAN) && !c.config.plan;

function callOf(c, run) {
  const { run_id, thread_id, call_id, caller } = { ...TABLE.defaults.run, run_id: run };
  const { requested_by, ...call } = c.call;
  return { ...call, ...(requested_by ? { requestedBy: requested_by } : {}), runId: run_id, threadId: thread_id, callId: call_id, caller };
}

async function before(c, hitl, served, run) {
  for (const step of c.before ?? []) {
    if (step.halt_run) await asAdmin("POST", "/api/v1/runs/halt", { run_id: run, ...step.halt_run });
    if (step.started_before) {
      // An earlier engine made the same registration (same idempotency key), a reviewer decided it, it
      // recorded `started` and died.
      const approval = await hitl.requestApproval(served, callOf(c, run));
      await asReviewer("POST", `/api/v1/approvals/${approval.id}/decision`, step.started_before);
      await hitl.reportOutcome(approval.id, "started");
    }
  }
}

function waitTimeoutOf(c) {
  return c.steps.find((step) => "wait_timeout" in step)?.wait_timeout ?? 20;
}

for (const c of TABLE.cases.filter(apiOnly)) {
  test(`conformance: ${c.id}`, async (t) => {
    const hitl = client();
    const rules = c.config.rules;
    const people = await makePeople(c.config);
    t.after(() => people.end());
    const level = c.config.pass_information_level ?? TABLE.defaults.pass_information_level;
    const served = await hitl.served(await makeConfig(`Conformance ${c.id}`, rules, level, people.groups));
    const run = runId(`conf-${c.id}`);
    const expect = c.expect;
    await before(c, hitl, served, run);
    const reviewer = Promise.all(c.steps.map((step) => (step.decide ? decide(run, step.decide) : step.withdraw ? withdraw(run, step.withdraw) : null)));
    const ran = [];
    const { thread_id, call_id, caller } = TABLE.defaults.run;
    const options = { runId: run, threadId: thread_id, callId: call_id, caller, waitTimeout: 20 };
    let result;
    if (c.call) {
      const call = callOf(c, run);
      assert.equal(Boolean(findGate(served, call)), expect.gated, "gated");
      result = await hitl.gateCall(served, call, { execute: (args) => (ran.push(args), "conformance-op"), waitTimeout: waitTimeoutOf(c) });
    } else if (c.ask) {
      result = await hitl.ask(served, c.ask.questions, { ...options, title: c.ask.title });
    } else {
      result = await hitl.reviewPlan(served, c.plan.plan, { ...options, title: c.plan.title });
    }
    await reviewer;

    assert.equal(result.state, expect.state, result.message);
    if ("allowed" in expect && "allowed" in result) assert.equal(result.allowed, expect.allowed, result.message);
    assert.ok(result.message.includes(expect.message), `${JSON.stringify(expect.message)} not in ${JSON.stringify(result.message)}`);
    if (expect.message_not) assert.ok(!result.message.includes(expect.message_not), result.message);
    assert.equal(ran.length, expect.runs ? 1 : 0, "runs");
    if (expect.runs && c.call) {
      assert.deepEqual(ran[0], expect.arguments ?? c.call.arguments);
      assert.equal(result.edited, expect.edited ?? false);
    }
    if (expect.outcome) {
      const stored = await asReviewer("GET", `/api/v1/approvals/${result.approval.id}`);
      assert.equal(stored.execution?.status, expect.outcome);
    }
    if (expect.state === "in_doubt") {
      // The earlier engine's `started` stands: nothing ran, nothing overwrote it.
      const stored = await asReviewer("GET", `/api/v1/approvals/${result.approval.id}`);
      assert.equal(stored.execution.status, "started");
    }
  });
}

for (const c of TABLE.cases.filter((c) => !apiOnly(c))) {
  test(`conformance: ${c.id} (judge() on the table's answer)`, () => {
    const verdict = judge({}, callOf(c, "run_conformance"), c.answer);
    const expect = c.expect;
    assert.equal(verdict.state, expect.state, verdict.message);
    assert.equal(verdict.allowed, expect.allowed);
    assert.equal(verdict.allowed, expect.runs, "runs");
    assert.ok(verdict.message.includes(expect.message), `${JSON.stringify(expect.message)} not in ${JSON.stringify(verdict.message)}`);
    if (expect.message_not) assert.ok(!verdict.message.includes(expect.message_not), verdict.message);
  });
}
