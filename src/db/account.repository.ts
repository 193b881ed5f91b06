// Accounts and their encrypted tokens: one method per intent, each about one query. Holds only
// ciphertexts and fingerprints; encryption and the refresh protocol live in src/api (token-manager.ts, token-refresh.ts).
import type { Kysely, Updateable } from "kysely";
import pg from "pg";
import { EXIT_UNAVAILABLE, UserError } from "../errors.ts";
import { type CamelDB, kyselyCamel, sql } from "./kysely.ts";
import type { AccountKind, CamelRow, ClientAuth, GrantType, TokenState } from "./schema.ts";
import { type Queryable, withTransaction } from "./with-transaction.ts";

export type { AccountKind, ClientAuth, GrantType, TokenState };

/** An account as the token code reads it: camelCase names (those of Prisma's model, which it used before). */
export type AccountRow = CamelRow<"accounts">;

/** Token columns as written: ciphertexts (bound to the row id) and their metadata. */
export type SealedTokens = {
  accessTokenEnc: Uint8Array;
  accessIssuedAt: Date;
  accessExpiresAt: Date;
  /** null when the grant has no refresh token (implicit, client credentials). */
  refreshTokenEnc: Uint8Array | null;
  refreshTokenFingerprint: string | null;
  refreshIssuedAt: Date | null;
};

export type GrantRecord = {
  name: string;
  kind: AccountKind;
  clientId: string;
  grantType: GrantType;
  clientAuth: ClientAuth;
  userId?: string | null;
  username?: string | null;
  scopes: string[];
  state: TokenState;
  stateReason: string | null;
  now: Date;
  /** Encrypts the tokens for the row's id, known only once the row exists. */
  seal: (accountId: number) => SealedTokens;
};

/** The service's answers to one rotation, sealed for the row. */
export type RotatedTokens = SealedTokens & { scopes: string[]; now: Date };

/**
 * Given the pool, each method runs on it (a grant's two writes in a transaction of their own); given the client
 * of a withTransaction, the account writes join that transaction, with whatever mirror writes it holds.
 */
export class AccountRepository {
  private readonly k: Kysely<CamelDB>;

  constructor(private readonly db: Queryable) {
    this.k = kyselyCamel(db);
  }

  findByName(name: string): Promise<AccountRow | null> {
    return guard(async () => (await this.k.selectFrom("accounts").selectAll().where("name", "=", name).executeTakeFirst()) ?? null);
  }

  findById(id: number): Promise<AccountRow | null> {
    return guard(async () => (await this.k.selectFrom("accounts").selectAll().where("id", "=", id).executeTakeFirst()) ?? null);
  }

  findByUserId(userId: string): Promise<AccountRow | null> {
    return guard(async () => (await this.k.selectFrom("accounts").selectAll().where("userId", "=", userId).executeTakeFirst()) ?? null);
  }

  /**
   * Proves the database takes a write to the accounts table now (an UPDATE that matches no row, so nothing changes),
   * before something single-use is spent whose result must be stored there: a database that refuses writes (a standby,
   * default_transaction_read_only, no UPDATE privilege) is refused here with one line (DatabaseRefusesWritesError),
   * while the refresh token or code is still good.
   */
  async proveWritable(): Promise<void> {
    try {
      await this.k
        .updateTable("accounts")
        .set((eb) => ({ updatedAt: eb.ref("updatedAt") }))
        .where(sql<boolean>`false`)
        .execute();
    } catch (err) {
      const explained = explainAccountDbError(err);
      if (explained !== err) throw explained;
      throw new DatabaseRefusesWritesError(err instanceof Error ? err.message : String(err), err);
    }
  }

  /** Every account, users first, then by name. */
  list(): Promise<AccountRow[]> {
    return guard(() => this.k.selectFrom("accounts").selectAll().orderBy("kind").orderBy("name").execute());
  }

  /**
   * A new grant (login, import, client credentials) replaces whatever the row held: the row is created
   * or updated by name, then its tokens are sealed for its id, in one transaction.
   */
  createOrUpdateFromGrant(grant: GrantRecord): Promise<AccountRow> {
    const fields = {
      kind: grant.kind,
      clientId: grant.clientId,
      grantType: grant.grantType,
      clientAuth: grant.clientAuth,
      scopes: grant.scopes,
      state: grant.state,
      stateReason: grant.stateReason,
      stateChangedAt: grant.now,
      grantStartedAt: grant.now,
      lastRefreshAt: null,
      ...(grant.userId !== undefined ? { userId: grant.userId } : {}),
      ...(grant.username !== undefined ? { username: grant.username } : {}),
    };
    const write = async (q: Queryable) => {
      const k = kyselyCamel(q);
      const row = await k
        .insertInto("accounts")
        .values({ name: grant.name, ...fields, updatedAt: new Date() })
        .onConflict((oc) => oc.column("name").doUpdateSet({ ...fields, updatedAt: new Date() }))
        .returning("id")
        .executeTakeFirstOrThrow();
      const sealed = grant.seal(row.id);
      return k
        .updateTable("accounts")
        .set({ ...sealed, accessTokenEnc: bytes(sealed.accessTokenEnc), refreshTokenEnc: bytes(sealed.refreshTokenEnc), updatedAt: new Date() })
        .where("id", "=", row.id)
        .returningAll()
        .executeTakeFirstOrThrow();
    };
    // On a transaction's client the two writes are already inside the caller's transaction.
    return guard(() => (this.db instanceof pg.Pool ? withTransaction(this.db, write) : write(this.db)));
  }

  /**
   * Compare-and-swap of a refresh rotation: stores the new tokens only if the row still holds the refresh
   * token that was spent (by fingerprint) and was not logged out. One UPDATE ... WHERE.
   * Returns false when another writer got there first.
   */
  async saveRotatedToken(id: number, oldFingerprint: string, rotated: RotatedTokens): Promise<boolean> {
    const { now, scopes, ...sealed } = rotated;
    const result = await guard(() =>
      this.k
        .updateTable("accounts")
        .set({
          ...sealed,
          accessTokenEnc: bytes(sealed.accessTokenEnc),
          refreshTokenEnc: bytes(sealed.refreshTokenEnc),
          scopes,
          state: "ok",
          stateReason: null,
          stateChangedAt: now,
          lastRefreshAt: now,
          updatedAt: new Date(),
        })
        // Not `state = ok`: a stray needs_reauth mark must not throw away the one live refresh token.
        .where("id", "=", id)
        .where("refreshTokenFingerprint", "=", oldFingerprint)
        .where("state", "<>", "revoked")
        .executeTakeFirst(),
    );
    return result.numUpdatedRows === 1n;
  }

  /** A renewed client-credentials token (no refresh token, nothing to compare). */
  async saveClientToken(id: number, sealed: Pick<SealedTokens, "accessTokenEnc" | "accessIssuedAt" | "accessExpiresAt"> & { now: Date }): Promise<void> {
    await this.updateOne(id, {
      accessTokenEnc: bytes(sealed.accessTokenEnc),
      accessIssuedAt: sealed.accessIssuedAt,
      accessExpiresAt: sealed.accessExpiresAt,
      lastRefreshAt: sealed.now,
    });
  }

  /**
   * The grant is gone (refresh token rejected, or spent by a request whose answer was lost). With a
   * fingerprint, only if the row still holds that refresh token: a newer grant is never marked dead.
   */
  async markNeedsReauth({ id, reason, now, fingerprint }: { id: number; reason: string; now: Date; fingerprint?: string | null }): Promise<boolean> {
    let update = this.k
      .updateTable("accounts")
      .set({ state: "needs_reauth", stateReason: reason, stateChangedAt: now, updatedAt: new Date() })
      .where("id", "=", id)
      .where("state", "<>", "revoked");
    if (fingerprint !== undefined) update = update.where("refreshTokenFingerprint", fingerprint === null ? "is" : "=", fingerprint);
    const result = await guard(() => update.executeTakeFirst());
    return result.numUpdatedRows === 1n;
  }

  /** Flags an old refresh token (a warning, not an error); only a healthy row changes. */
  async markExpiring({ id, reason, now }: { id: number; reason: string; now: Date }): Promise<boolean> {
    const result = await guard(() =>
      this.k
        .updateTable("accounts")
        .set({ state: "expiring", stateReason: reason, stateChangedAt: now, updatedAt: new Date() })
        .where("id", "=", id)
        .where("state", "=", "ok")
        .executeTakeFirst(),
    );
    return result.numUpdatedRows === 1n;
  }

  /**
   * After a revoke: all tokens are dropped, or with `refreshOnly` just the refresh token (the access
   * token keeps working until it expires).
   */
  async markRevoked({ id, reason, now, refreshOnly }: { id: number; reason: string; now: Date; refreshOnly: boolean }): Promise<void> {
    await this.updateOne(id, {
      state: "revoked",
      stateReason: reason,
      stateChangedAt: now,
      refreshTokenEnc: null,
      refreshTokenFingerprint: null,
      refreshIssuedAt: null,
      ...(refreshOnly ? {} : { accessTokenEnc: null, accessExpiresAt: null, accessIssuedAt: null }),
    });
  }

  /** What /user/whoami says about the row's user. */
  async saveIdentity(id: number, identity: { userId: string; username: string }): Promise<void> {
    await this.updateOne(id, identity);
  }

  /** An update of the row `id`, which must exist (an account removed under a running command is an error, not a no-op). */
  private async updateOne(id: number, set: Updateable<CamelDB["accounts"]>): Promise<void> {
    const result = await guard(() =>
      this.k
        .updateTable("accounts")
        .set({ ...set, updatedAt: new Date() })
        .where("id", "=", id)
        .executeTakeFirst(),
    );
    if (result.numUpdatedRows !== 1n) throw new Error(`account ${id} does not exist`);
  }
}

/** A ciphertext as the driver writes bytea. */
function bytes(value: Uint8Array): Buffer;
function bytes(value: Uint8Array | null): Buffer | null;
function bytes(value: Uint8Array | null): Buffer | null {
  return value === null ? null : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}
/** The database would not take a write (read-only, a standby, a missing privilege): nothing single-use was spent. */
export class DatabaseRefusesWritesError extends UserError {
  constructor(
    readonly reason: string,
    /** The driver's error, whose SQLSTATE tells a refusal that passes from a missing privilege (src/queue/outage.ts). */
    override readonly cause?: unknown,
  ) {
    super(
      `the database refuses writes (${reason}), so nothing was spent: make it writable (the primary, not a standby; default_transaction_read_only off) and run this again`,
      EXIT_UNAVAILABLE,
    );
    this.name = "DatabaseRefusesWritesError";
  }
}

/**
 * Tables or columns missing means the database predates this version of dvault. The commands check the ledger
 * first (src/db/schema-check.ts); this catches a schema changed behind the ledger's back, with the same ending
 * and exit code.
 */
export class SchemaMissingError extends UserError {
  constructor(what: string) {
    super(`${what}: run dvault migrate`, EXIT_UNAVAILABLE);
    this.name = "SchemaMissingError";
  }
}

async function guard<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw explainAccountDbError(err);
  }
}

/** A missing table (42P01), column (42703) or type (42704) of the accounts → one line. */
export function explainAccountDbError(err: unknown): unknown {
  const e = err as { code?: unknown; message?: unknown };
  const message = typeof e.message === "string" ? e.message : "";
  if (e.code === "42P01" || /relation .* does not exist/i.test(message)) {
    return new SchemaMissingError("the database has no accounts table yet");
  }
  const column = /column "?([\w.]+)"? does not exist/i.exec(message)?.[1];
  if (e.code === "42703" || column) {
    return new SchemaMissingError(`the database schema is older than this dvault (${column ? `column ${column}` : "a column"} is missing)`);
  }
  if (/type "?(token_state|account_kind|grant_type|client_auth)"? does not exist/i.test(message)) {
    return new SchemaMissingError("the database schema is older than this dvault (a type is missing)");
  }
  return err;
}
