// What the TypeScript client's gate-and-wait adds over a raw fetch loop making the same HTTP exchanges.
//
//   HITL_URL=… HITL_ADMIN_TOKEN=… HITL_REVIEWER_TOKEN=… HITL_ENGINE_KEY=… node bench/gate.js [calls]
//
// (`make bench` runs it through bench/typescript.py.) 2×N gated calls are registered and left pending (the
// client gives up waiting at once, as an engine restarting would), then approved through the reviewer API.
// Then, alternating: `gateCall` on one of them — the registration's idempotent replay answers approved, the
// digest and the signed receipt are checked, `started` is recorded, the call runs (a no-op), the outcome is
// reported — and a raw fetch loop on another, making the same requests and nothing else (no digest, no
// receipt, no JSON beyond parsing). The machine's load moves each HTTP exchange by far more than 2 ms, so
// each side's own time is its wall time minus the time inside fetch (the body read included): the figure
// is the client's own time per call minus the raw loop's, p50. Prints JSON.
import { performance } from "node:perf_hooks";

import { HitlClient, idempotencyKey } from "hitl-client";

const env = (name) => process.env[name] ?? (console.error(`${name} is not set`), process.exit(2));
const [url, admin, reviewer, engine] = ["HITL_URL", "HITL_ADMIN_TOKEN", "HITL_REVIEWER_TOKEN", "HITL_ENGINE_KEY"].map(env);
const calls = Number(process.argv[2] ?? 100);

async function api(token, method, path, body) {
  const response = await fetch(url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : null };
}

const config = (await api(admin, "POST", "/api/v1/configs", { name: `TypeScript bench ${Date.now()}` })).json;
await api(admin, "PATCH", `/api/v1/configs/${config.id}`, { pass_information_level: "full" });
await api(admin, "POST", `/api/v1/configs/${config.id}/rules`, { kind: "delete", match: "*" });
await api(admin, "POST", `/api/v1/configs/${config.id}/publish`, {});

// fetch, timed: the exchange and its body read, as both sides wait for them.
let inHttp = 0;
async function timedFetch(input, init) {
  const started = performance.now();
  try {
    const response = await fetch(input, init);
    const body = await response.arrayBuffer();
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  } finally {
    inHttp += performance.now() - started;
  }
}

const quiet = { info() {}, warn() {} };
const client = new HitlClient(url, engine, { log: quiet, fetch: timedFetch });
const served = await client.served(config.id);
const run = `bench-${Date.now()}`;
const callOf = (i) => ({
  kind: "delete", target: `customer T-${i}`, operation: "delete_customer", runId: run, threadId: "thr", callId: `call-${i}`,
  caller: "bench", arguments: { customer_id: `T-${i}` },
});

// Registered and left pending, then approved.
const ids = [];
for (let i = 0; i < 2 * calls; i++) ids.push((await client.decideCall(served, callOf(i), { waitTimeout: 0 })).approval.id);
for (const id of ids) {
  const decided = await api(reviewer, "POST", `/api/v1/approvals/${id}/decision`, { decision: "approve" });
  if (decided.status !== 200) throw new Error(`approving ${id}: ${decided.status} ${JSON.stringify(decided.json)}`);
}
await client.jwks(); // the receipt keys, fetched once as a running engine holds them

async function raw(i) {
  const call = callOf(i);
  const gate = served.gates[0];
  const body = {
    kind: "gate", config_id: served.config_id, config_version: served.version, rule_id: gate.id, run_id: call.runId,
    thread_id: call.threadId, caller: call.caller, target: call.target, operation: call.operation, arguments: call.arguments,
  };
  const headers = { Authorization: `Bearer ${engine}`, "Content-Type": "application/json", Accept: "application/json" };
  const registered = await (await timedFetch(url + "/api/v1/approvals", { method: "POST", headers: { ...headers, "Idempotency-Key": idempotencyKey(call.runId, call.threadId, call.callId) }, body: JSON.stringify(body) })).json();
  if (registered.status !== "approved") throw new Error(`raw: ${registered.status}`);
  const outcome = `${url}/api/v1/approvals/${registered.id}/outcome`;
  await (await timedFetch(outcome, { method: "POST", headers, body: JSON.stringify({ status: "started" }) })).text();
  await (await timedFetch(outcome, { method: "POST", headers, body: JSON.stringify({ status: "executed" }) })).text();
}

async function gated(i) {
  const verdict = await client.gateCall(served, callOf(i), { execute: () => "ok", waitTimeout: 0 });
  if (verdict.state !== "approved") throw new Error(`gateCall: ${verdict.state}: ${verdict.message}`);
}

/** The call's own time: wall time minus the time inside fetch. */
const own = async (fn) => {
  inHttp = 0;
  const started = performance.now();
  await fn();
  return [performance.now() - started - inHttp, performance.now() - started];
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

await raw(0).catch(() => {}); // one of each first: connections open, code warm (not counted)
const [clientOwn, rawOwn, clientWall, rawWall] = [[], [], [], []];
for (let i = 1; i < calls; i++) {
  // Alternating, so a slower moment of the machine falls on both sides alike.
  const [c, cw] = await own(() => gated(2 * i));
  const [r, rw] = await own(() => raw(2 * i + 1));
  clientOwn.push(c), clientWall.push(cw), rawOwn.push(r), rawWall.push(rw);
}
const result = {
  calls: calls - 1,
  client_own_p50_ms: median(clientOwn),
  raw_fetch_own_p50_ms: median(rawOwn),
  client_wall_p50_ms: median(clientWall),
  raw_fetch_wall_p50_ms: median(rawWall),
};
result.added_p50_ms = result.client_own_p50_ms - result.raw_fetch_own_p50_ms;
console.log(JSON.stringify(result));
