// Users an account tracks (`dvault track add|remove|list`): their public gallery, collections and
// journals are mirrored with the account's user token, else a client token whose limitation is recorded.
import type { Queryable } from "./with-transaction.ts";

export type TrackTokenKind = "user" | "client";

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
    const { rows } = await this.db.query<TrackedRowDb>(ADD, [
      input.accountId,
      input.username,
      input.userid ?? null,
      input.tokenKind,
      input.limitation ?? null,
      input.at,
    ]);
    return toTracked(rows[0] as TrackedRowDb);
  }

  /**
   * Tracks many users in one statement (`dvault track import`), with the same rules as addTrackedUser. The
   * inputs must not name one user of an account twice: Postgres refuses to update a row twice in one statement.
   */
  async addTrackedUsers(inputs: readonly TrackUserInput[]): Promise<number> {
    if (inputs.length === 0) return 0;
    const result = await this.db.query(ADD_MANY, [
      inputs.map((i) => i.accountId),
      inputs.map((i) => i.username),
      inputs.map((i) => i.userid ?? null),
      inputs.map((i) => i.tokenKind),
      inputs.map((i) => i.limitation ?? null),
      inputs.map((i) => i.at),
    ]);
    return result.rowCount ?? 0;
  }

  /** Stops tracking (the mirrored rows stay). False when the user was not tracked. */
  async removeTrackedUser(accountId: number, username: string, at: Date): Promise<boolean> {
    const result = await this.db.query(REMOVE, [accountId, username, at]);
    return (result.rowCount ?? 0) > 0;
  }

  /** Which of `lowerNames` (lowercase) the account tracks now: one query per batch of a track import, not the whole table. */
  async trackedAmong(accountId: number, lowerNames: readonly string[]): Promise<Set<string>> {
    if (lowerNames.length === 0) return new Set();
    const { rows } = await this.db.query<{ name: string }>(TRACKED_AMONG, [accountId, lowerNames]);
    return new Set(rows.map((r) => r.name));
  }

  /**
   * Of the (account, lowercase name) pairs given, the ones no earlier call of this transaction gave: a track import
   * finds the names a list repeats in a temporary table, so a list of millions costs PostgreSQL disk, not memory.
   * The pairs of one call must differ; the table goes with the transaction.
   */
  async firstMentions(pairs: readonly { accountId: number; name: string }[]): Promise<Set<string>> {
    if (pairs.length === 0) return new Set();
    await this.db.query(SEEN_TABLE);
    const { rows } = await this.db.query<{ account_id: number; name: string }>(FIRST_MENTIONS, [pairs.map((p) => p.accountId), pairs.map((p) => p.name)]);
    return new Set(rows.map((r) => mentionKey(r.account_id, r.name)));
  }

  /** Tracked users of an account by username; removed ones too when asked. */
  async listTrackedUsers(accountId: number, options: { includeRemoved?: boolean } = {}): Promise<TrackedUser[]> {
    const { rows } = await this.db.query<TrackedRowDb>(LIST, [accountId, options.includeRemoved ?? false]);
    return rows.map(toTracked);
  }
}

/** How firstMentions names a pair in the set it returns. */
export function mentionKey(accountId: number, lowerName: string): string {
  return `${accountId}\u0000${lowerName}`;
}

type TrackedRowDb = {
  id: number;
  account_id: number;
  username: string;
  userid: string | null;
  token_kind: TrackTokenKind;
  limitation: string | null;
  added_at: Date;
  removed_at: Date | null;
};

function toTracked(r: TrackedRowDb): TrackedUser {
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

const COLUMNS = "id, account_id, username, userid, token_kind, limitation, added_at, removed_at";

const UPSERT = `
ON CONFLICT (account_id, lower(username)) DO UPDATE SET
  username = EXCLUDED.username,
  userid = COALESCE(EXCLUDED.userid, t.userid),
  token_kind = EXCLUDED.token_kind,
  limitation = EXCLUDED.limitation,
  added_at = CASE WHEN t.removed_at IS NULL THEN t.added_at ELSE EXCLUDED.added_at END,
  removed_at = NULL`;

const ADD = `
INSERT INTO tracked_users AS t (account_id, username, userid, token_kind, limitation, added_at)
VALUES ($1, $2, $3, $4::track_token_kind, $5, $6)
${UPSERT}
RETURNING ${COLUMNS}`;

const ADD_MANY = `
INSERT INTO tracked_users AS t (account_id, username, userid, token_kind, limitation, added_at)
SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::track_token_kind[], $5::text[], $6::timestamptz[])
${UPSERT}`;

const REMOVE = `
UPDATE tracked_users SET removed_at = $3
WHERE account_id = $1 AND lower(username) = lower($2) AND removed_at IS NULL`;

const LIST = `
SELECT ${COLUMNS} FROM tracked_users
WHERE account_id = $1 AND ($2 OR removed_at IS NULL)
ORDER BY lower(username)`;

const TRACKED_AMONG = `
SELECT lower(username) AS name FROM tracked_users
WHERE account_id = $1 AND lower(username) = ANY($2::text[]) AND removed_at IS NULL`;

const SEEN_TABLE = `
CREATE TEMPORARY TABLE IF NOT EXISTS track_import_seen (account_id int NOT NULL, name text NOT NULL, PRIMARY KEY (account_id, name)) ON COMMIT DROP`;

const FIRST_MENTIONS = `
INSERT INTO track_import_seen (account_id, name) SELECT * FROM unnest($1::int[], $2::text[])
ON CONFLICT DO NOTHING
RETURNING account_id, name`;
