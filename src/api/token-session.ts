// An access token in memory (a session) and the sealed columns it comes from: decrypting, sealing and
// deciding whether a token is still fresh enough to use. No I/O.
import { anotherKeyReason } from "../crypto/install-key.ts";
import { type TokenCipher, type TokenField, WrongSecretKeyError } from "../crypto/token-cipher.ts";
import { registerSecret } from "../redact.ts";
import type { TokenGrant } from "./oauth/token-endpoint.ts";
import { ReauthRequiredError } from "./token-errors.ts";
import type { SealedTokens, StoredAccount } from "./token-store.ts";

const MINUTE = 60_000;
export const DAY = 24 * 60 * MINUTE;

/** Refresh this long before expiry (capped at a fifth of the token's lifetime). */
export const DEFAULT_REFRESH_MARGIN_MS = 10 * MINUTE;
/** The service kills refresh tokens at about three months; warn well before. */
export const REFRESH_TOKEN_WARN_AGE_MS = 80 * DAY;

/** What a provider holds in memory between calls. */
export type Session = {
  accessToken: string;
  issuedAt: number;
  expiresAt: number;
  /** The refresh token's fingerprint when the session was read; null for grants without one. */
  fingerprint: string | null;
};

/** Why a session is asked for: ahead of expiry, after a 401 with the token that failed, or on demand. */
export type Trigger = { kind: "expiry"; minValidityMs: number } | { kind: "unauthorized"; failedToken: string } | { kind: "forced" };

export class TokenSessions {
  constructor(
    private readonly cipher: TokenCipher,
    private readonly now: () => number,
    private readonly marginMs: number = DEFAULT_REFRESH_MARGIN_MS,
  ) {}

  /** Decrypts the refresh token of a row (logout needs it); never logged. */
  revealRefreshToken(row: StoredAccount): string | undefined {
    return row.refreshTokenEnc ? this.open(row, row.refreshTokenEnc, "refresh_token") : undefined;
  }

  revealAccessToken(row: StoredAccount): string | undefined {
    return row.accessTokenEnc ? this.open(row, row.accessTokenEnc, "access_token") : undefined;
  }

  private clientToken(row: StoredAccount): string | undefined {
    try {
      return this.revealAccessToken(row);
    } catch (err) {
      if (err instanceof ReauthRequiredError) return undefined;
      throw err;
    }
  }

  /**
   * One sealed token of the row, registered as a secret. Tokens sealed under another key than this install's are a
   * grant this install cannot use until a person acts: a ReauthRequiredError, which every run and job treats as a
   * missing login (rows stay wanted, jobs are skipped, exit code 4), never as a failure of the work.
   */
  private open(row: StoredAccount, sealed: Uint8Array, field: TokenField): string {
    let token: string;
    try {
      token = this.cipher.decrypt(sealed, { accountId: row.id, field });
    } catch (err) {
      if (err instanceof WrongSecretKeyError) throw new ReauthRequiredError(row.name, anotherKeyReason(err.keySource));
      throw err;
    }
    registerSecret(token);
    return token;
  }

  /**
   * The row's session, if it has one. A client-credentials row sealed under another key has none: a new client token
   * is asked for (nothing of a person's is lost), where a user's grant must be logged in again (ReauthRequiredError).
   */
  decode(row: StoredAccount): Session | undefined {
    const accessToken = row.kind === "client" ? this.clientToken(row) : this.revealAccessToken(row);
    if (accessToken === undefined || !row.accessExpiresAt) return undefined;
    return {
      accessToken,
      issuedAt: (row.accessIssuedAt ?? row.lastRefreshAt ?? row.grantStartedAt ?? row.accessExpiresAt).getTime(),
      expiresAt: row.accessExpiresAt.getTime(),
      fingerprint: row.refreshTokenFingerprint,
    };
  }

  seal(accountId: number, grant: TokenGrant, requestedAt: number): SealedTokens {
    registerSecret(grant.accessToken);
    registerSecret(grant.refreshToken);
    return {
      accessTokenEnc: this.cipher.encrypt(grant.accessToken, { accountId, field: "access_token" }),
      accessIssuedAt: new Date(requestedAt),
      accessExpiresAt: new Date(requestedAt + grant.expiresIn * 1000),
      refreshTokenEnc: grant.refreshToken === undefined ? null : this.cipher.encrypt(grant.refreshToken, { accountId, field: "refresh_token" }),
      refreshTokenFingerprint: grant.refreshToken === undefined ? null : this.cipher.fingerprint(grant.refreshToken),
      refreshIssuedAt: grant.refreshToken === undefined ? null : new Date(requestedAt),
    };
  }

  /** The refresh margin for a token: the configured margin, never more than a fifth of its lifetime. */
  marginFor(session: Pick<Session, "issuedAt" | "expiresAt">): number {
    const lifetime = Math.max(0, session.expiresAt - session.issuedAt);
    return Math.min(this.marginMs, lifetime / 5);
  }

  isFresh(session: Session, minValidityMs: number): boolean {
    // A caller cannot ask for more than half a lifetime, or every call would refresh a short-lived token.
    const wanted = Math.min(minValidityMs, Math.max(0, session.expiresAt - session.issuedAt) / 2);
    return this.now() < session.expiresAt - Math.max(this.marginFor(session), wanted);
  }
}
