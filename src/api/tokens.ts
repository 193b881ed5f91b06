// The token manager: the one owner of every account's tokens and the ONE refresh path, used ahead of
// expiry, after a 401, by `dvault auth` and by scheduled jobs alike.
//
// Refresh tokens are single-use (docs/service-behaviour.md#refresh-single-use): two processes refreshing at
// once, or a refresh whose answer is lost, destroy the grant. So a refresh is single-flight within a
// process (one promise per account) and across processes (a Redis lock with an expiry, then a re-read of
// the row: a changed refresh fingerprint means another process already refreshed, and its token is used).
// The new refresh token is committed with a compare-and-swap on the old fingerprint before the new access
// token is handed to anyone. A dead or spent refresh token marks the account needs_reauth: no retry, no
// second token request. Redis sees only account ids and random lock ids; logs see neither tokens nor codes.
import { setTimeout as sleep } from "node:timers/promises";
import type { Redis } from "ioredis";
import { z } from "zod";
import type { TokenCipher } from "../crypto/token-cipher.ts";
import type { AccountRepository, AccountRow, ClientAuth, GrantType, RotatedTokens, SealedTokens } from "../db/account.repository.ts";
import { UserError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { registerSecret } from "../redact.ts";
import { acquireLock } from "../redis-lock.ts";
import { OAuthEndpointError, TokenResponseInvalidError, TokenResponseLostError, type OAuthClient, type TokenGrant } from "./oauth.ts";
import type { TokenIdentity, TokenProvider } from "./token-provider.ts";
import type { ApiTransport } from "./transport.ts";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** Refresh this long before expiry (capped at a fifth of the token's lifetime). */
export const DEFAULT_REFRESH_MARGIN_MS = 10 * MINUTE;
/** The service kills refresh tokens at about three months; warn well before. */
export const REFRESH_TOKEN_WARN_AGE_MS = 80 * DAY;

/** The grant is gone: the user must authorize again. Jobs should stop (BullMQ UnrecoverableError). */
export class ReauthRequiredError extends UserError {
  /** A job that meets it completes as skipped (worker-host.ts): retrying cannot help until a person logs in. */
  readonly jobOutcome = "skip" as const;
  readonly command: string;
  constructor(
    readonly account: string,
    readonly reason: string,
    options: { implicit?: boolean } = {},
  ) {
    const login = `dvault auth login --account ${account}`;
    const command = options.implicit ? `${login} (or --implicit again)` : login;
    super(
      `account "${account}" must be authorized again: ${reason}. Run: ${command}` +
        ` — or, on a headless server: dvault auth import --refresh-token <token> --account ${account}`,
      4,
    );
    this.name = "ReauthRequiredError";
    this.command = login;
  }
}

/** Why the account's stored grant cannot be used until a person logs in again; undefined when it can be. */
export function grantUnusable(row: Pick<AccountRow, "name" | "state" | "stateReason" | "grantType">): ReauthRequiredError | undefined {
  if (row.state === "needs_reauth") return new ReauthRequiredError(row.name, row.stateReason ?? "its grant was lost", { implicit: row.grantType === "implicit" });
  if (row.state === "revoked") return new ReauthRequiredError(row.name, row.stateReason ?? "it was logged out");
  return undefined;
}

/**
 * The refresh did not happen now: try later. `grantIntact` says whether that is known (the request never
 * reached the service, or it answered that it did not process it); otherwise the next attempt will tell.
 */
export class TokenRefreshDeferredError extends UserError {
  constructor(
    readonly account: string,
    readonly reason: string,
    readonly grantIntact = true,
  ) {
    super(
      `could not refresh the access token of account "${account}" right now (${reason}); ` +
        (grantIntact ? "the grant is intact, try again later" : "the next refresh will show whether the refresh token is still good"),
      3,
    );
    this.name = "TokenRefreshDeferredError";
  }
}

export type TokenManagerOptions = {
  repo: AccountRepository;
  cipher: TokenCipher;
  oauth: OAuthClient;
  redis: Redis;
  /** config.redisPrefix; the lock lives at `<prefix>:oauth:refresh-lock:<account id>`. */
  redisPrefix: string;
  log: Logger;
  /** Epoch ms; injectable so tests can follow the simulator's clock. */
  now?: () => number;
  refreshMarginMs?: number;
  /** Longer than a token request can take, so a lock never expires under a live refresh. */
  lockTtlMs?: number;
  /** How long a caller waits for another process's refresh before giving up (deferred, not lost). */
  waitTimeoutMs?: number;
  pollMs?: number;
  /** Told once when an account turns needs_reauth, so its jobs can be stopped. */
  onNeedsReauth?: (event: { accountId: number; account: string; reason: string }) => void;
};

/** What a provider holds in memory between calls. */
type Session = {
  accessToken: string;
  issuedAt: number;
  expiresAt: number;
  /** The refresh token's fingerprint when the session was read; null for grants without one. */
  fingerprint: string | null;
};

type Trigger = { kind: "expiry"; minValidityMs: number } | { kind: "unauthorized"; failedToken: string } | { kind: "forced" };


export type AccountStatus = {
  id: number;
  name: string;
  kind: "user" | "client";
  username: string | null;
  userId: string | null;
  clientId: string | null;
  grantType: GrantType | null;
  scopes: string[];
  state: AccountRow["state"];
  stateReason: string | null;
  accessExpiresAt: string | null;
  refreshTokenAgeDays: number | null;
  hasRefreshToken: boolean;
  grantStartedAt: string | null;
  lastRefreshAt: string | null;
};

export class TokenManager {
  private readonly now: () => number;
  private readonly marginMs: number;
  private readonly lockTtlMs: number;
  private readonly waitTimeoutMs: number;
  private readonly pollMs: number;
  /** Single flight within this process: one refresh promise per account. */
  private readonly inflight = new Map<number, Promise<Session>>();

  constructor(private readonly options: TokenManagerOptions) {
    this.now = options.now ?? Date.now;
    this.marginMs = options.refreshMarginMs ?? DEFAULT_REFRESH_MARGIN_MS;
    this.lockTtlMs = options.lockTtlMs ?? options.oauth.refreshBudgetMs + 30_000;
    if (this.lockTtlMs <= options.oauth.timeoutMs) throw new Error("the refresh lock must outlive a token request");
    this.waitTimeoutMs = options.waitTimeoutMs ?? this.lockTtlMs + 5_000;
    this.pollMs = options.pollMs ?? 50;
  }

  get oauth(): OAuthClient {
    return this.options.oauth;
  }

  /** The provider for a local account name (a user grant or a client row). */
  async forAccount(name: string): Promise<AccountTokens> {
    const row = await this.options.repo.findByName(name);
    if (!row) throw new UserError(`no account named "${name}"; log in with: dvault auth login --account ${name}`);
    return new AccountTokens(this, row);
  }

  async forAccountId(id: number): Promise<AccountTokens> {
    const row = await this.options.repo.findById(id);
    if (!row) throw new UserError(`no account with id ${id}; list them with: dvault auth status`);
    return new AccountTokens(this, row);
  }

  /** The client-credentials provider of the configured client; the row is created on first use. */
  async forClient(): Promise<AccountTokens> {
    const name = clientRowName(this.oauth.clientId);
    const row = (await this.options.repo.findByName(name)) ?? (await this.requestClientToken({ name }));
    return new AccountTokens(this, row);
  }

  /** A client-credentials token, stored as the client's row (`client:<client_id>`). */
  async requestClientToken({ auth = "basic", name = clientRowName(this.oauth.clientId) }: { auth?: "basic" | "form"; name?: string } = {}): Promise<AccountRow> {
    const requestedAt = this.now();
    const grant = await this.oauth.clientCredentials(auth);
    return this.storeGrant({ name, kind: "client", grantType: "client_credentials", grant, clientAuth: auth, requestedAt });
  }

  /**
   * Stores a new grant (login, import, client credentials), replacing the row's tokens. `requestedAt`
   * is when the token request was sent: expiry counts from then, never from when the answer arrived.
   */
  async storeGrant(args: {
    name: string;
    kind: "user" | "client";
    grantType: GrantType;
    grant: TokenGrant;
    clientAuth: ClientAuth;
    requestedAt: number;
    requestedScopes?: readonly string[];
    userId?: string | null;
    username?: string | null;
  }): Promise<AccountRow> {
    const { grant, requestedAt } = args;
    registerSecret(grant.accessToken);
    registerSecret(grant.refreshToken);
    const noRefresh = grant.refreshToken === undefined && args.kind === "user";
    const expiresAt = requestedAt + grant.expiresIn * 1000;
    const row = await this.options.repo.createOrUpdateFromGrant({
      name: args.name,
      kind: args.kind,
      clientId: this.oauth.clientId,
      grantType: args.grantType,
      clientAuth: args.clientAuth,
      ...(args.userId !== undefined ? { userId: args.userId } : {}),
      ...(args.username !== undefined ? { username: args.username } : {}),
      scopes: grant.scopes ?? [...(args.requestedScopes ?? [])],
      state: noRefresh ? "expiring" : "ok",
      stateReason: noRefresh
        ? `the ${args.grantType === "implicit" ? "implicit grant" : "grant"} has no refresh token: it ends when the access token expires at ${new Date(expiresAt).toISOString()}`
        : null,
      now: new Date(this.now()),
      seal: (id) => this.seal(id, grant, requestedAt),
    });
    this.options.log.info({ account: row.name, accountId: row.id, grantType: args.grantType, accessExpiresAt: new Date(expiresAt).toISOString() }, "stored a new grant");
    return row;
  }

  /** Per-account summary for `dvault auth status` (flags an old refresh token as a side effect). */
  async status(row: AccountRow): Promise<AccountStatus> {
    const flagged = (await this.flagOldRefreshToken(row)) ?? row;
    const now = this.now();
    return {
      id: flagged.id,
      name: flagged.name,
      kind: flagged.kind,
      username: flagged.username,
      userId: flagged.userId,
      clientId: flagged.clientId,
      grantType: flagged.grantType,
      scopes: flagged.scopes,
      state: flagged.state,
      stateReason: flagged.stateReason,
      accessExpiresAt: flagged.accessExpiresAt?.toISOString() ?? null,
      refreshTokenAgeDays: flagged.refreshTokenEnc && flagged.refreshIssuedAt ? Math.floor((now - flagged.refreshIssuedAt.getTime()) / DAY) : null,
      hasRefreshToken: flagged.refreshTokenEnc !== null,
      grantStartedAt: flagged.grantStartedAt?.toISOString() ?? null,
      lastRefreshAt: flagged.lastRefreshAt?.toISOString() ?? null,
    };
  }

  /** Decrypts the refresh token of a row (logout needs it); never logged. */
  revealRefreshToken(row: AccountRow): string | undefined {
    if (!row.refreshTokenEnc) return undefined;
    const token = this.options.cipher.decrypt(row.refreshTokenEnc, { accountId: row.id, field: "refresh_token" });
    registerSecret(token);
    return token;
  }

  revealAccessToken(row: AccountRow): string | undefined {
    if (!row.accessTokenEnc) return undefined;
    const token = this.options.cipher.decrypt(row.accessTokenEnc, { accountId: row.id, field: "access_token" });
    registerSecret(token);
    return token;
  }

  /**
   * `dvault auth logout`: revokes the grant at the service (all of it, or with `refreshOnly` just the
   * refresh token) and marks the row revoked. Under the refresh lock, so no refresh races it.
   */
  async logout(row: AccountRow, { refreshOnly }: { refreshOnly: boolean }): Promise<"revoked" | "already_invalid" | "local_only"> {
    return this.underLock(row, () => undefined, async (fresh) => {
      const refresh = this.revealRefreshToken(fresh);
      const access = this.revealAccessToken(fresh);
      if (refreshOnly && refresh === undefined) {
        throw new UserError(`account "${fresh.name}" has no refresh token to revoke${fresh.kind === "client" ? " (client-credentials tokens have none)" : ""}`);
      }
      const token = refresh ?? access;
      let outcome: "revoked" | "already_invalid" | "local_only" = "local_only";
      // Client-credentials tokens belong to no user grant; they are simply forgotten. A user row that is
      // already revoked may still hold a live access token (after --refresh-only): revoking it ends the grant.
      if (token !== undefined && fresh.kind === "user") {
        outcome = await this.oauth.revoke(token, { refreshOnly, auth: fresh.clientAuth });
      }
      const reason = refreshOnly
        ? "logged out with --refresh-only: the refresh token was revoked (the access token works until it expires)"
        : "logged out: the grant was revoked";
      await this.options.repo.markRevoked({ id: fresh.id, reason, now: new Date(this.now()), refreshOnly });
      this.options.log.info({ account: fresh.name, accountId: fresh.id, refreshOnly, outcome }, "logged out");
      return outcome;
    });
  }

  // -----------------------------------------------------------------------------------------------
  // The refresh path (internal to the module: providers call it)

  /** @internal Reads the row and returns a session valid for `minValidityMs`, refreshing if needed. */
  async session(accountId: number, trigger: Trigger): Promise<Session> {
    const row = await this.readUsable(accountId);
    const current = this.decode(row);
    if (trigger.kind === "expiry" && current && this.isFresh(current, trigger.minValidityMs)) return current;
    if (trigger.kind === "unauthorized" && current && current.accessToken !== trigger.failedToken && this.isFresh(current, 0)) return current;
    return this.refresh(row, current?.fingerprint ?? row.refreshTokenFingerprint, trigger);
  }

  /** One flight per account in this process; across processes the Redis lock decides. */
  private refresh(row: AccountRow, observedFingerprint: string | null, trigger: Trigger): Promise<Session> {
    const running = this.inflight.get(row.id);
    if (running) return running;
    const flight = (row.kind === "client" ? this.renewClient(row, trigger) : this.rotate(row, observedFingerprint, trigger)).finally(() =>
      this.inflight.delete(row.id),
    );
    this.inflight.set(row.id, flight);
    return flight;
  }

  private rotate(row: AccountRow, observedFingerprint: string | null, trigger: Trigger): Promise<Session> {
    if (!row.refreshTokenEnc || observedFingerprint === null) {
      // Implicit grants, and grants whose refresh token was revoked: nothing to refresh with.
      const current = this.decode(row);
      if (current && trigger.kind !== "unauthorized" && current.expiresAt > this.now()) return Promise.resolve(current);
      return this.fail(row, "its access token expired and the grant has no refresh token (implicit grant or revoked refresh token)", null);
    }
    const adopt = (fresh: AccountRow): Session | undefined => {
      this.assertUsable(fresh);
      const session = this.decode(fresh);
      if (!session) return undefined;
      // Another process rotated the refresh token: its access token is the one to use.
      if (fresh.refreshTokenFingerprint !== observedFingerprint) return session;
      if (trigger.kind === "unauthorized" && session.accessToken !== trigger.failedToken) return session;
      if (trigger.kind === "expiry" && this.isFresh(session, trigger.minValidityMs)) return session;
      return undefined;
    };
    return this.underLock(row, adopt, (fresh) => this.rotateNow(fresh));
  }

  /** Spends the refresh token. Only ever called under the lock, after re-reading the row. */
  private async rotateNow(row: AccountRow): Promise<Session> {
    if (row.clientId !== null && row.clientId !== this.oauth.clientId) {
      throw new UserError(
        `account "${row.name}" was authorized for client ${row.clientId}, but DVAULT_CLIENT_ID is ${this.oauth.clientId}; refresh tokens only work with the client that obtained them. Set DVAULT_CLIENT_ID back, or log in again with: dvault auth login --account ${row.name}`,
      );
    }
    const refreshToken = this.revealRefreshToken(row);
    const oldFingerprint = row.refreshTokenFingerprint;
    if (refreshToken === undefined || oldFingerprint === null) return this.fail(row, "the grant has no refresh token", null);
    const log = this.options.log.child({ account: row.name, accountId: row.id });
    const requestedAt = this.now();
    let grant: TokenGrant;
    try {
      grant = await this.oauth.refresh(refreshToken, row.clientAuth);
    } catch (err) {
      if (err instanceof OAuthEndpointError && err.refreshTokenDead) {
        return this.fail(row, `the service rejected its refresh token (HTTP ${err.status} ${err.error}: "${err.errorDescription ?? ""}"): it was used, revoked or expired`, oldFingerprint);
      }
      if (err instanceof TokenResponseLostError) {
        return this.fail(row, `a refresh was sent but its answer was lost (${err.reason}), and the service spends a refresh token on receipt`, oldFingerprint);
      }
      if (err instanceof OAuthEndpointError && err.status === 401) {
        throw new UserError(`the service rejected dvault's client credentials while refreshing account "${row.name}" (HTTP 401 ${err.error}); check DVAULT_CLIENT_ID and DVAULT_CLIENT_SECRET`);
      }
      // Answers that could not be read, twice: whether the token was spent is not known.
      const known = !(err instanceof TokenResponseInvalidError);
      log.warn({ err }, known ? "refresh failed; the grant is intact" : "refresh answers unreadable; the refresh token may be spent");
      throw new TokenRefreshDeferredError(row.name, err instanceof Error ? err.message : String(err), known);
    }
    const sealed = this.seal(row.id, grant, requestedAt);
    // Commit first: the new access token is handed out only once the new refresh token is stored.
    const saved = await this.commitRotation(row, oldFingerprint, { ...sealed, scopes: grant.scopes ?? row.scopes, now: new Date(this.now()) });
    if (!saved) {
      // Only a new login or a logout can change the row under the lock: theirs wins.
      log.warn("the account changed during the refresh (new login or logout); using the stored grant");
      const fresh = await this.readUsable(row.id);
      const session = this.decode(fresh);
      if (!session) throw new ReauthRequiredError(row.name, "the stored grant has no access token");
      return session;
    }
    if (grant.refreshToken === undefined) {
      await this.options.repo.markExpiring({ id: row.id, reason: "the refresh answer carried no new refresh token: log in again before the access token expires", now: new Date(this.now()) });
    }
    log.info({ accessExpiresAt: new Date(sealed.accessExpiresAt).toISOString() }, "refreshed the access token");
    return { accessToken: grant.accessToken, issuedAt: requestedAt, expiresAt: sealed.accessExpiresAt.getTime(), fingerprint: sealed.refreshTokenFingerprint };
  }

  /**
   * The new refresh token exists only in memory until this succeeds, so a failing database gets a few
   * quick retries before the grant is given up for lost.
   */
  private async commitRotation(row: AccountRow, oldFingerprint: string, rotated: RotatedTokens): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.options.repo.saveRotatedToken(row.id, oldFingerprint, rotated);
      } catch (err) {
        if (attempt >= 3) {
          this.options.log.error({ err, account: row.name, accountId: row.id }, "could not store the rotated refresh token: the grant is lost");
          throw err;
        }
        await sleep(250 * attempt);
      }
    }
  }

  /** Client credentials renew by asking again; the lock only avoids a stampede of token requests. */
  private renewClient(row: AccountRow, trigger: Trigger): Promise<Session> {
    const failed = trigger.kind === "unauthorized" ? trigger.failedToken : undefined;
    const minValidity = trigger.kind === "expiry" ? trigger.minValidityMs : 0;
    const adopt = (fresh: AccountRow): Session | undefined => {
      const session = this.decode(fresh);
      if (!session) return undefined;
      if (trigger.kind === "forced") return session.issuedAt > this.now() - 1000 ? session : undefined;
      if (session.accessToken !== failed && this.isFresh(session, minValidity)) return session;
      return undefined;
    };
    return this.underLock(row, adopt, async (fresh) => {
      const requestedAt = this.now();
      const grant = await this.oauth.clientCredentials(fresh.clientAuth);
      const sealed = this.seal(fresh.id, grant, requestedAt);
      await this.options.repo.saveClientToken(fresh.id, { ...sealed, now: new Date(this.now()) });
      this.options.log.info({ account: fresh.name, accountId: fresh.id, accessExpiresAt: sealed.accessExpiresAt.toISOString() }, "renewed the client-credentials token");
      return { accessToken: grant.accessToken, issuedAt: requestedAt, expiresAt: sealed.accessExpiresAt.getTime(), fingerprint: null };
    });
  }

  /**
   * Takes the account's refresh lock (src/redis-lock.ts), re-reads the row and either adopts what another
   * process stored (`adopt`) or performs the request. Waiters poll the row instead of the lock, so they
   * pick up the new token as soon as it is committed.
   */
  private async underLock<T>(row: AccountRow, adopt: (fresh: AccountRow) => T | undefined, perform: (fresh: AccountRow) => Promise<T>): Promise<T> {
    const key = `${this.options.redisPrefix}:oauth:refresh-lock:${row.id}`;
    const deadline = Date.now() + this.waitTimeoutMs;
    for (;;) {
      const lock = await acquireLock(this.options.redis, key, this.lockTtlMs);
      if (lock) {
        try {
          const fresh = await this.readRow(row.id);
          return adopt(fresh) ?? (await perform(fresh));
        } finally {
          await lock.release();
        }
      }
      const fresh = await this.readRow(row.id);
      const adopted = adopt(fresh);
      if (adopted) return adopted;
      if (Date.now() > deadline) throw new TokenRefreshDeferredError(row.name, "another process has been refreshing it for too long");
      await sleep(this.pollMs);
    }
  }

  private async fail(row: AccountRow, reason: string, fingerprint: string | null): Promise<never> {
    const marked = await this.options.repo.markNeedsReauth({ id: row.id, reason, now: new Date(this.now()), ...(fingerprint !== null ? { fingerprint } : {}) });
    if (marked) {
      this.options.log.error({ account: row.name, accountId: row.id, reason }, "the account needs to be authorized again");
      this.options.onNeedsReauth?.({ accountId: row.id, account: row.name, reason });
    }
    throw new ReauthRequiredError(row.name, reason, { implicit: row.grantType === "implicit" });
  }

  // -----------------------------------------------------------------------------------------------
  // Rows and sessions

  private async readRow(id: number): Promise<AccountRow> {
    const row = await this.options.repo.findById(id);
    if (!row) throw new ReauthRequiredError(`#${id}`, "the account was deleted");
    return row;
  }

  private async readUsable(id: number): Promise<AccountRow> {
    const row = await this.readRow(id);
    this.assertUsable(row);
    return (await this.flagOldRefreshToken(row)) ?? row;
  }

  private assertUsable(row: AccountRow): void {
    const unusable = grantUnusable(row);
    if (unusable) throw unusable;
  }

  /** A refresh token older than 80 days is flagged `expiring`: a warning, not an error. */
  private async flagOldRefreshToken(row: AccountRow): Promise<AccountRow | undefined> {
    if (row.state !== "ok" || !row.refreshTokenEnc || !row.refreshIssuedAt) return undefined;
    const age = this.now() - row.refreshIssuedAt.getTime();
    if (age < REFRESH_TOKEN_WARN_AGE_MS) return undefined;
    const reason = `its refresh token is ${Math.floor(age / DAY)} days old and the service ends it at about 90 days; any refresh renews it (dvault auth status does one), otherwise log in again`;
    const now = new Date(this.now());
    if (await this.options.repo.markExpiring({ id: row.id, reason, now })) {
      this.options.log.warn({ account: row.name, accountId: row.id, refreshTokenAgeDays: Math.floor(age / DAY) }, "refresh token is close to the end of its life");
    }
    return { ...row, state: "expiring", stateReason: reason, stateChangedAt: now };
  }

  private decode(row: AccountRow): Session | undefined {
    const accessToken = this.revealAccessToken(row);
    if (accessToken === undefined || !row.accessExpiresAt) return undefined;
    return {
      accessToken,
      issuedAt: (row.accessIssuedAt ?? row.lastRefreshAt ?? row.grantStartedAt ?? row.accessExpiresAt).getTime(),
      expiresAt: row.accessExpiresAt.getTime(),
      fingerprint: row.refreshTokenFingerprint,
    };
  }

  private seal(accountId: number, grant: TokenGrant, requestedAt: number): SealedTokens {
    const { cipher } = this.options;
    registerSecret(grant.accessToken);
    registerSecret(grant.refreshToken);
    return {
      accessTokenEnc: cipher.encrypt(grant.accessToken, { accountId, field: "access_token" }),
      accessIssuedAt: new Date(requestedAt),
      accessExpiresAt: new Date(requestedAt + grant.expiresIn * 1000),
      refreshTokenEnc: grant.refreshToken === undefined ? null : cipher.encrypt(grant.refreshToken, { accountId, field: "refresh_token" }),
      refreshTokenFingerprint: grant.refreshToken === undefined ? null : cipher.fingerprint(grant.refreshToken),
      refreshIssuedAt: grant.refreshToken === undefined ? null : new Date(requestedAt),
    };
  }

  /** The refresh margin for a token: the configured margin, never more than a fifth of its lifetime. */
  marginFor(session: Pick<Session, "issuedAt" | "expiresAt">): number {
    const lifetime = Math.max(0, session.expiresAt - session.issuedAt);
    return Math.min(this.marginMs, lifetime / 5);
  }

  /** @internal */
  isFresh(session: Session, minValidityMs: number): boolean {
    // A caller cannot ask for more than half a lifetime, or every call would refresh a short-lived token.
    const wanted = Math.min(minValidityMs, Math.max(0, session.expiresAt - session.issuedAt) / 2);
    return this.now() < session.expiresAt - Math.max(this.marginFor(session), wanted);
  }

  /** @internal */
  clock(): number {
    return this.now();
  }
}

/** A TokenProvider for one account (user or client), handed to the HTTP transport. */
export class AccountTokens implements TokenProvider {
  private cached: Session | undefined;
  private readonly ident: TokenIdentity;

  constructor(
    private readonly manager: TokenManager,
    readonly row: AccountRow,
  ) {
    this.ident = {
      kind: row.kind,
      clientId: row.clientId ?? manager.oauth.clientId,
      ...(row.userId ? { userId: row.userId } : {}),
      account: row.name,
    };
  }

  get accountId(): number {
    return this.row.id;
  }

  get name(): string {
    return this.row.name;
  }

  identity(): TokenIdentity {
    return this.ident;
  }

  async getAccessToken(): Promise<string> {
    if (this.cached && this.manager.isFresh(this.cached, 0)) return this.cached.accessToken;
    return this.use(await this.manager.session(this.row.id, { kind: "expiry", minValidityMs: 0 }));
  }

  async refreshAfterUnauthorized(failedToken: string): Promise<string> {
    this.cached = undefined;
    return this.use(await this.manager.session(this.row.id, { kind: "unauthorized", failedToken }));
  }

  /** For long jobs: a token that stays valid at least `minValidityMs` (refreshing now if it would not). */
  async ensureValidFor(minValidityMs: number): Promise<string> {
    if (this.cached && this.manager.isFresh(this.cached, minValidityMs)) return this.cached.accessToken;
    return this.use(await this.manager.session(this.row.id, { kind: "expiry", minValidityMs }));
  }

  /** Refreshes now through the same single-flight path (the keep-alive job of idle accounts uses it). */
  async refreshNow(): Promise<string> {
    this.cached = undefined;
    return this.use(await this.manager.session(this.row.id, { kind: "forced" }));
  }

  /** When the token in hand expires (epoch ms), if one is held. */
  expiresAt(): number | undefined {
    return this.cached?.expiresAt;
  }

  private use(session: Session): string {
    this.cached = session;
    return session.accessToken;
  }
}

export function clientRowName(clientId: string): string {
  return `client:${clientId}`;
}

// -----------------------------------------------------------------------------------------------
// The two account calls the token lifecycle needs, made through the API transport

export const PlaceboSchema = z.object({ status: z.string() }).passthrough();
export const WhoamiSchema = z
  .object({ userid: z.string(), username: z.string(), usericon: z.string().optional(), type: z.string().optional() })
  .passthrough();
export type Whoami = z.infer<typeof WhoamiSchema>;

export function placebo(transport: ApiTransport, signal?: AbortSignal): Promise<z.infer<typeof PlaceboSchema>> {
  return transport.request({ operation: "placebo", method: "GET", path: "/placebo", ...(signal ? { signal } : {}) }, PlaceboSchema);
}

export function whoami(transport: ApiTransport): Promise<Whoami> {
  return transport.request({ operation: "user.whoami", method: "GET", path: "/user/whoami" }, WhoamiSchema);
}

/**
 * Before long work: a token that outlives `minValidityMs` (default: the refresh margin), then the
 * placebo call through the transport, which refreshes once more on a 401.
 */
export async function ensureFreshToken({
  tokens,
  transport,
  minValidityMs = DEFAULT_REFRESH_MARGIN_MS,
  signal,
}: {
  tokens: AccountTokens;
  transport: ApiTransport;
  minValidityMs?: number;
  signal?: AbortSignal;
}): Promise<void> {
  await tokens.ensureValidFor(minValidityMs);
  await placebo(transport, signal);
}
