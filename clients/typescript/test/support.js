// What every test needs: the portal the pytest wrapper started (tests/clients/test_typescript.py), its
// keys, and a reviewer at the queue deciding through the reviewer API, as a person would.
import { randomUUID } from "node:crypto";

import { HitlClient } from "hitl-client";

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through tests/clients/test_typescript.py (make test)`);
  return value;
}

export const portal = {
  get url() {
    return env("HITL_URL");
  },
  get engineKey() {
    return env("HITL_ENGINE_KEY");
  },
  /** Published v1 at level full: every delete gated (edits allowed), mcp_billing gated. */
  get configId() {
    return env("HITL_CONFIG_ID");
  },
};

export const quiet = { info() {}, warn() {} };

export function client() {
  return new HitlClient(portal.url, portal.engineKey, { log: quiet });
}

/** A run id of its own per test: the tests run side by side, and each reviewer decides only its run. */
export function runId(name) {
  return `${name}-${randomUUID().slice(0, 8)}`;
}

export async function api(token, method, path, body) {
  const response = await fetch(portal.url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const json = text ? JSON.parse(text) : null;
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return json;
}

export const asReviewer = (method, path, body) => api(env("HITL_REVIEWER_TOKEN"), method, path, body);
export const asAdmin = (method, path, body) => api(env("HITL_ADMIN_TOKEN"), method, path, body);
export const asEngine = (method, path, body) => api(env("HITL_ENGINE_KEY"), method, path, body);

/** The people the wrapper made tokens for, by email (the conformance table's defaults name them so). */
const PEOPLE = { "alice@acme.test": "HITL_ADMIN_TOKEN", "bob@acme.test": "HITL_REVIEWER_TOKEN" };

/** A call as the member `email` makes it, with their own token: a delegation is the delegator's own act. */
export function asPerson(email) {
  const variable = PEOPLE[email.toLowerCase()];
  if (!variable) throw new Error(`no token for ${email}: tests/clients/test_typescript.py makes them for ${Object.keys(PEOPLE)}`);
  return (method, path, body) => api(env(variable), method, path, body);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The run's pending requests once `count` of them are in the queue (the engine has asked). */
export async function pendingOf(run, count = 1, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const pending = [];
    for (let page = "/api/v1/approvals?status=pending"; page; ) {
      const listed = await asReviewer("GET", page);
      pending.push(...listed.results.filter((r) => r.run_id === run));
      page = listed.next ? new URL(listed.next).pathname + new URL(listed.next).search : null;
    }
    if (pending.length >= count) return pending;
    await sleep(50);
  }
  throw new Error(`the engine never asked: fewer than ${count} pending requests of ${run} after ${timeoutMs} ms`);
}

/** A reviewer who waits for the run's next pending request and decides it: `{decision, reason?, …}`. */
export async function decide(run, body, timeoutMs) {
  const [approval] = await pendingOf(run, 1, timeoutMs);
  return asReviewer("POST", `/api/v1/approvals/${approval.id}/decision`, body);
}

/** The person the run acts for (the reviewer, named in the call's requestedBy) takes its pending request back. */
export async function withdraw(run, body, timeoutMs) {
  const [approval] = await pendingOf(run, 1, timeoutMs);
  return asReviewer("POST", `/api/v1/approvals/${approval.id}/withdraw`, body);
}

/**
 * The approver groups and delegations a world names (the conformance table's `config.groups` /
 * `config.delegations`), made over the People API as the admin and each delegator would: groups by the
 * admin (`name` → `grp_…`, rules name them by name), a delegation by its delegator, for a day. Returns the
 * groups and `end()`, which ends those delegations (the workspace is shared with the other tests).
 */
export async function makePeople({ groups = [], delegations = [] } = {}) {
  const made = {};
  for (const group of groups) {
    // Names are unique in a workspace and the tests share one: the rules name the group by its id.
    const created = await asAdmin("POST", "/api/v1/groups", { name: `${group.name} ${randomUUID().slice(0, 6)}` });
    for (const email of group.members) await asAdmin("POST", `/api/v1/groups/${created.id}/members`, { email });
    made[group.name] = created.id;
  }
  const until = new Date(Date.now() + 24 * 3600 * 1000).toISOString();
  const delegators = [];
  for (const delegation of delegations) {
    await asPerson(delegation.from)("PUT", "/api/v1/me/delegation", { delegate: delegation.to, until });
    delegators.push(delegation.from);
  }
  return {
    groups: made,
    async end() {
      for (const email of delegators) await asPerson(email)("DELETE", "/api/v1/me/delegation");
    },
  };
}

/** A published config of its own (admin API): `rules` as the rules API takes them (`approver_groups` by
 * name when `groups` maps names to ids, as makePeople returns them). */
export async function makeConfig(name, rules, level = "full", groups = {}) {
  const config = await asAdmin("POST", "/api/v1/configs", { name: `${name} ${randomUUID().slice(0, 6)}` });
  await asAdmin("PATCH", `/api/v1/configs/${config.id}`, { pass_information_level: level });
  for (const rule of rules) {
    const named = rule.approver_groups ? { approver_groups: rule.approver_groups.map((name) => groups[name] ?? name) } : {};
    await asAdmin("POST", `/api/v1/configs/${config.id}/rules`, { ...rule, ...named });
  }
  await asAdmin("POST", `/api/v1/configs/${config.id}/publish`, {});
  return config.id;
}
