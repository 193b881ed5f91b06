// What the archive holds, counted per table and per download outcome (the demo's report).
import type { Queryable } from "./with-transaction.ts";

export class ArchiveCountsRepository {
  constructor(private readonly db: Queryable) {}

  /** Rows per table and downloads per outcome, and the bytes stored: the demo's closing summary. */
  async countArchive(): Promise<Record<string, number>> {
    const { rows } = await this.db.query<Record<string, number>>(`
      SELECT
        (SELECT count(*) FROM deviations)::int AS deviations,
        (SELECT count(*) FROM gallery_folders)::int AS gallery_folders,
        (SELECT count(*) FROM collection_folders)::int AS collection_folders,
        (SELECT count(*) FROM folder_members)::int AS folder_memberships,
        (SELECT count(*) FROM users)::int AS users,
        (SELECT count(*) FROM messages)::int AS messages,
        (SELECT count(*) FROM notes)::int AS notes,
        (SELECT count(*) FROM comments)::int AS comments,
        (SELECT count(*) FROM feed_items)::int AS feed_items,
        (SELECT count(*) FROM downloads WHERE status = 'done' AND kind = 'original')::int AS originals,
        (SELECT count(*) FROM downloads WHERE status = 'done' AND kind = 'text')::int AS texts,
        (SELECT count(*) FROM downloads WHERE status = 'degraded')::int AS degraded,
        (SELECT count(*) FROM downloads WHERE status = 'not_downloadable')::int AS not_downloadable,
        (SELECT count(*) FROM downloads WHERE status = 'failed')::int AS failed,
        (SELECT coalesce(sum(size), 0) FROM downloads WHERE path IS NOT NULL)::bigint::float8 AS stored_bytes`);
    return rows[0] ?? {};
  }

  /** The commonest word of five letters or more in the titles of deviations, for an example search; null when none. */
  async mostCommonTitleWord(): Promise<string | null> {
    const { rows } = await this.db.query<{ word: string }>(
      "SELECT w AS word FROM deviations, regexp_split_to_table(lower(title), '[^a-z]+') AS w WHERE length(w) >= 5 GROUP BY w ORDER BY count(*) DESC, w LIMIT 1",
    );
    return rows[0]?.word ?? null;
  }
}
