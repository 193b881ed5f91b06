// Capability links to one thumbnail, for the digests that reach people outside the dashboard (the webhook and
// Discord): /thumb/<variant>/<sha256>.webp?sig=<mac>. The mac is an HMAC-SHA256 over "thumb:<variant>:<sha256>"
// under a key derived from the secret key (src/secret-key.ts) with a label of its own, so a link opens that
// one size of that one picture and nothing else: not the original, not another size, no page, no feed.
// A link never expires: a sha256 names its bytes for ever, and the picture is what the channel's readers
// already saw in the message. Revoking every link means changing the secret key, which the stored tokens
// are encrypted under too (src/crypto/token-cipher.ts): every account then logs in again.
import { createHmac, timingSafeEqual } from "node:crypto";
import { deriveKey } from "../crypto/derive-key.ts";
import type { ThumbVariantName } from "./thumbnails.ts";

/** The query parameter that carries the mac; src/redact.ts scrubs it from any log line. */
export const THUMB_SIG_PARAM = "sig";
/** 16 bytes of the mac: 22 base64url characters, out of reach of guessing and short enough for any channel. */
const SIG_BYTES = 16;

/** The key the links are signed with, derived from the secret key so it cannot stand in for any other key dvault uses. */
export function thumbLinkKey(secretKey: Buffer): Buffer {
  return deriveKey(secretKey, "dvault thumbnail link v1");
}

/** The mac of one variant of one thumbnail under the link key. */
export function thumbSig(linkKey: Buffer, variant: ThumbVariantName, sha256: string): string {
  return createHmac("sha256", linkKey).update(`thumb:${variant}:${sha256}`).digest().subarray(0, SIG_BYTES).toString("base64url");
}

/** Whether `given` is the mac of exactly this variant and sha256, compared in constant time. */
export function thumbSigValid(linkKey: Buffer, variant: ThumbVariantName, sha256: string, given: string): boolean {
  const expected = Buffer.from(thumbSig(linkKey, variant, sha256));
  const presented = Buffer.from(given);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

/** The absolute signed address of a thumbnail on the dashboard at `base` (DVAULT_PUBLIC_URL). */
export function signedThumbUrl(base: string, linkKey: Buffer, variant: ThumbVariantName, sha256: string): string {
  return `${base}/thumb/${variant}/${sha256}.webp?${THUMB_SIG_PARAM}=${thumbSig(linkKey, variant, sha256)}`;
}
