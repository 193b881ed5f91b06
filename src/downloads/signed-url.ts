// How long a signed CDN URL stays usable, read from the URL itself: the service's CDN URLs carry a
// `token=` JWT whose `exp` claim is the expiry (docs/service-behaviour.md#signed-url-expiry). A listing's
// renditions are used while it holds, instead of asking /deviation/{id} for the same URL again.

/** A URL used this close to its expiry would likely be refused mid-transfer or on a resume: fetched anew instead. */
export const SIGNED_URL_MARGIN_MS = 60_000;

/**
 * When the URL's signature expires (ms since the epoch); `null` when the URL states no expiry (no token, or
 * a token without `exp`: used as is, and the CDN's answer decides); `undefined` for a token that cannot be
 * read (treated as expired).
 */
export function signedUrlExpiry(src: string): number | null | undefined {
  let token: string | null;
  try {
    token = new URL(src).searchParams.get("token");
  } catch {
    return undefined;
  }
  if (token === null) return null;
  const payload = token.split(".")[1];
  if (!payload) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    if (typeof claims !== "object" || claims === null) return undefined;
    const exp = (claims as { exp?: unknown }).exp;
    if (exp === undefined) return null;
    return typeof exp === "number" && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a signed URL can still be handed to the CDN at `nowMs`, with `marginMs` to spare. */
export function isSignedUrlUsable(src: string, nowMs: number, marginMs = SIGNED_URL_MARGIN_MS): boolean {
  const exp = signedUrlExpiry(src);
  if (exp === null) return true;
  return exp !== undefined && exp - marginMs > nowMs;
}
