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

/** What taking a state found: its flow's data, or why not ("used": this state already completed once). */
export type StateTake<T> = { check: "ok"; data: T } | { check: "unknown" | "expired" | "used" };

/**
 * Random, single-use, expiring `state` values, each with its flow's data (the dashboard keeps the PKCE
 * verifier there). A used state is remembered until it would have expired, so a replay is told apart from a
 * forgery. At most `limit` live states: the oldest goes first.
 */
export class StateStore<T = undefined> {
  private readonly issued = new Map<string, { expiresAt: number; data: T }>();
  private readonly used = new Map<string, number>();

  constructor(
    private readonly ttlMs = 10 * 60_000,
    private readonly now: () => number = Date.now,
    private readonly limit = 1000,
  ) {}

  /** A new state, keeping `data` for whoever takes it. */
  issue(data?: T): string {
    this.prune();
    const state = randomBytes(24).toString("base64url");
    this.issued.set(state, { expiresAt: this.now() + this.ttlMs, data: data as T });
    while (this.issued.size > this.limit) this.issued.delete(this.issued.keys().next().value as string);
    return state;
  }

  /** Consumes the state: a second use of the same value is "unknown". */
  consume(state: string | undefined | null): StateCheck {
    const taken = this.take(state);
    return taken.check === "used" ? "unknown" : taken.check;
  }

  /** Consumes the state and hands back its flow's data; a second use of the same value is "used". */
  take(state: string | undefined | null): StateTake<T> {
    if (!state) return { check: "unknown" };
    this.prune();
    for (const [candidate, entry] of this.issued) {
      if (!safeEqual(candidate, state)) continue;
      this.issued.delete(candidate);
      if (this.now() > entry.expiresAt) return { check: "expired" };
      this.used.set(candidate, entry.expiresAt);
      return { check: "ok", data: entry.data };
    }
    for (const candidate of this.used.keys()) if (safeEqual(candidate, state)) return { check: "used" };
    return { check: "unknown" };
  }

  /** Forgets used states past their expiry (issued ones stay, so a late arrival is told "expired"). */
  private prune(): void {
    const now = this.now();
    for (const [candidate, expiresAt] of this.used) if (now > expiresAt) this.used.delete(candidate);
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
