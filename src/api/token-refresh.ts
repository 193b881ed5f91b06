// The one refresh path of every account's tokens, used ahead of expiry, after a 401, by `dvault auth` and by
// scheduled jobs alike.
//
// Refresh tokens are single-use (docs/service-behaviour.md#refresh-single-use): two processes refreshing at
// once, or a refresh whose answer is lost, destroy the grant. So a refresh is single-flight within a
// process (one promise per account) and across processes (a lock with an expiry, then a re-read of
// the row: a changed refresh fingerprint means another process already refreshed, and its token is used).
// The new refresh token is committed with a compare-and-swap on the old fingerprint before the new access
// token is handed to anyone; until then it is kept sealed in a file of its own (src/api/pending-grants.ts), which
// the next read of the account stores when the database did not take it. A dead or spent refresh token marks the
// account needs_reauth: no retry, no second token request. The lock store sees only account ids, random lock ids and,
// while an answer waits for the database, the spent refresh token's fingerprint (an HMAC, so that a host without
// that file does not send it again); logs see neither tokens nor codes.
import { setTimeout as sleep } from "node:timers/promises";
import type { Coordinator } from "../coord/coordinator.ts";
import { UserError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { acquireLock, type HeldLock } from "../coord/lock.ts";
import { OAuthEndpointError, TokenResponseInvalidError, TokenResponseLostError, type OAuthClient, type TokenGrant } from "./oauth/token-endpoint.ts";
import { ReauthRequiredError, TokenRefreshDeferredError, grantUnusable } from "./token-errors.ts";
import { DAY, REFRESH_TOKEN_WARN_AGE_MS, type Session, type TokenSessions, type Trigger } from "./token-session.ts";
import type { PendingGrant, PendingGrants } from "./pending-grants.ts";
import type { StoredAccount, TokenStore } from "./token-store.ts";

export type TokenRefresherOptions = {
  store: TokenStore;
  /** Where an answered rotation waits while the database does not take it (src/api/pending-grants.ts). */
  pending: PendingGrants;
  sessions: TokenSessions;
  oauth: OAuthClient;
  coord: Coordinator;
  /** The lock lives at `<prefix>:oauth:refresh-lock:<account id>`. */
  redisPrefix: string;
  log: Logger;
  now: () => number;
  /** Longer than a token request can take, so the lock outlives a refresh even when its renewals cannot reach the store. */
  lockTtlMs: number;
  /** How long a caller waits for another process's refresh before giving up (deferred, not lost). */
  waitTimeoutMs: number;
  pollMs: number;
  /** Told once when an account turns needs_reauth, so its jobs can be stopped. */
  onNeedsReauth?: (event: { accountId: number; account: string; reason: string }) => void;
};

export class TokenRefresher {
  /** Single flight within this process: one refresh promise per account. */
  private readonly inflight = new Map<number, Promise<Session>>();
  private readonly sessions: TokenSessions;
  private readonly now: () => number;

  constructor(private readonly options: TokenRefresherOptions) {
    this.sessions = options.sessions;
    this.now = options.now;
  }

  /** Reads the row and returns a session valid for `minValidityMs`, refreshing if needed. */
  async session(accountId: number, trigger: Trigger): Promise<Session> {
    const row = await this.readUsable(accountId);
    const current = this.sessions.decode(row);
    if (trigger.kind === "expiry" && current && this.sessions.isFresh(current, trigger.minValidityMs)) return current;
    if (trigger.kind === "unauthorized" && current && current.accessToken !== trigger.failedToken && this.sessions.isFresh(current, 0)) return current;
    return this.refresh(row, current?.fingerprint ?? row.refreshTokenFingerprint, trigger);
  }

  /** One flight per account in this process; across processes the lock decides. */
  private refresh(row: StoredAccount, observedFingerprint: string | null, trigger: Trigger): Promise<Session> {
    const running = this.inflight.get(row.id);
    if (running) return running;
    const flight = (row.kind === "client" ? this.renewClient(row, trigger) : this.rotate(row, observedFingerprint, trigger)).finally(() =>
      this.inflight.delete(row.id),
    );
    this.inflight.set(row.id, flight);
    return flight;
  }

  private rotate(row: StoredAccount, observedFingerprint: string | null, trigger: Trigger): Promise<Session> {
    if (!row.refreshTokenEnc || observedFingerprint === null) {
      // Implicit grants, and grants whose refresh token was revoked: nothing to refresh with.
      const current = this.sessions.decode(row);
      if (current && trigger.kind !== "unauthorized" && current.expiresAt > this.now()) return Promise.resolve(current);
      return this.fail(row, "its access token expired and the grant has no refresh token (implicit grant or revoked refresh token)", null);
    }
    const adopt = (fresh: StoredAccount): Session | undefined => {
      this.assertUsable(fresh);
      const session = this.sessions.decode(fresh);
      if (!session) return undefined;
      // Another process rotated the refresh token: its access token is the one to use.
      if (fresh.refreshTokenFingerprint !== observedFingerprint) return session;
      if (trigger.kind === "unauthorized" && session.accessToken !== trigger.failedToken) return session;
      if (trigger.kind === "expiry" && this.sessions.isFresh(session, trigger.minValidityMs)) return session;
      return undefined;
    };
    return this.underLock(row, adopt, (fresh, lock) => this.rotateNow(fresh, lock));
  }

  /** Spends the refresh token. Only ever called under the lock, after re-reading the row. */
  private async rotateNow(row: StoredAccount, lock: HeldLock): Promise<Session> {
    if (row.clientId !== null && row.clientId !== this.options.oauth.clientId) {
      throw new UserError(
        `account "${row.name}" was authorized for client ${row.clientId}, but DVAULT_CLIENT_ID is ${this.options.oauth.clientId}; refresh tokens only work with the client that obtained them. Set DVAULT_CLIENT_ID back, or log in again with: dvault auth login --account ${row.name}`,
      );
    }
    const refreshToken = this.sessions.revealRefreshToken(row);
    const oldFingerprint = row.refreshTokenFingerprint;
    if (refreshToken === undefined || oldFingerprint === null) return this.fail(row, "the grant has no refresh token", null);
    const log = this.options.log.child({ account: row.name, accountId: row.id });
    // The answer is stored or lost: a database that refuses writes now (a standby, read-only) is found before the
    // token is spent, and the refresh waits for it with the grant intact. So does a token spent already by a refresh
    // whose answer waits in another host's config folder (no folder shared with this one): sent again, it would be
    // refused and the account marked for a new login, the answer still waiting there.
    let spentElsewhere: boolean;
    let held: boolean;
    try {
      await this.options.store.proveWritable();
      spentElsewhere = (await this.options.coord.get(this.spentKey(row.id))) === oldFingerprint;
      // Last before the token goes: a process paused past the lock's TTL (a machine asleep) may find that another
      // took the lock and spent this very token meanwhile; sent again, it would be refused and the grant marked lost.
      held = await lock.confirm();
    } catch (err) {
      throw new TokenRefreshDeferredError(row.name, err instanceof Error ? err.message : String(err), true, err);
    }
    if (!held) throw new LockRanOut();
    if (spentElsewhere) {
      throw new TokenRefreshDeferredError(
        row.name,
        "its refresh token was spent by a refresh on another host, whose answer waits there until the database takes it; that host's next use of the account stores it",
      );
    }
    const requestedAt = this.now();
    let grant: TokenGrant;
    try {
      grant = await this.options.oauth.refresh(refreshToken, row.clientAuth);
    } catch (err) {
      if (err instanceof OAuthEndpointError && err.refreshTokenDead) {
        return this.fail(
          row,
          `the service rejected its refresh token (HTTP ${err.status} ${err.error}: "${err.errorDescription ?? ""}"): it was used, revoked or expired`,
          oldFingerprint,
        );
      }
      if (err instanceof TokenResponseLostError) {
        return this.fail(row, `a refresh was sent but its answer was lost (${err.reason}), and the service spends a refresh token on receipt`, oldFingerprint);
      }
      if (err instanceof OAuthEndpointError && err.status === 401) {
        throw new UserError(
          `the service rejected dvault's client credentials while refreshing account "${row.name}" (HTTP 401 ${err.error}); check DVAULT_CLIENT_ID and DVAULT_CLIENT_SECRET`,
        );
      }
      // Answers that could not be read, twice: whether the token was spent is not known.
      const known = !(err instanceof TokenResponseInvalidError);
      log.warn({ err }, known ? "refresh failed; the grant is intact" : "refresh answers unreadable; the refresh token may be spent");
      throw new TokenRefreshDeferredError(row.name, err instanceof Error ? err.message : String(err), known);
    }
    const sealed = this.sessions.seal(row.id, grant, requestedAt);
    const answered: PendingGrant = { accountId: row.id, oldFingerprint, rotated: { ...sealed, scopes: grant.scopes ?? row.scopes, now: new Date(this.now()) } };
    // From here the grant exists nowhere else: it is kept where no database is needed before the database is asked.
    const kept = await this.options.pending.keep(answered);
    if ("memoryOnly" in kept)
      log.warn(
        { dir: this.options.pending.dir, reason: kept.memoryOnly },
        "could not write the refreshed grant's pending file; this process keeps it until the database takes it",
      );
    // Stored before the new access token is handed to anyone.
    if (!(await this.storeRotation(row, answered, "file" in kept ? kept.file : undefined))) {
      // The row moved past the spent token under the lock: a new login or a logout (theirs wins), or another process
      // stored this very answer from its pending file.
      log.warn("the account changed during the refresh; using the stored grant");
      const fresh = await this.readUsable(row.id);
      const session = this.sessions.decode(fresh);
      if (!session) throw new ReauthRequiredError(row.name, "the stored grant has no access token");
      return session;
    }
    log.info({ accessExpiresAt: new Date(sealed.accessExpiresAt).toISOString() }, "refreshed the access token");
    return { accessToken: grant.accessToken, issuedAt: requestedAt, expiresAt: sealed.accessExpiresAt.getTime(), fingerprint: sealed.refreshTokenFingerprint };
  }

  /**
   * Stores an answered rotation with a compare-and-swap on the spent token's fingerprint; false when the row no longer
   * holds it. Either way the pending grant has served and is forgotten. A database that does not take the write
   * (read-only, failing over, its disk full, away) leaves it pending at `keptIn` (undefined: in this process's memory
   * alone): the refresh is deferred, not lost, and the next read of the account stores it (adoptPending), so a worker's
   * job waits it out as an outage (src/queue/outage.ts reads the cause) and a command that must exit leaves its file for
   * the next one.
   */
  private async storeRotation(row: StoredAccount, grant: PendingGrant, keptIn: string | undefined): Promise<boolean> {
    let saved: boolean;
    try {
      saved = await this.options.store.saveRotatedToken(row.id, grant.oldFingerprint, grant.rotated);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      // A kept file is said where every host looks before it spends the row's refresh token (rotateNow): best effort,
      // as the store is the refusing database itself on DVAULT_ENGINE=postgres. A day at most: a host that never comes
      // back to store it leaves the others to find the token spent, and ask for a new login. A grant in this process's
      // memory alone is not: a command ends soon, and the others had better find out at once.
      if (keptIn !== undefined) await this.options.coord.put(this.spentKey(row.id), grant.oldFingerprint, { ttlMs: DAY }).catch(() => undefined);
      const kept =
        keptIn !== undefined
          ? `it is kept in ${keptIn} and stored when the account is next used`
          : "it is kept in this process's memory alone (its pending-grants file could not be written) and stored at this process's next use of the account; it is lost if this process ends first";
      this.options.log.warn(
        { err, account: row.name, accountId: row.id, keptIn: keptIn ?? "this process's memory" },
        `the database did not take the refreshed grant; ${kept}`,
      );
      throw new TokenRefreshDeferredError(row.name, `the service answered, but the database did not take the new grant (${reason}); ${kept}`, true, err);
    }
    await this.options.pending.drop(grant);
    if (saved && grant.rotated.refreshTokenEnc === null) {
      await this.options.store.markExpiring({
        id: row.id,
        reason: "the refresh answer carried no new refresh token: log in again before the access token expires",
        now: new Date(this.now()),
      });
    }
    return saved;
  }

  /**
   * Stores what a refresh answered while the database did not take it (src/api/pending-grants.ts), if the row still
   * holds the refresh token that answer spent. Any process that reads the account does it, with or without the refresh
   * lock: the compare-and-swap on the spent token's fingerprint lets exactly one write win. A grant the row has moved
   * past is never stored, and forgotten only where that is proven to be this database's: the row holds what it
   * answered (stored already), or this process kept it. A file found in the folder and no longer matching is left: two
   * installs sharing one DVAULT_CONFIG_DIR each have an account 1, and the other install's row may still be waiting
   * for it. Throws TokenRefreshDeferredError while the database refuses it: the row's own refresh token is spent, and
   * must not be sent.
   */
  async adoptPending(row: StoredAccount): Promise<StoredAccount> {
    const { pending } = this.options;
    let current = row;
    for (const grant of await pending.find(row.id)) {
      if (current.refreshTokenFingerprint !== grant.oldFingerprint) {
        const stored = grant.rotated.refreshTokenFingerprint !== null && current.refreshTokenFingerprint === grant.rotated.refreshTokenFingerprint;
        if (stored || pending.keptHere(grant)) await pending.drop(grant);
        continue;
      }
      // Only this database's row can hold the token the answer spent: a revoked one wants no grant.
      if (current.state === "revoked") {
        await pending.drop(grant);
        continue;
      }
      if (await this.storeRotation(current, grant, pending.dir))
        this.options.log.info({ account: row.name, accountId: row.id }, "stored a refreshed grant that had waited for the database");
      current = await this.findRow(row.id);
    }
    return current;
  }

  /** Where the fingerprint (an HMAC, src/crypto/token-cipher.ts) of a refresh token spent by a waiting answer is said. */
  private spentKey(accountId: number): string {
    return `${this.options.redisPrefix}:oauth:spent-refresh:${accountId}`;
  }

  /** Client credentials renew by asking again; the lock only avoids a stampede of token requests. */
  private renewClient(row: StoredAccount, trigger: Trigger): Promise<Session> {
    const failed = trigger.kind === "unauthorized" ? trigger.failedToken : undefined;
    const minValidity = trigger.kind === "expiry" ? trigger.minValidityMs : 0;
    const adopt = (fresh: StoredAccount): Session | undefined => {
      const session = this.sessions.decode(fresh);
      if (!session) return undefined;
      if (trigger.kind === "forced") return session.issuedAt > this.now() - 1000 ? session : undefined;
      if (session.accessToken !== failed && this.sessions.isFresh(session, minValidity)) return session;
      return undefined;
    };
    return this.underLock(row, adopt, async (fresh) => {
      const requestedAt = this.now();
      const grant = await this.options.oauth.clientCredentials(fresh.clientAuth);
      const sealed = this.sessions.seal(fresh.id, grant, requestedAt);
      await this.options.store.saveClientToken(fresh.id, { ...sealed, now: new Date(this.now()) });
      this.options.log.info(
        { account: fresh.name, accountId: fresh.id, accessExpiresAt: sealed.accessExpiresAt.toISOString() },
        "renewed the client-credentials token",
      );
      return { accessToken: grant.accessToken, issuedAt: requestedAt, expiresAt: sealed.accessExpiresAt.getTime(), fingerprint: null };
    });
  }

  /**
   * Takes the account's refresh lock (src/coord/lock.ts), re-reads the row and either adopts what another
   * process stored (`adopt`) or performs the request. Waiters poll the row instead of the lock, so they
   * pick up the new token as soon as it is committed.
   */
  async underLock<T>(
    row: StoredAccount,
    adopt: (fresh: StoredAccount) => T | undefined,
    perform: (fresh: StoredAccount, lock: HeldLock) => Promise<T>,
  ): Promise<T> {
    const key = `${this.options.redisPrefix}:oauth:refresh-lock:${row.id}`;
    const deadline = Date.now() + this.options.waitTimeoutMs;
    for (;;) {
      const lock = await acquireLock(this.options.coord, key, this.options.lockTtlMs);
      if (lock) {
        try {
          const fresh = await this.readRow(row.id);
          return adopt(fresh) ?? (await perform(fresh, lock));
        } catch (err) {
          // Taken again, and the row read again: what the process that took it stored is adopted, or the refresh made.
          if (!(err instanceof LockRanOut)) throw err;
          this.options.log.warn(
            { accountId: row.id },
            "the refresh lock ran out before the refresh token was sent (this process was paused?); taking it again",
          );
          continue;
        } finally {
          // The new token is already committed: don't hold the caller for long on a blip of the lock store; the TTL frees the lock.
          if (!(await lock.release({ patienceMs: 2_000 })))
            this.options.log.warn({ accountId: row.id }, "could not release the refresh lock; it expires on its own");
        }
      }
      const fresh = await this.readRow(row.id);
      const adopted = adopt(fresh);
      if (adopted) return adopted;
      if (Date.now() > deadline) throw new TokenRefreshDeferredError(row.name, "another process has been refreshing it for too long");
      await sleep(this.options.pollMs);
    }
  }

  private async fail(row: StoredAccount, reason: string, fingerprint: string | null): Promise<never> {
    const marked = await this.options.store.markNeedsReauth({
      id: row.id,
      reason,
      now: new Date(this.now()),
      ...(fingerprint !== null ? { fingerprint } : {}),
    });
    if (marked) {
      this.options.log.error({ account: row.name, accountId: row.id, reason }, "the account needs to be authorized again");
      this.options.onNeedsReauth?.({ accountId: row.id, account: row.name, reason });
    }
    throw new ReauthRequiredError(row.name, reason, { implicit: row.grantType === "implicit" });
  }

  // -----------------------------------------------------------------------------------------------
  // Reading the row

  private async findRow(id: number): Promise<StoredAccount> {
    const row = await this.options.store.findById(id);
    if (!row) throw new ReauthRequiredError(`#${id}`, "the account was deleted");
    return row;
  }

  /** The row, with any grant a refresh left pending stored first: a row read for use never holds a spent token. */
  private async readRow(id: number): Promise<StoredAccount> {
    return this.adoptPending(await this.findRow(id));
  }

  private async readUsable(id: number): Promise<StoredAccount> {
    const row = await this.readRow(id);
    this.assertUsable(row);
    return (await this.flagOldRefreshToken(row)) ?? row;
  }

  private assertUsable(row: StoredAccount): void {
    const unusable = grantUnusable(row);
    if (unusable) throw unusable;
  }

  /** A refresh token older than 80 days is flagged `expiring`: a warning, not an error. */
  async flagOldRefreshToken(row: StoredAccount): Promise<StoredAccount | undefined> {
    if (row.state !== "ok" || !row.refreshTokenEnc || !row.refreshIssuedAt) return undefined;
    const age = this.now() - row.refreshIssuedAt.getTime();
    if (age < REFRESH_TOKEN_WARN_AGE_MS) return undefined;
    const reason = `its refresh token is ${Math.floor(age / DAY)} days old and the service ends it at about 90 days; any refresh renews it (dvault auth status does one), otherwise log in again`;
    const now = new Date(this.now());
    if (await this.options.store.markExpiring({ id: row.id, reason, now })) {
      this.options.log.warn(
        { account: row.name, accountId: row.id, refreshTokenAgeDays: Math.floor(age / DAY) },
        "refresh token is close to the end of its life",
      );
    }
    return { ...row, state: "expiring", stateReason: reason, stateChangedAt: now };
  }
}
/** The refresh lock expired and another holder took it before the refresh token was sent: underLock starts again. */
class LockRanOut extends Error {
  constructor() {
    super("the refresh lock ran out before the refresh token was sent");
  }
}
