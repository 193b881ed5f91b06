// Sta.sh stacks and items of an account (64-bit ids kept as text). The listing endpoints are gone
// upstream; this keeps what an earlier delta or a submit told us.
import type { StashMetadataInput } from "./mirror-input.ts";
import { epochTime, uniqueBy, type UpsertCounts } from "./mirror-rows.ts";
import { sql } from "./kysely.ts";
import { seenAgain, upsertPage } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

/** Stack or item metadata, with its position in the parent stack when the delta gave one. */
export type StashEntryInput = StashMetadataInput & { position?: number | null };

export class StashRepository {
  constructor(private readonly db: Queryable) {}

  /** Records stacks (entries with a stackid; entries without one are skipped). `changed`: retitled or moved. */
  async upsertStashStacks(accountId: number, stacks: readonly StashEntryInput[], seenAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(
      stacks.flatMap((s) => (s.stackid ? [{ ...s, stackid: s.stackid }] : [])),
      (s) => s.stackid,
    ).map((s) => ({
      stackid: s.stackid,
      parentid: s.parentid ?? null,
      title: s.title ?? null,
      path: s.path ?? null,
      description: s.description ?? null,
      size: s.size ?? null,
      position: s.position ?? null,
      thumb: s.thumb ?? null,
      raw: s,
    }));
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`stackid text, parentid text, title text, path text, description text, size integer, position integer, thumb jsonb, raw jsonb`,
      before: sql`
        old AS (
          SELECT s.stackid, s.parentid, s.title, s.position, s.removed_at FROM stash_stacks s JOIN input USING (stackid)
        )`,
      upsert: sql`
        INSERT INTO stash_stacks AS s (stackid, account_id, parentid, title, path, description, size, position, thumb, raw,
          first_seen_at, last_seen_at)
        SELECT stackid, ${accountId}, parentid, title, path, description, size, position, thumb, raw, ${seenAt}, ${seenAt} FROM input ORDER BY stackid
        ON CONFLICT (stackid) DO UPDATE SET
          parentid = COALESCE(EXCLUDED.parentid, s.parentid),
          title = COALESCE(EXCLUDED.title, s.title),
          path = COALESCE(EXCLUDED.path, s.path),
          description = COALESCE(EXCLUDED.description, s.description),
          size = COALESCE(EXCLUDED.size, s.size),
          position = COALESCE(EXCLUDED.position, s.position),
          thumb = COALESCE(EXCLUDED.thumb, s.thumb),
          raw = s.raw || EXCLUDED.raw,
          ${seenAgain("s")}
        RETURNING s.stackid, (s.xmax = 0) AS inserted`,
      using: ["stackid"],
      changed: sql`o.removed_at IS NOT NULL OR (i.parentid IS NOT NULL AND o.parentid IS DISTINCT FROM i.parentid) OR (i.title IS NOT NULL AND o.title IS DISTINCT FROM i.title) OR (i.position IS NOT NULL AND o.position IS DISTINCT FROM i.position)`,
    });
  }

  /** Records items (entries with an itemid; others are skipped). `changed`: retitled, redescribed, retagged or moved. */
  async upsertStashItems(accountId: number, items: readonly StashEntryInput[], seenAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(
      items.flatMap((s) => (s.itemid ? [{ ...s, itemid: s.itemid }] : [])),
      (s) => s.itemid,
    ).map((s) => ({
      itemid: s.itemid,
      stackid: s.stackid ?? null,
      title: s.title ?? null,
      description: s.description ?? null,
      artist_comments: s.artist_comments ?? null,
      original_url: s.original_url ?? null,
      category: s.category ?? null,
      creation_time: epochTime(s.creation_time),
      tags: s.tags ?? null,
      html: s.html ?? null,
      files: s.files ?? null,
      submission: s.submission ?? null,
      stats: s.stats ?? null,
      camera: s.camera ?? null,
      position: s.position ?? null,
      raw: s,
    }));
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`itemid text, stackid text, title text, description text, artist_comments text, original_url text, category text, creation_time timestamptz, tags text[], html text, files jsonb, submission jsonb, stats jsonb, camera jsonb, position integer, raw jsonb`,
      before: sql`
        old AS (
          SELECT s.itemid, s.stackid, s.title, s.description, s.tags, s.position, s.removed_at
          FROM stash_items s JOIN input USING (itemid)
        )`,
      upsert: sql`
        INSERT INTO stash_items AS s (itemid, account_id, stackid, title, description, artist_comments, original_url,
          category, creation_time, tags, html, files, submission, stats, camera, position, raw, first_seen_at, last_seen_at)
        SELECT itemid, ${accountId}, stackid, title, description, artist_comments, original_url, category, creation_time,
          tags, html, files, submission, stats, camera, position, raw, ${seenAt}, ${seenAt}
        FROM input ORDER BY itemid
        ON CONFLICT (itemid) DO UPDATE SET
          stackid = COALESCE(EXCLUDED.stackid, s.stackid),
          title = COALESCE(EXCLUDED.title, s.title),
          description = COALESCE(EXCLUDED.description, s.description),
          artist_comments = COALESCE(EXCLUDED.artist_comments, s.artist_comments),
          original_url = COALESCE(EXCLUDED.original_url, s.original_url),
          category = COALESCE(EXCLUDED.category, s.category),
          creation_time = COALESCE(EXCLUDED.creation_time, s.creation_time),
          tags = COALESCE(EXCLUDED.tags, s.tags),
          html = COALESCE(EXCLUDED.html, s.html),
          files = COALESCE(EXCLUDED.files, s.files),
          submission = COALESCE(EXCLUDED.submission, s.submission),
          stats = COALESCE(EXCLUDED.stats, s.stats),
          camera = COALESCE(EXCLUDED.camera, s.camera),
          position = COALESCE(EXCLUDED.position, s.position),
          raw = s.raw || EXCLUDED.raw,
          ${seenAgain("s")}
        RETURNING s.itemid, (s.xmax = 0) AS inserted`,
      using: ["itemid"],
      changed: sql`o.removed_at IS NOT NULL OR (i.stackid IS NOT NULL AND o.stackid IS DISTINCT FROM i.stackid) OR (i.title IS NOT NULL AND o.title IS DISTINCT FROM i.title) OR (i.description IS NOT NULL AND o.description IS DISTINCT FROM i.description) OR (i.tags IS NOT NULL AND o.tags IS DISTINCT FROM i.tags) OR (i.position IS NOT NULL AND o.position IS DISTINCT FROM i.position)`,
    });
  }
}
