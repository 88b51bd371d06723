// A decided request's signed receipt (docs/api.md, "Receipts"): a compact JWS, EdDSA over Ed25519, its
// header naming the key (`kid`) that the portal's /.well-known/jwks.json lists. This module checks the
// signature and gives back the claims; `judge` (verdicts.ts) holds them against the answer and the call.
import { compactVerify, decodeProtectedHeader, importJWK, type JWK } from "jose";

import type { ReceiptCheck } from "./verdicts.js";
import type { ReceiptClaims } from "./types.js";

export const JWKS_PATH = "/.well-known/jwks.json";
// A portal and an engine whose clocks differ by this much still agree a receipt is not from the future.
export const CLOCK_LEEWAY_SECONDS = 300;
const REQUIRED_CLAIMS = ["iss", "sub", "status", "action", "decided_at", "iat"] as const;

export type ReceiptKeys = Map<string, CryptoKey | Uint8Array>;

/** kid → key of a JWKS document; a key that is not an Ed25519 signing key is left out. */
export async function keysOf(jwks: unknown): Promise<ReceiptKeys> {
  const keys: ReceiptKeys = new Map();
  const listed = (jwks as { keys?: unknown })?.keys;
  for (const jwk of Array.isArray(listed) ? listed : []) {
    if (!jwk || typeof jwk !== "object" || !(jwk as JWK).kid || (jwk as JWK).kty !== "OKP" || (jwk as JWK).crv !== "Ed25519") continue;
    try {
      keys.set((jwk as JWK).kid!, await importJWK(jwk as JWK, "EdDSA"));
    } catch {
      continue;
    }
  }
  return keys;
}

/** The key a receipt names (its protected header's `kid`), read before it is verified; null when none. */
export function kidOf(receipt: unknown): string | null {
  if (typeof receipt !== "string" || !receipt) return null;
  try {
    const kid = decodeProtectedHeader(receipt).kid;
    return typeof kid === "string" && kid ? kid : null;
  } catch {
    return null;
  }
}

/** The receipt's claims once its signature verifies against `keys`, or the problem that stops it. */
export async function verifyReceipt(receipt: unknown, keys: ReceiptKeys, now: number = Date.now() / 1000): Promise<ReceiptCheck> {
  if (typeof receipt !== "string" || !receipt) return { problem: "the approved request carries no receipt: nothing proves the approval" };
  const kid = kidOf(receipt);
  if (!kid) return { problem: "the receipt is not a compact JWS that names its key (no `kid` in its header)" };
  const key = keys.get(kid);
  if (!key) return { problem: `the receipt is signed with key ${JSON.stringify(kid)}, which the portal's JWKS does not list` };
  let payload: Uint8Array;
  try {
    const verified = await compactVerify(receipt, key, { algorithms: ["EdDSA", "Ed25519"] });
    payload = verified.payload;
  } catch (error) {
    return { problem: `the receipt does not verify: ${(error as Error).message}` };
  }
  let claims: ReceiptClaims;
  try {
    claims = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    return { problem: "the receipt's payload is not JSON" };
  }
  const missing = REQUIRED_CLAIMS.filter((name) => claims[name] === undefined || claims[name] === null);
  if (missing.length) return { problem: `the receipt lacks ${missing.join(", ")}` };
  if (typeof claims.iat !== "number" || claims.iat > now + CLOCK_LEEWAY_SECONDS) return { problem: "the receipt is issued in the future" };
  return { claims };
}
