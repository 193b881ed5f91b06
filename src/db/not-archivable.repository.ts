// What the archive holds a listing of but could not archive in full, and why: works the service marks as
// locked (docs/service-behaviour.md#tier-locked), works it gives only in part (docs/service-behaviour.md#multi-image,
// #mature-blur), and what a public token's listings did not show (listing_shortfalls,
// docs/service-behaviour.md#public-token-hides-mature). Counted per source and artist; one query per method.
import { foldNotArchivable, type NotArchivable, type NotArchivableRows } from "../text/not-archivable.ts";
import type { SourceRef } from "./sync-state.repository.ts";
import type { Kysely } from "kysely";
import { kysely, sql } from "./kysely.ts";
import type { DB, Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

export type NotArchivableCountRow = NotArchivableRows["counts"][number];
export type NotArchivableTotalRow = NotArchivableRows["totals"][number];
export type ListingShortfallRow = NotArchivableRows["shortfalls"][number] & Pick<Row<"listing_shortfalls">, "artist_userid" | "recorded_at">;

export type ShortfallInput = { reason: "hidden_mature"; artistUserid: string; expected: number; listed: number };

export class NotArchivableRepository {
  private readonly k: Kysely<DB>;

  constructor(db: Queryable) {
    this.k = kysely(db);
  }

  /** Keeps what a sweep's listings could not show; a shortfall of none removes the row. */
  async saveShortfall(ref: Required<SourceRef>, input: ShortfallInput, at: Date): Promise<void> {
    if (input.expected > input.listed) {
      const row = { artist_userid: input.artistUserid, expected: input.expected, listed: input.listed, recorded_at: at };
      await this.k
        .insertInto("listing_shortfalls")
        .values({ account_id: ref.accountId, source: ref.source, key: ref.key, reason: input.reason, ...row })
        .onConflict((oc) => oc.columns(["account_id", "source", "key", "reason"]).doUpdateSet(row))
        .execute();
      return;
    }
    await this.clearShortfall(ref, input.reason);
  }

  /** The listings show everything again (or a user token lists the artist now). */
  async clearShortfall(ref: Required<SourceRef>, reason: ShortfallInput["reason"]): Promise<void> {
    await this.k
      .deleteFrom("listing_shortfalls")
      .where("account_id", "=", ref.accountId)
      .where("source", "=", ref.source)
      .where("key", "=", ref.key)
      .where("reason", "=", reason)
      .execute();
  }

  /** Listed works not archivable in full, per source, artist and reason (zero counts are never returned). */
  async countBySourceAndArtist(): Promise<NotArchivableCountRow[]> {
    const { rows } = await sql<NotArchivableCountRow>`${CLASSIFIED}
      SELECT c.account, c.source, c.key, c.author_userid AS artist_userid, u.username AS artist, c.reason, count(*)::int AS n
      FROM classified c LEFT JOIN users u ON u.userid = c.author_userid
      WHERE c.reason IS NOT NULL
      GROUP BY c.account, c.source, c.key, c.author_userid, u.username, c.reason
      ORDER BY c.account, c.source, c.key, u.username NULLS LAST, c.reason`.execute(this.k);
    return rows;
  }

  /** The same works per reason, each counted once however many sources list it. */
  async countByReason(): Promise<NotArchivableTotalRow[]> {
    const { rows } = await sql<NotArchivableTotalRow>`${CLASSIFIED}
      SELECT reason, count(DISTINCT deviationid)::int AS n FROM classified WHERE reason IS NOT NULL GROUP BY reason ORDER BY reason`.execute(this.k);
    return rows;
  }

  /** Shortfalls of the sources still synced (a tracked artist no longer tracked is left out). */
  async listShortfalls(): Promise<ListingShortfallRow[]> {
    const { rows } = await sql<ListingShortfallRow>`
      SELECT a.name AS account, s.source, s.key, s.reason, s.artist_userid, u.username AS artist, s.expected, s.listed, s.recorded_at
      FROM listing_shortfalls s
      JOIN accounts a ON a.id = s.account_id
      LEFT JOIN users u ON u.userid = s.artist_userid
      WHERE s.source <> 'tracked' OR ${STILL_TRACKED}
      ORDER BY a.name, s.source, s.key, s.reason`.execute(this.k);
    return rows;
  }
}

/** What status, the overview and the digest show: the three counts, folded (src/text/not-archivable.ts). */
export async function collectNotArchivable(db: Queryable): Promise<NotArchivable> {
  const repo = new NotArchivableRepository(db);
  const [counts, totals, shortfalls] = await Promise.all([repo.countBySourceAndArtist(), repo.countByReason(), repo.listShortfalls()]);
  return foldNotArchivable({ counts, totals, shortfalls });
}

/** A tracked source whose artist is still tracked (sync_sources rows outlive `dvault track remove`). */
const STILL_TRACKED = sql`EXISTS (SELECT 1 FROM tracked_users t WHERE t.account_id = s.account_id AND lower(t.username) = lower(s.key) AND t.removed_at IS NULL)`;

/**
 * The live works each gallery, collections, tracked and watch feed source lists, with the reason the service gives
 * for not offering them in full. A gallery lists its owner's works (unfiled ones too, which no folder
 * holds); collections list the owner's live favourites; the watch feed, the works its items carried. A tracked user's userid is looked up by name
 * while tracked_users does not have it yet (`dvault track add` stores the name only). A locked work counts as paid or watchers-only
 * and never also as partial, so each work has at most one reason.
 *
 * Read from the works that have a reason (the few the partial indexes deviations_not_archivable_idx and
 * downloads_partial_idx hold, migration 20261129030000_archive_counters), each then looked for in each source's
 * listing: never a walk of every listed work, which at a million works took seconds of every status and overview.
 */
const CLASSIFIED = sql`
WITH scopes AS (
  SELECT s.account_id, a.name AS account, s.source, s.key,
    CASE WHEN s.source = 'tracked' THEN COALESCE(t.userid, (SELECT u.userid FROM users u WHERE lower(u.username) = lower(t.username) LIMIT 1)) ELSE a.user_id END AS owner,
    s.source IN ('gallery', 'tracked') AS own_works, s.source IN ('collections', 'tracked') AS faves
  FROM sync_sources s
  JOIN accounts a ON a.id = s.account_id
  LEFT JOIN tracked_users t ON s.source = 'tracked' AND t.account_id = s.account_id AND lower(t.username) = lower(s.key) AND t.removed_at IS NULL
  WHERE s.source IN ('gallery', 'collections', 'tracked', 'watch_feed')
), reasons AS (
  SELECT d.deviationid, d.author_userid,
    CASE
      WHEN d.tier_access = 'locked' OR d.premium -> 'premium_folder_data' ->> 'has_access' = 'false' THEN
        CASE WHEN d.premium -> 'premium_folder_data' ->> 'type' = 'watchers' THEN 'watchers_only' ELSE 'paid' END
      ELSE 'partial'
    END AS reason,
    d.removed_at, d.is_deleted
  FROM deviations d
  WHERE d.tier_access = 'locked' OR d.premium -> 'premium_folder_data' ->> 'has_access' = 'false' OR d.raw ->> 'is_multi_media' = 'true'
  UNION
  SELECT d.deviationid, d.author_userid,
    CASE
      WHEN d.tier_access = 'locked' OR d.premium -> 'premium_folder_data' ->> 'has_access' = 'false' THEN
        CASE WHEN d.premium -> 'premium_folder_data' ->> 'type' = 'watchers' THEN 'watchers_only' ELSE 'paid' END
      ELSE 'partial'
    END,
    d.removed_at, d.is_deleted
  FROM downloads x JOIN deviations d ON d.deviationid = x.deviationid
  WHERE x.is_partial AND x.status IN ('done', 'degraded')
), candidates AS (
  SELECT deviationid, author_userid, reason FROM reasons WHERE removed_at IS NULL AND NOT is_deleted
), fed AS (
  -- The watch feed items that carried a candidate, found by the GIN index of their works (one lookup for all).
  SELECT DISTINCT fi.account_id, w.deviationid
  FROM feed_items fi CROSS JOIN LATERAL unnest(fi.deviationids) AS w(deviationid)
  WHERE fi.deviationids && (SELECT coalesce(array_agg(deviationid), '{}') FROM candidates)
    AND w.deviationid IN (SELECT deviationid FROM candidates)
), classified AS (
  SELECT sc.account, sc.source, sc.key, c.deviationid, c.author_userid, c.reason
  FROM scopes sc JOIN candidates c ON
    (sc.own_works AND c.author_userid = sc.owner)
    OR (sc.faves AND EXISTS (
      SELECT 1 FROM folder_members m JOIN collection_folders f ON f.folderid = m.folderid AND f.owner_userid = sc.owner AND f.removed_at IS NULL
      WHERE m.deviationid = c.deviationid AND m.kind = 'collection' AND m.removed_at IS NULL))
    OR (sc.source = 'watch_feed' AND EXISTS (SELECT 1 FROM fed WHERE fed.account_id = sc.account_id AND fed.deviationid = c.deviationid))
)`;
