// A decided request's signed receipt (docs/api.md, "Receipts"): a compact JWS, EdDSA over Ed25519, its
// header naming the key (`kid`) that the portal's /.well-known/jwks.json lists. This module checks the
// signature and gives back the claims; `judge` (verdicts.ts) holds them against the answer and the call.
// node:crypto's one-shot Ed25519 verify, synchronous: WebCrypto's (and so jose's) goes through the libuv
// thread pool, and on a busy machine the hop to a pool thread and back costs more than the check itself.
import { createPublicKey, verify, type JsonWebKey, type KeyObject } from "node:crypto";

import type { ReceiptCheck } from "./verdicts.js";
import type { ReceiptClaims } from "./types.js";

export const JWKS_PATH = "/.well-known/jwks.json";
// A portal and an engine whose clocks differ by this much still agree a receipt is not from the future.
export const CLOCK_LEEWAY_SECONDS = 300;
const REQUIRED_CLAIMS = ["iss", "sub", "status", "action", "decided_at", "iat"] as const;

export type ReceiptKeys = Map<string, KeyObject>;

interface Jwk extends JsonWebKey {
  kid?: string;
}

/** kid → key of a JWKS document; a key that is not an Ed25519 signing key is left out. */
export async function keysOf(jwks: unknown): Promise<ReceiptKeys> {
  const keys: ReceiptKeys = new Map();
  const listed = (jwks as { keys?: unknown })?.keys;
  for (const jwk of Array.isArray(listed) ? listed : []) {
    if (!jwk || typeof jwk !== "object" || !(jwk as Jwk).kid || (jwk as Jwk).kty !== "OKP" || (jwk as Jwk).crv !== "Ed25519") continue;
    try {
      keys.set((jwk as Jwk).kid!, createPublicKey({ key: jwk as JsonWebKey, format: "jwk" }));
    } catch {
      continue;
    }
  }
  return keys;
}

function headerOf(receipt: string): Record<string, unknown> | null {
  try {
    const header = JSON.parse(Buffer.from(receipt.split(".")[0], "base64url").toString("utf8"));
    return header && typeof header === "object" ? header : null;
  } catch {
    return null;
  }
}

/** The key a receipt names (its protected header's `kid`), read before it is verified; null when none. */
export function kidOf(receipt: unknown): string | null {
  if (typeof receipt !== "string" || !receipt) return null;
  const kid = headerOf(receipt)?.kid;
  return typeof kid === "string" && kid ? kid : null;
}

/** The receipt's claims once its signature verifies against `keys`, or the problem that stops it. */
export async function verifyReceipt(receipt: unknown, keys: ReceiptKeys, now: number = Date.now() / 1000): Promise<ReceiptCheck> {
  if (typeof receipt !== "string" || !receipt) return { problem: "the approved request carries no receipt: nothing proves the approval" };
  const kid = kidOf(receipt);
  if (!kid) return { problem: "the receipt is not a compact JWS that names its key (no `kid` in its header)" };
  const key = keys.get(kid);
  if (!key) return { problem: `the receipt is signed with key ${JSON.stringify(kid)}, which the portal's JWKS does not list` };
  const parts = receipt.split(".");
  const alg = headerOf(receipt)?.alg;
  if (parts.length !== 3 || (alg !== "EdDSA" && alg !== "Ed25519")) return { problem: `the receipt is not a compact JWS signed with EdDSA (alg ${JSON.stringify(alg)})` };
  let verified = false;
  try {
    verified = verify(null, Buffer.from(`${parts[0]}.${parts[1]}`, "ascii"), key, Buffer.from(parts[2], "base64url"));
  } catch {
    verified = false;
  }
  if (!verified) return { problem: "the receipt does not verify: its signature is not the portal's key's" };
  let claims: ReceiptClaims;
  try {
    claims = JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8"));
  } catch {
    return { problem: "the receipt's payload is not JSON" };
  }
  const missing = REQUIRED_CLAIMS.filter((name) => claims[name] === undefined || claims[name] === null);
  if (missing.length) return { problem: `the receipt lacks ${missing.join(", ")}` };
  if (typeof claims.iat !== "number" || claims.iat > now + CLOCK_LEEWAY_SECONDS) return { problem: "the receipt is issued in the future" };
  return { claims };
}
