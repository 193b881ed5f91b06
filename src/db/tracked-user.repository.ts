// Users an account tracks (`dvault track add|remove|list`): their public gallery, collections and
// journals are mirrored with the account's user token, else a client token whose limitation is recorded.
import type { OnConflictBuilder, OnConflictUpdateBuilder } from "kysely";
import { kysely, sql } from "./kysely.ts";
import type { DB, Row, TrackTokenKind } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

export type { TrackTokenKind };

export type TrackedUser = {
  id: number;
  accountId: number;
  username: string;
  userid: string | null;
  tokenKind: TrackTokenKind;
  limitation: string | null;
  addedAt: Date;
  removedAt: Date | null;
};

export type TrackUserInput = {
  accountId: number;
  username: string;
  userid?: string | null;
  tokenKind: TrackTokenKind;
  /** In words, e.g. "client token: mature deviations are hidden". */
  limitation?: string | null;
  at: Date;
};

export class TrackedUserRepository {
  constructor(private readonly db: Queryable) {}

  /** Tracks a user (usernames compare case-insensitively); tracking again after a removal starts anew. */
  async addTrackedUser(input: TrackUserInput): Promise<TrackedUser> {
    const row = await kysely(this.db)
      .insertInto("tracked_users")
      .values({
        account_id: input.accountId,
        username: input.username,
        userid: input.userid ?? null,
        token_kind: input.tokenKind,
        limitation: input.limitation ?? null,
        added_at: input.at,
      })
      .onConflict(trackAgain)
      .returning(COLUMNS)
      .executeTakeFirstOrThrow();
    return toTracked(row);
  }

  /**
   * Tracks many users in one statement (`dvault track import`), with the same rules as addTrackedUser. The
   * inputs must not name one user of an account twice: Postgres refuses to update a row twice in one statement.
   */
  async addTrackedUsers(inputs: readonly TrackUserInput[]): Promise<number> {
    if (inputs.length === 0) return 0;
    const result = await kysely(this.db)
      .insertInto("tracked_users")
      .columns(["account_id", "username", "userid", "token_kind", "limitation", "added_at"])
      .expression(
        sql`SELECT * FROM unnest(${inputs.map((i) => i.accountId)}::int[], ${inputs.map((i) => i.username)}::text[], ${inputs.map((i) => i.userid ?? null)}::text[],
          ${inputs.map((i) => i.tokenKind)}::track_token_kind[], ${inputs.map((i) => i.limitation ?? null)}::text[], ${inputs.map((i) => i.at)}::timestamptz[])`,
      )
      .onConflict(trackAgain)
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0);
  }

  /** Stops tracking (the mirrored rows stay). False when the user was not tracked. */
  async removeTrackedUser(accountId: number, username: string, at: Date): Promise<boolean> {
    const result = await kysely(this.db)
      .updateTable("tracked_users")
      .set({ removed_at: at })
      .where("account_id", "=", accountId)
      .where(sql`lower(username)`, "=", sql`lower(${username})`)
      .where("removed_at", "is", null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Which of `lowerNames` (lowercase) the account tracks now: one query per batch of a track import, not the whole table. */
  async trackedAmong(accountId: number, lowerNames: readonly string[]): Promise<Set<string>> {
    if (lowerNames.length === 0) return new Set();
    const rows = await kysely(this.db)
      .selectFrom("tracked_users")
      .select(sql<string>`lower(username)`.as("name"))
      .where("account_id", "=", accountId)
      .where(sql`lower(username)`, "=", sql`ANY(${[...lowerNames]}::text[])`)
      .where("removed_at", "is", null)
      .execute();
    return new Set(rows.map((r) => r.name));
  }

  /**
   * Of the (account, lowercase name) pairs given, the ones no earlier call of this transaction gave: a track import
   * finds the names a list repeats in a temporary table, so a list of millions costs PostgreSQL disk, not memory.
   * The pairs of one call must differ; the table goes with the transaction.
   */
  async firstMentions(pairs: readonly { accountId: number; name: string }[]): Promise<Set<string>> {
    if (pairs.length === 0) return new Set();
    const db = kysely(this.db);
    await sql`CREATE TEMPORARY TABLE IF NOT EXISTS track_import_seen (account_id int NOT NULL, name text NOT NULL, PRIMARY KEY (account_id, name)) ON COMMIT DROP`.execute(
      db,
    );
    // track_import_seen is this transaction's own table, not the schema's: its columns are the ones just created.
    const { rows } = await sql<Pick<Row<"tracked_users">, "account_id"> & { name: string }>`
INSERT INTO track_import_seen (account_id, name) SELECT * FROM unnest(${pairs.map((p) => p.accountId)}::int[], ${pairs.map((p) => p.name)}::text[])
ON CONFLICT DO NOTHING
RETURNING account_id, name`.execute(db);
    return new Set(rows.map((r) => mentionKey(r.account_id, r.name)));
  }

  /** Tracked users of an account by username; removed ones too when asked. */
  async listTrackedUsers(accountId: number, options: { includeRemoved?: boolean } = {}): Promise<TrackedUser[]> {
    const rows = await kysely(this.db)
      .selectFrom("tracked_users")
      .select(COLUMNS)
      .where("account_id", "=", accountId)
      .where((eb) => eb.or([eb.val(options.includeRemoved ?? false), eb("removed_at", "is", null)]))
      .orderBy(sql`lower(username)`)
      .execute();
    return rows.map(toTracked);
  }
}

/** How firstMentions names a pair in the set it returns. */
export function mentionKey(accountId: number, lowerName: string): string {
  return `${accountId}\u0000${lowerName}`;
}

const COLUMNS = ["id", "account_id", "username", "userid", "token_kind", "limitation", "added_at", "removed_at"] as const;

/** Tracking a user again: the newest name, token and limitation; added anew when it had been removed. */
function trackAgain(oc: OnConflictBuilder<DB, "tracked_users">): OnConflictUpdateBuilder<DB, "tracked_users"> {
  return oc.expression(sql`account_id, lower(username)`).doUpdateSet((eb) => ({
    username: eb.ref("excluded.username"),
    userid: eb.fn.coalesce("excluded.userid", "tracked_users.userid"),
    token_kind: eb.ref("excluded.token_kind"),
    limitation: eb.ref("excluded.limitation"),
    added_at: sql`CASE WHEN tracked_users.removed_at IS NULL THEN tracked_users.added_at ELSE EXCLUDED.added_at END`,
    removed_at: null,
  }));
}

function toTracked(r: Pick<Row<"tracked_users">, (typeof COLUMNS)[number]>): TrackedUser {
  return {
    id: r.id,
    accountId: r.account_id,
    username: r.username,
    userid: r.userid,
    tokenKind: r.token_kind,
    limitation: r.limitation,
    addedAt: r.added_at,
    removedAt: r.removed_at,
  };
}
