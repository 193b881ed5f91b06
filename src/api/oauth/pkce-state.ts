// PKCE (RFC 7636) and single-use states, and the authorize URL that carries them.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { registerSecret } from "../../redact.ts";
import type { OAuthEndpoints } from "./endpoints.ts";

export type Pkce = { verifier: string; challenge: string; method: "S256" };

/** RFC 7636: a 64-character verifier and its S256 challenge (plain is never offered: 2.1 apps reject it). */
export function createPkce(): Pkce {
  const verifier = randomBytes(48).toString("base64url");
  registerSecret(verifier);
  return { verifier, challenge: s256(verifier), method: "S256" };
}

export function s256(verifier: string): string {
  return createHash("sha256").update(verifier, "ascii").digest("base64url");
}

export type StateCheck = "ok" | "unknown" | "expired";

/** Random, single-use, expiring `state` values for one login. */
export class StateStore {
  private readonly issued = new Map<string, number>();

  constructor(
    private readonly ttlMs = 10 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  issue(): string {
    const state = randomBytes(24).toString("base64url");
    this.issued.set(state, this.now() + this.ttlMs);
    return state;
  }

  /** Consumes the state: a second use of the same value is "unknown". */
  consume(state: string | undefined | null): StateCheck {
    if (!state) return "unknown";
    for (const [candidate, expiresAt] of this.issued) {
      if (!safeEqual(candidate, state)) continue;
      this.issued.delete(candidate);
      return this.now() > expiresAt ? "expired" : "ok";
    }
    return "unknown";
  }
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

// ---------------------------------------------------------------------------------------------
// Authorize URL

export type AuthorizeRequest = {
  endpoints: OAuthEndpoints;
  clientId: string;
  redirectUri: string;
  scopes: readonly string[];
  state: string;
  /** "code" (always with PKCE) or "token" (the implicit grant). */
  responseType: "code" | "token";
  pkce?: Pkce;
};

export function buildAuthorizeUrl(req: AuthorizeRequest): string {
  const url = new URL(req.endpoints.authorize);
  url.searchParams.set("response_type", req.responseType);
  url.searchParams.set("client_id", req.clientId);
  url.searchParams.set("redirect_uri", req.redirectUri);
  url.searchParams.set("scope", req.scopes.join(" "));
  url.searchParams.set("state", req.state);
  if (req.responseType === "code") {
    if (!req.pkce) throw new Error("the authorization code flow always sends PKCE");
    url.searchParams.set("code_challenge", req.pkce.challenge);
    url.searchParams.set("code_challenge_method", req.pkce.method);
  }
  return url.toString();
}
