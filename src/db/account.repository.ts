// Accounts and their encrypted tokens: one method per intent, each about one query. Holds only
// ciphertexts and fingerprints; encryption and the refresh protocol live in src/api/tokens.ts.
import type { Account, AccountKind, ClientAuth, GrantType, TokenState } from "../generated/prisma/client.ts";
import { EXIT_UNAVAILABLE, UserError } from "../errors.ts";
import type { Db } from "./prisma.ts";

export type { AccountKind, ClientAuth, GrantType, TokenState };
export type AccountRow = Account;

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
 * The Prisma client, or the `tx` of withPrismaTransaction (src/db/prisma-queryable.ts): on `tx` the account
 * writes join that transaction, with the mirror writes of its `sql` (docs/ARCHITECTURE.md#db).
 */
export type AccountDb = Pick<Db, "account"> & Partial<Pick<Db, "$transaction">>;

export class AccountRepository {
  constructor(private readonly db: AccountDb) {}

  findByName(name: string): Promise<AccountRow | null> {
    return guard(() => this.db.account.findUnique({ where: { name } }));
  }

  findById(id: number): Promise<AccountRow | null> {
    return guard(() => this.db.account.findUnique({ where: { id } }));
  }

  findByUserId(userId: string): Promise<AccountRow | null> {
    return guard(() => this.db.account.findUnique({ where: { userId } }));
  }

  /** Every account, users first, then by name. */
  list(): Promise<AccountRow[]> {
    return guard(() => this.db.account.findMany({ orderBy: [{ kind: "asc" }, { name: "asc" }] }));
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
    const write = async (tx: Pick<Db, "account">) => {
      const row = await tx.account.upsert({
        where: { name: grant.name },
        create: { name: grant.name, ...fields },
        update: fields,
        select: { id: true },
      });
      const sealed = grant.seal(row.id);
      return tx.account.update({
        where: { id: row.id },
        data: { ...sealed, accessTokenEnc: toBytes(sealed.accessTokenEnc), refreshTokenEnc: toBytes(sealed.refreshTokenEnc) },
      });
    };
    // On a transaction client the two writes are already inside the caller's transaction.
    return guard(() => (this.db.$transaction ? this.db.$transaction((tx) => write(tx)) : write(this.db)));
  }

  /**
   * Compare-and-swap of a refresh rotation: stores the new tokens only if the row still holds the refresh
   * token that was spent (by fingerprint) and was not logged out. One UPDATE ... WHERE.
   * Returns false when another writer got there first.
   */
  async saveRotatedToken(id: number, oldFingerprint: string, rotated: RotatedTokens): Promise<boolean> {
    const { now, scopes, ...sealed } = rotated;
    const result = await guard(() =>
      this.db.account.updateMany({
        // Not `state = ok`: a stray needs_reauth mark must not throw away the one live refresh token.
        where: { id, refreshTokenFingerprint: oldFingerprint, state: { not: "revoked" } },
        data: {
          ...sealed,
          accessTokenEnc: toBytes(sealed.accessTokenEnc),
          refreshTokenEnc: toBytes(sealed.refreshTokenEnc),
          scopes,
          state: "ok",
          stateReason: null,
          stateChangedAt: now,
          lastRefreshAt: now,
        },
      }),
    );
    return result.count === 1;
  }

  /** A renewed client-credentials token (no refresh token, nothing to compare). */
  async saveClientToken(id: number, sealed: Pick<SealedTokens, "accessTokenEnc" | "accessIssuedAt" | "accessExpiresAt"> & { now: Date }): Promise<void> {
    await guard(() =>
      this.db.account.update({
        where: { id },
        data: {
          accessTokenEnc: toBytes(sealed.accessTokenEnc),
          accessIssuedAt: sealed.accessIssuedAt,
          accessExpiresAt: sealed.accessExpiresAt,
          lastRefreshAt: sealed.now,
        },
      }),
    );
  }

  /**
   * The grant is gone (refresh token rejected, or spent by a request whose answer was lost). With a
   * fingerprint, only if the row still holds that refresh token: a newer grant is never marked dead.
   */
  async markNeedsReauth({ id, reason, now, fingerprint }: { id: number; reason: string; now: Date; fingerprint?: string | null }): Promise<boolean> {
    const result = await guard(() =>
      this.db.account.updateMany({
        where: { id, ...(fingerprint !== undefined ? { refreshTokenFingerprint: fingerprint } : {}), state: { not: "revoked" } },
        data: { state: "needs_reauth", stateReason: reason, stateChangedAt: now },
      }),
    );
    return result.count === 1;
  }

  /** Flags an old refresh token (a warning, not an error); only a healthy row changes. */
  async markExpiring({ id, reason, now }: { id: number; reason: string; now: Date }): Promise<boolean> {
    const result = await guard(() =>
      this.db.account.updateMany({
        where: { id, state: "ok" },
        data: { state: "expiring", stateReason: reason, stateChangedAt: now },
      }),
    );
    return result.count === 1;
  }

  /**
   * After a revoke: all tokens are dropped, or with `refreshOnly` just the refresh token (the access
   * token keeps working until it expires).
   */
  async markRevoked({ id, reason, now, refreshOnly }: { id: number; reason: string; now: Date; refreshOnly: boolean }): Promise<void> {
    await guard(() =>
      this.db.account.update({
        where: { id },
        data: {
          state: "revoked",
          stateReason: reason,
          stateChangedAt: now,
          refreshTokenEnc: null,
          refreshTokenFingerprint: null,
          refreshIssuedAt: null,
          ...(refreshOnly ? {} : { accessTokenEnc: null, accessExpiresAt: null, accessIssuedAt: null }),
        },
      }),
    );
  }

  /** What /user/whoami says about the row's user. */
  async saveIdentity(id: number, identity: { userId: string; username: string }): Promise<void> {
    await guard(() => this.db.account.update({ where: { id }, data: identity }));
  }
}

function toBytes(value: Uint8Array): Uint8Array<ArrayBuffer>;
function toBytes(value: Uint8Array | null): Uint8Array<ArrayBuffer> | null;
function toBytes(value: Uint8Array | null): Uint8Array<ArrayBuffer> | null {
  return value === null ? null : new Uint8Array(value);
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

type PrismaLikeError = {
  code?: unknown;
  message?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: string; column?: string; table?: string } } };
};

/** A missing table or column (P2021/P2022, or the adapter's TableDoesNotExist/ColumnNotFound) → one line. */
export function explainAccountDbError(err: unknown): unknown {
  const e = err as PrismaLikeError;
  const cause = e.meta?.driverAdapterError?.cause;
  const message = typeof e.message === "string" ? e.message : "";
  if (e.code === "P2021" || cause?.kind === "TableDoesNotExist" || /relation .* does not exist/i.test(message)) {
    return new SchemaMissingError("the database has no accounts table yet");
  }
  if (e.code === "P2022" || cause?.kind === "ColumnNotFound" || /column .* does not exist/i.test(message)) {
    return new SchemaMissingError(`the database schema is older than this dvault (${cause?.column ? `column ${cause.column}` : "a column"} is missing)`);
  }
  if (/type "?(token_state|account_kind|grant_type|client_auth)"? does not exist/i.test(message)) {
    return new SchemaMissingError("the database schema is older than this dvault (a type is missing)");
  }
  return err;
}
