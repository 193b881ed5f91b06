// The token manager: the one owner of every account's tokens. It hands out a provider per account, stores
// new grants, reports and revokes them; refreshes go through src/api/token-refresh.ts, the one refresh path.
import type { Coordinator } from "../coord/coordinator.ts";
import { type InstallKey, unreadableTokens } from "../crypto/install-key.ts";
import type { TokenCipher } from "../crypto/token-cipher.ts";
import { UserError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { registerSecret } from "../redact.ts";
import { AccountTokens, clientRowName } from "./account-tokens.ts";
import type { OAuthClient, TokenGrant } from "./oauth/token-endpoint.ts";
import { grantUnusable, ReauthRequiredError, TokenRefreshDeferredError } from "./token-errors.ts";
import { PendingGrants } from "./pending-grants.ts";
import { TokenRefresher } from "./token-refresh.ts";
import { DAY, DEFAULT_REFRESH_MARGIN_MS, TokenSessions, type Session, type Trigger } from "./token-session.ts";
import type { ClientAuth, GrantType, StoredAccount, TokenStore } from "./token-store.ts";

export type TokenManagerOptions = {
  /** Where accounts and their sealed tokens live (src/db/account-token-store.ts in the app). */
  repo: TokenStore;
  /**
   * The folder where a refreshed grant waits while the database does not take it (src/api/pending-grants.ts):
   * pendingGrantsDir(config), beside the key file.
   */
  pendingDir: string;
  cipher: TokenCipher;
  oauth: OAuthClient;
  /** Where the refresh lock lives (src/coord/coordinator.ts). */
  coord: Coordinator;
  /** config.redisPrefix; the lock lives at `<prefix>:oauth:refresh-lock:<account id>`. */
  redisPrefix: string;
  log: Logger;
  /** Epoch ms; injectable so tests can follow the simulator's clock. */
  now?: () => number;
  refreshMarginMs?: number;
  /** Longer than a token request can take, so the lock outlives a refresh even when its renewals cannot reach the store. */
  lockTtlMs?: number;
  /** How long a caller waits for another process's refresh before giving up (deferred, not lost). */
  waitTimeoutMs?: number;
  pollMs?: number;
  /** Told once when an account turns needs_reauth, so its jobs can be stopped. */
  onNeedsReauth?: (event: { accountId: number; account: string; reason: string }) => void;
};

export type AccountStatus = {
  id: number;
  name: string;
  kind: "user" | "client";
  username: string | null;
  userId: string | null;
  clientId: string | null;
  grantType: GrantType | null;
  scopes: string[];
  state: StoredAccount["state"];
  stateReason: string | null;
  accessExpiresAt: string | null;
  refreshTokenAgeDays: number | null;
  hasRefreshToken: boolean;
  grantStartedAt: string | null;
  lastRefreshAt: string | null;
};

export class TokenManager {
  private readonly now: () => number;
  private readonly sessions: TokenSessions;
  private readonly refresher: TokenRefresher;

  constructor(private readonly options: TokenManagerOptions) {
    this.now = options.now ?? Date.now;
    this.sessions = new TokenSessions(options.cipher, this.now, options.refreshMarginMs ?? DEFAULT_REFRESH_MARGIN_MS);
    const lockTtlMs = options.lockTtlMs ?? options.oauth.refreshBudgetMs + 30_000;
    if (lockTtlMs <= options.oauth.timeoutMs) throw new Error("the refresh lock must outlive a token request");
    this.refresher = new TokenRefresher({
      store: options.repo,
      pending: new PendingGrants(options.pendingDir),
      sessions: this.sessions,
      oauth: options.oauth,
      coord: options.coord,
      redisPrefix: options.redisPrefix,
      log: options.log,
      now: this.now,
      lockTtlMs,
      waitTimeoutMs: options.waitTimeoutMs ?? lockTtlMs + 5_000,
      pollMs: options.pollMs ?? 50,
      ...(options.onNeedsReauth ? { onNeedsReauth: options.onNeedsReauth } : {}),
    });
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
  async requestClientToken({
    auth = "basic",
    name = clientRowName(this.oauth.clientId),
  }: {
    auth?: "basic" | "form";
    name?: string;
  } = {}): Promise<StoredAccount> {
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
  }): Promise<StoredAccount> {
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
      seal: (id) => this.sessions.seal(id, grant, requestedAt),
    });
    this.options.log.info(
      { account: row.name, accountId: row.id, grantType: args.grantType, accessExpiresAt: new Date(expiresAt).toISOString() },
      "stored a new grant",
    );
    return row;
  }

  /**
   * Per-account summary for `dvault auth status` and `dvault status` (as side effects, stores a grant a refresh left
   * pending and flags an old refresh token). An account whose stored tokens were sealed under another key than this
   * install's (a config folder or key lost in a move) must log in again or get its key back, whatever its row says:
   * nothing can use them.
   */
  async status(row: StoredAccount): Promise<AccountStatus> {
    // A grant a refresh left pending is stored first; while the database refuses it, the row is shown as it is.
    const adopted = await this.refresher.adoptPending(row).catch((err: unknown) => {
      if (err instanceof TokenRefreshDeferredError) return row;
      throw err;
    });
    const flagged = (await this.refresher.flagOldRefreshToken(adopted)) ?? adopted;
    return keyedStatus(accountStatusOf(flagged, this.now()), flagged, { cipher: this.options.cipher });
  }

  /** Decrypts the refresh token of a row (logout needs it); never logged. */
  revealRefreshToken(row: StoredAccount): string | undefined {
    return this.sessions.revealRefreshToken(row);
  }

  revealAccessToken(row: StoredAccount): string | undefined {
    return this.sessions.revealAccessToken(row);
  }

  /**
   * `dvault auth logout`: revokes the grant at the service (with `refreshOnly` just this install's refresh
   * token, docs/service-behaviour.md#revoke-scope; without, every grant of the user for the application) and
   * marks the row revoked. Under the refresh lock, so no refresh races it.
   */
  async logout(row: StoredAccount, { refreshOnly }: { refreshOnly: boolean }): Promise<"revoked" | "already_invalid" | "local_only"> {
    return this.refresher.underLock(
      row,
      () => undefined,
      async (fresh) => {
        const refresh = this.revealRefreshToken(fresh);
        const access = this.revealAccessToken(fresh);
        // Client-credentials tokens have no refresh token and belong to no user grant: they are only forgotten.
        const onlyThis = refreshOnly && fresh.kind === "user";
        if (onlyThis && refresh === undefined) {
          throw new UserError(
            `account "${fresh.name}" has no refresh token to revoke (an implicit grant, or already logged out here): dvault auth logout --everywhere revokes its access token, and with it every grant of the user`,
          );
        }
        const token = refresh ?? access;
        let outcome: "revoked" | "already_invalid" | "local_only" = "local_only";
        // Client-credentials tokens belong to no user grant; they are simply forgotten. A user row that is
        // already revoked may still hold a live access token (after a logout of this install only): revoking it ends the grant.
        // The row is marked after the revoke: a database that refuses that write (a standby, read-only) is said
        // before the service ends the grant, or the account would hold a revoked token it still calls ok.
        await this.options.repo.proveWritable();
        if (token !== undefined && fresh.kind === "user") {
          outcome = await this.oauth.revoke(token, { refreshOnly: onlyThis, auth: fresh.clientAuth });
        }
        const reason =
          fresh.kind === "client"
            ? "logged out: the client-credentials token was forgotten"
            : onlyThis
              ? "logged out of this install: its refresh token was revoked (revoke_refresh_only); dvault no longer uses this account (its access token stays valid at the service until it expires)"
              : "logged out everywhere: every grant of the user for the application was revoked";
        await this.options.repo.markRevoked({ id: fresh.id, reason, now: new Date(this.now()), refreshOnly: onlyThis });
        this.options.log.info({ account: fresh.name, accountId: fresh.id, refreshOnly, outcome }, "logged out");
        return outcome;
      },
    );
  }

  /** @internal Reads the row and returns a session valid for the trigger, refreshing if needed (providers call it). */
  session(accountId: number, trigger: Trigger): Promise<Session> {
    return this.refresher.session(accountId, trigger);
  }

  /** The refresh margin for a token: the configured margin, never more than a fifth of its lifetime. */
  marginFor(session: Pick<Session, "issuedAt" | "expiresAt">): number {
    return this.sessions.marginFor(session);
  }

  /** @internal */
  isFresh(session: Session, minValidityMs: number): boolean {
    return this.sessions.isFresh(session, minValidityMs);
  }

  /** @internal */
  clock(): number {
    return this.now();
  }
}

/**
 * Why a run must leave the account alone until a person acts, as every run checks it before it claims the account's
 * work: its grant is lost or logged out (grantUnusable), or the install's key (src/crypto/install-key.ts) cannot read
 * its tokens.
 */
export function unusableAccount(key: InstallKey, row: StoredAccount): ReauthRequiredError | undefined {
  const lost = grantUnusable(row);
  if (lost) return lost;
  const why = unreadableTokens(row, key);
  return why ? new ReauthRequiredError(row.name, why) : undefined;
}

/**
 * The account's status as this install's key sees it (unreadableTokens): tokens it cannot read cannot be used, so
 * the account must log in again or get its key back, whatever its row says.
 */
export function keyedStatus(status: AccountStatus, row: Pick<StoredAccount, "accessTokenEnc" | "refreshTokenEnc">, key: InstallKey): AccountStatus {
  const why = status.state === "revoked" ? undefined : unreadableTokens(row, key);
  return why ? { ...status, state: "needs_reauth", stateReason: why } : status;
}

/** What `dvault auth status` and `dvault status` show of one account row at `now`: never a secret. */
export function accountStatusOf(row: StoredAccount, now: number): AccountStatus {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    username: row.username,
    userId: row.userId,
    clientId: row.clientId,
    grantType: row.grantType,
    scopes: row.scopes,
    state: row.state,
    stateReason: row.stateReason,
    accessExpiresAt: row.accessExpiresAt?.toISOString() ?? null,
    refreshTokenAgeDays: row.refreshTokenEnc && row.refreshIssuedAt ? Math.floor((now - row.refreshIssuedAt.getTime()) / DAY) : null,
    hasRefreshToken: row.refreshTokenEnc !== null,
    grantStartedAt: row.grantStartedAt?.toISOString() ?? null,
    lastRefreshAt: row.lastRefreshAt?.toISOString() ?? null,
  };
}
