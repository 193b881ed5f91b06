// Watch relations of an account: its watchers and the users it watches, with removal after a full sweep.
import type { WatchEntryInput } from "./mirror-input.ts";
import { isoTime, uniqueBy, type UpsertCounts } from "./mirror-rows.ts";
import { kysely, sql } from "./kysely.ts";
import { seenAgain, upsertPage } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

export type WatchKind = "watcher" | "watching";

export class WatchRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Records one page of /user/watchers (kind 'watcher') or /user/friends ('watching'). The users must be
   * upserted first (a foreign key says so). `changed` counts changed watch flags and returning users.
   */
  async upsertWatchRelations(accountId: number, kind: WatchKind, entries: readonly WatchEntryInput[], seenAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(entries, (e) => e.user.userid).map((e) => ({
      userid: e.user.userid,
      watch: e.watch ?? null,
      watches_you: e.watches_you ?? null,
      last_visit_at: isoTime(e.lastvisit),
    }));
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`userid text, watch jsonb, watches_you boolean, last_visit_at timestamptz`,
      before: sql`
        old AS (
          SELECT w.userid, w.watch, w.removed_at FROM watch_relations w JOIN input USING (userid)
          WHERE w.account_id = ${accountId} AND w.kind = ${kind}::watch_kind
        )`,
      upsert: sql`
        INSERT INTO watch_relations AS w (account_id, userid, kind, watch, watches_you, last_visit_at, first_seen_at, last_seen_at)
        SELECT ${accountId}, userid, ${kind}::watch_kind, watch, watches_you, last_visit_at, ${seenAt}, ${seenAt} FROM input ORDER BY userid
        ON CONFLICT (account_id, kind, userid) DO UPDATE SET
          watch = COALESCE(EXCLUDED.watch, w.watch),
          watches_you = COALESCE(EXCLUDED.watches_you, w.watches_you),
          last_visit_at = COALESCE(EXCLUDED.last_visit_at, w.last_visit_at),
          ${seenAgain("w")}
        RETURNING w.userid, (w.xmax = 0) AS inserted`,
      using: ["userid"],
      changed: sql`o.removed_at IS NOT NULL OR (i.watch IS NOT NULL AND o.watch IS DISTINCT FROM i.watch)`,
    });
  }

  /** The users an account watches (not removed), busiest posters' ids first is the caller's business. */
  async listWatching(accountId: number): Promise<Array<{ userid: string; username: string }>> {
    const rows = await kysely(this.db)
      .selectFrom("watch_relations as w")
      .innerJoin("users as u", "u.userid", "w.userid")
      .select(["w.userid", "u.username"])
      .where("w.account_id", "=", accountId)
      .where("w.kind", "=", "watching")
      .where("w.removed_at", "is", null)
      .where("u.username", "is not", null)
      .orderBy(sql`lower(u.username)`)
      .execute();
    return rows;
  }

  /** After a complete walk started at `sweepStartedAt`: relations not seen since are removed ('gone_from_listing'). */
  /** The users any account watches now. */
  async listWatchedUserIds(): Promise<string[]> {
    const rows = await kysely(this.db).selectFrom("watch_relations").select("userid").where("kind", "=", "watching").where("removed_at", "is", null).execute();
    return rows.map((r) => r.userid);
  }

  async markMissingWatchRelationsRemoved(accountId: number, kind: WatchKind, sweepStartedAt: Date, at: Date = new Date()): Promise<number> {
    const result = await kysely(this.db)
      .updateTable("watch_relations")
      .set({ removed_at: at, removed_reason: "gone_from_listing" })
      .where("account_id", "=", accountId)
      .where("kind", "=", kind)
      .where("last_seen_at", "<", sweepStartedAt)
      .where("removed_at", "is", null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }
}
