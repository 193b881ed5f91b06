// The simulator's token state: clients, authorization codes, access and refresh tokens, with the
// service's rules — single-use rotating refresh tokens bound to their client
// (docs/service-behaviour.md#refresh-single-use), lifetimes on the sim clock.
import { randomBytes } from "node:crypto";
import type { SimClock } from "./clock.ts";

export type SimClient = {
  clientId: string;
  clientSecret?: string;
  redirectUris: string[];
  /** OAuth 2.1: PKCE S256 required, no implicit grant, no query-string tokens. */
  oauth21?: boolean;
  implicit?: boolean;
};

export const KNOWN_SCOPES = [
  "basic",
  "browse",
  "browse.mlt",
  "collection",
  "comment.post",
  "feed",
  "gallery",
  "message",
  "note",
  "publish",
  "stash",
  "user",
  "user.manage",
] as const;

/** What client-credentials tokens may do: the public endpoints. */
export const CLIENT_TOKEN_SCOPES = ["basic", "browse", "browse.mlt"];

export const REFRESH_LIFETIME_MS = 90 * 86_400_000;
export const CODE_LIFETIME_MS = 10 * 60_000;

export type AccessToken = {
  token: string;
  kind: "user" | "client";
  clientId: string;
  userId?: string;
  scopes: string[];
  expiresAtMs: number;
  grantId?: string;
  revoked: boolean;
};

export type RefreshToken = {
  token: string;
  clientId: string;
  userId: string;
  scopes: string[];
  expiresAtMs: number;
  grantId: string;
  state: "live" | "used" | "revoked";
};

export type AuthCode = {
  code: string;
  clientId: string;
  userId: string;
  redirectUri: string;
  scopes: string[];
  challenge?: string;
  challengeMethod?: "S256" | "plain";
  expiresAtMs: number;
  used: boolean;
};

export type TokenLookup = { ok: true; token: AccessToken } | { ok: false; reason: "unknown" | "expired" | "revoked"; token?: AccessToken };

function randomToken(bytes: number): string {
  return randomBytes(bytes).toString("hex");
}

export class TokenStore {
  readonly clients = new Map<string, SimClient>();
  private readonly access = new Map<string, AccessToken>();
  private readonly refresh = new Map<string, RefreshToken>();
  private readonly codes = new Map<string, AuthCode>();
  private grantSeq = 0;

  constructor(
    private readonly clock: SimClock,
    clients: SimClient[],
    public accessLifetimeS: number,
  ) {
    for (const c of clients) this.clients.set(c.clientId, c);
  }

  /** Known scopes as requested; any unknown one and the grant falls back to "basic" (what the service does). */
  grantScopes(requested: string | undefined): string[] {
    const asked = (requested ?? "")
      .split(/[\s+,]+/)
      .map((s) => s.trim())
      .filter(Boolean);
    if (asked.length === 0) return ["basic"];
    if (asked.some((s) => !(KNOWN_SCOPES as readonly string[]).includes(s))) return ["basic"];
    return [...new Set(asked)];
  }

  newGrantId(): string {
    return `g${++this.grantSeq}`;
  }

  issueAccess(input: { kind: "user" | "client"; clientId: string; userId?: string; scopes: string[]; grantId?: string }): AccessToken {
    const token: AccessToken = {
      token: randomToken(25),
      kind: input.kind,
      clientId: input.clientId,
      ...(input.userId !== undefined ? { userId: input.userId } : {}),
      scopes: input.scopes,
      expiresAtMs: this.clock.nowMs() + this.accessLifetimeS * 1000,
      ...(input.grantId !== undefined ? { grantId: input.grantId } : {}),
      revoked: false,
    };
    this.access.set(token.token, token);
    return token;
  }

  issueRefresh(input: { clientId: string; userId: string; scopes: string[]; grantId: string }): RefreshToken {
    const token: RefreshToken = {
      token: randomToken(25),
      ...input,
      expiresAtMs: this.clock.nowMs() + REFRESH_LIFETIME_MS,
      state: "live",
    };
    this.refresh.set(token.token, token);
    return token;
  }

  issueCode(input: Omit<AuthCode, "code" | "expiresAtMs" | "used">): AuthCode {
    const code: AuthCode = { ...input, code: randomToken(20), expiresAtMs: this.clock.nowMs() + CODE_LIFETIME_MS, used: false };
    this.codes.set(code.code, code);
    return code;
  }

  /** Single use: a second lookup of the same code fails. */
  takeCode(code: string): AuthCode | undefined {
    const found = this.codes.get(code);
    if (!found || found.used || found.expiresAtMs <= this.clock.nowMs()) return undefined;
    found.used = true;
    return found;
  }

  lookupAccess(token: string): TokenLookup {
    const found = this.access.get(token);
    if (!found) return { ok: false, reason: "unknown" };
    if (found.revoked) return { ok: false, reason: "revoked", token: found };
    if (found.expiresAtMs <= this.clock.nowMs()) return { ok: false, reason: "expired", token: found };
    return { ok: true, token: found };
  }

  /** Consumes a refresh token: it is dead from here on, whatever happens to the response. */
  consumeRefresh(token: string, clientId: string): RefreshToken | undefined {
    const found = this.refresh.get(token);
    if (found?.state !== "live" || found.expiresAtMs <= this.clock.nowMs()) return undefined;
    if (found.clientId !== clientId) return undefined;
    found.state = "used";
    return found;
  }

  findRefresh(token: string): RefreshToken | undefined {
    return this.refresh.get(token);
  }

  findAccess(token: string): AccessToken | undefined {
    return this.access.get(token);
  }

  /** Revoke default: every token of that user for that client. */
  revokeUserClient(userId: string, clientId: string): void {
    for (const t of this.access.values()) if (t.userId === userId && t.clientId === clientId) t.revoked = true;
    for (const t of this.refresh.values()) if (t.userId === userId && t.clientId === clientId && t.state === "live") t.state = "revoked";
  }

  revokeAllForUser(userId: string): void {
    for (const t of this.access.values()) if (t.userId === userId) t.revoked = true;
    for (const t of this.refresh.values()) if (t.userId === userId && t.state === "live") t.state = "revoked";
  }

  expireAllAccess(): void {
    const past = this.clock.nowMs() - 1;
    for (const t of this.access.values()) t.expiresAtMs = Math.min(t.expiresAtMs, past);
  }

  counts(): { access: number; liveAccess: number; refresh: number; liveRefresh: number } {
    const now = this.clock.nowMs();
    let liveAccess = 0;
    let liveRefresh = 0;
    for (const t of this.access.values()) if (!t.revoked && t.expiresAtMs > now) liveAccess++;
    for (const t of this.refresh.values()) if (t.state === "live" && t.expiresAtMs > now) liveRefresh++;
    return { access: this.access.size, liveAccess, refresh: this.refresh.size, liveRefresh };
  }
}
