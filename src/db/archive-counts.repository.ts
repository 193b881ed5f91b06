// What the archive holds, counted per table and per download outcome (the demo's report).
import { kysely, sql } from "./kysely.ts";
import type { Table } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

export class ArchiveCountsRepository {
  constructor(private readonly db: Queryable) {}

  /** Rows per table and downloads per outcome, and the bytes stored: the demo's closing summary. */
  async countArchive(): Promise<Record<string, number>> {
    const db = kysely(this.db);
    const rows = (table: Table) => sql<number>`(${db.selectFrom(table).select(sql`count(*)`.as("n"))})::int`;
    const downloads = db.selectFrom("downloads").select(sql`count(*)`.as("n"));
    const count = (q: typeof downloads) => sql<number>`(${q})::int`;
    const row = await db
      .selectNoFrom([
        rows("deviations").as("deviations"),
        rows("gallery_folders").as("gallery_folders"),
        rows("collection_folders").as("collection_folders"),
        rows("folder_members").as("folder_memberships"),
        rows("users").as("users"),
        rows("messages").as("messages"),
        rows("notes").as("notes"),
        rows("comments").as("comments"),
        rows("feed_items").as("feed_items"),
        count(downloads.where("status", "=", "done").where("kind", "=", "original")).as("originals"),
        count(downloads.where("status", "=", "done").where("kind", "=", "text")).as("texts"),
        count(downloads.where("status", "=", "degraded")).as("degraded"),
        count(downloads.where("status", "=", "not_downloadable")).as("not_downloadable"),
        count(downloads.where("status", "=", "failed")).as("failed"),
        sql<number>`(${db.selectFrom("downloads").select(sql`coalesce(sum(size), 0)`.as("bytes")).where("path", "is not", null)})::bigint::float8`.as(
          "stored_bytes",
        ),
      ])
      .executeTakeFirst();
    return row ?? {};
  }

  /** The commonest word of five letters or more in the titles of deviations, for an example search; null when none. */
  async mostCommonTitleWord(): Promise<string | null> {
    const row = await kysely(this.db)
      .selectFrom(["deviations", sql<{ w: string }>`regexp_split_to_table(lower(title), '[^a-z]+')`.as("w")])
      .select("w.w as word")
      .where(sql`length(w)`, ">=", 5)
      .groupBy("w.w")
      .orderBy(sql`count(*)`, "desc")
      .orderBy("w.w")
      .limit(1)
      .executeTakeFirst();
    return row?.word ?? null;
  }
}
