// Feed tokens: what a feed reader puts in the URL instead of the dashboard token. A token is derived from a
// random nonce under the secret key, so the dashboard can show a reader's URL again while the database holds
// only the nonce and the token's SHA-256 (a copy of the database alone opens no feed); revoking marks the row.
import { createHash, createHmac, randomBytes } from "node:crypto";

/** Every feed token starts with this, so src/redact.ts can find one anywhere in a log line. */
export const FEED_TOKEN_PREFIX = "dvf_";
/** The shape of a token: the prefix and 43 base64url characters (32 bytes). */
export const FEED_TOKEN_RE = /^dvf_[A-Za-z0-9_-]{43}$/;

export function newFeedNonce(): Buffer {
  return randomBytes(16);
}

/** The token of a nonce under the secret key; the same key and nonce give the same token. */
export function feedToken(key: Buffer, nonce: Buffer): string {
  const mac = createHmac("sha256", key).update("dvault feed token\0").update(nonce).digest();
  return `${FEED_TOKEN_PREFIX}${mac.toString("base64url")}`;
}

/** What the database keeps of a token, and what a presented token is looked up by. */
export function feedTokenHash(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}
