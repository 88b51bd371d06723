// The portal's shapes, from the OpenAPI schema it serves (schema.ts: `npm run types`, checked against
// the served schema by test/schema.test.js), and the call an engine describes.
import type { components } from "./schema.js";

type Schemas = components["schemas"];

export type Served = Schemas["ServedConfig"];
export type Gate = Schemas["Rule"];
export type Approval = Schemas["ApprovalRequest"];
export type Allowed = Schemas["Allowed"];
export type Inert = Schemas["Inert"];
/** What registering or reading a request answers: the request, or a notice that nothing was stored. */
export type PortalAnswer = Approval | Allowed | Inert;
export type Question = Schemas["QuestionRequest"];

/** A receipt's payload (docs/api.md, "Receipts"), once its signature verifies. */
export interface ReceiptClaims {
  iss: string;
  sub: string;
  workspace?: string;
  config_id?: string;
  config_version?: number;
  rule_id?: string | null;
  run_id?: string;
  status: string;
  action: string;
  call_digest: string | null;
  decided_by: string | null;
  decided_at: string;
  grant_id?: string | null;
  iat: number;
  [claim: string]: unknown;
}

/** One call an agent wants to make, as the portal sees it (the Python client's GatedCall). */
export interface GatedCall {
  kind: "delete" | "mcp_server" | "cell" | "worker";
  target: string;
  operation: string;
  runId: string;
  threadId: string;
  callId: string;
  caller: string;
  point?: "entry" | "exit";
  summary?: string;
  arguments?: unknown;
  /** A JSON Schema of the arguments: a reviewer's edit (where the rule allows edits) is checked against it. */
  argumentsSchema?: Record<string, unknown>;
  /** The email of the person on whose behalf the run acts (four eyes). */
  requestedBy?: string;
}
