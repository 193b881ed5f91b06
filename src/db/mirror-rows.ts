// Shared pieces of the set-based mirror repositories: how a page becomes one jsonb parameter, the counts
// every upsert returns, the mirror's enum types, and pure helpers that read the service's objects.
import { createHash } from "node:crypto";
import type { DeviationInput, FeedItemInput, StatusInput, UserInput } from "./mirror-input.ts";
import { parseEpochSeconds, parseIsoTime } from "../timestamps.ts";
import { storableJson } from "./storable-text.ts";
import { sql } from "./kysely.ts";

/** What an upsert did to the rows of one page: new rows, rows whose meaningful fields changed, the rest. */
export type UpsertCounts = { inserted: number; changed: number; unchanged: number };

/** `deactivated` is the older name of artist_deactivated, no longer written. */
export type RemovedReason =
  | "deleted"
  | "deactivated"
  | "access_lost"
  | "gone_from_listing"
  | "artist_suspended"
  | "artist_deactivated"
  | "artist_not_found"
  | "unavailable";
export type DeviationType = "image" | "journal" | "literature" | "video" | "other";
export type FolderKind = "gallery" | "collection";

/**
 * Rows as the one `$1::jsonb` parameter that `jsonb_to_recordset` reads. Dates become ISO strings; NUL and
 * lone surrogates become U+FFFD (see storableJson), so one such character cannot fail the page.
 */
export function jsonParam(rows: readonly object[]): string {
  return storableJson(rows);
}

/**
 * The rows keyed by `key`, in first-seen order, the last occurrence winning: ON CONFLICT DO UPDATE
 * refuses to touch a row twice in one statement, and pages can repeat an item. (The statements then
 * insert in key order, ORDER BY the key, so concurrent pages sharing rows, such as the same author in
 * two sources, lock them in the same order and cannot deadlock.)
 */
export function uniqueBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  const byKey = new Map<string, T>();
  for (const item of items) byKey.set(key(item), item);
  return [...byKey.values()];
}

/**
 * An ISO string for a jsonb row, or null: null too for a year before 1 or after 9999, which toISOString writes as
 * -000001-… or +010000-… and PostgreSQL refuses (a service's published_time of 253402300800 failed its whole page).
 */
export function isoOrNull(date: Date | undefined | null): string | null {
  if (!date) return null;
  const year = date.getUTCFullYear();
  return year >= 1 && year <= 9999 ? date.toISOString() : null;
}

export function isoTime(value: unknown): string | null {
  return isoOrNull(parseIsoTime(value));
}

export function epochTime(value: unknown): string | null {
  return isoOrNull(parseEpochSeconds(value));
}

/** An integer column from a number or a numeric string ("count": "12"); null for anything else. */
export function intOrNull(value: unknown): number | null {
  const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  return typeof n === "number" && Number.isFinite(n) ? Math.trunc(n) : null;
}

/** Sorted, de-duplicated tag names: the service's order carries no meaning, so a reorder is no edit. */
export function sortedTags(tags: readonly string[]): string[] {
  return [...new Set(tags)].sort();
}

/** What kind of work a deviation object describes, from the fields present (tombstones: null). */
export function deviationType(d: DeviationInput): DeviationType | null {
  if (d.is_deleted && !d.url && !d.title) return null;
  if (d.url && /\/journal\//.test(d.url)) return "journal";
  if (d.videos && d.videos.length > 0) return "video";
  if (d.content) return "image";
  if (d.excerpt != null || d.text_content) return "literature";
  if (d.preview || d.flash) return "image";
  return "other";
}

/** True for a profile post that is a status update (the service returns those deviation-shaped). */
export function isStatusPost(post: DeviationInput): boolean {
  return Boolean(post.url && /\/status-update\//.test(post.url));
}

/** A deviation-shaped status update from /user/profile/posts, as the status it is. */
export function statusFromProfilePost(post: DeviationInput): StatusInput {
  return {
    statusid: post.deviationid,
    body: post.excerpt ?? post.text_content?.excerpt ?? null,
    ts: isoOrNull(parseEpochSeconds(post.published_time)),
    url: post.url ?? null,
    comments_count: post.stats?.comments ?? null,
    is_deleted: post.is_deleted ?? false,
    author: post.author ?? null,
  };
}

/**
 * A stable id for a watch-feed item, which the service does not give: a bucket is one item however it
 * grows; anything else is identified by its time, type, actor and what it is about.
 */
export function feedItemId(item: FeedItemInput): string {
  const parts = item.bucketid
    ? ["bucket", item.bucketid]
    : [
        item.ts ?? "",
        item.type ?? "",
        item.by_user?.userid ?? "",
        (item.deviations ?? [])
          .map((d) => d.deviationid)
          .sort()
          .join(","),
        item.status?.statusid ?? "",
        item.comment?.commentid ?? "",
        item.collection?.folderid ?? "",
      ];
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 32);
}

/**
 * The distinct users among `users` (authors, originators, senders...), keeping for each userid the
 * object with the most fields: upsert them before rows that point at them.
 */
export function distinctUsers<U extends UserInput>(users: ReadonlyArray<U | null | undefined>): U[] {
  const byId = new Map<string, U>();
  for (const user of users) {
    if (!user?.userid || !user.username) continue;
    const known = byId.get(user.userid);
    if (!known || Object.keys(user).length >= Object.keys(known).length) byId.set(user.userid, user);
  }
  return [...byId.values()];
}

/** The distinct deviations among `deviations` (a page, message subjects, feed items), last one winning. */
export function distinctDeviations<D extends DeviationInput>(deviations: ReadonlyArray<D | null | undefined>): D[] {
  return uniqueBy(
    deviations.filter((d): d is D => Boolean(d?.deviationid)),
    (d) => d.deviationid,
  );
}

/**
 * SQL condition of an ON CONFLICT update: the incoming counters were sampled on a later UTC day than the
 * stored ones (`target`: the table's alias). Counters are sampled at most daily; ticking counters are never a change.
 */
export const STATS_DUE = (target: "d" | "m" | "u") => {
  const t = sql.raw(target);
  return sql`(EXCLUDED.stats_sampled_at IS NOT NULL AND (${t}.stats_sampled_at IS NULL OR date_trunc('day', EXCLUDED.stats_sampled_at AT TIME ZONE 'UTC') > date_trunc('day', ${t}.stats_sampled_at AT TIME ZONE 'UTC')))`;
};
