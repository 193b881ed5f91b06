// What the dashboard's archive browser reads: recent items with their stored file, the filters' choices,
// one item with its metadata, history and files, and a stored file by its download id. Read-only.
import {
  BEST_FILE,
  type BrowseCursor,
  type BrowseFilter,
  type BrowseFilters,
  browseFrom,
  FILE_COLUMNS,
  type FileColumns,
  type FileRow,
  recentItems,
  recentItemsStatement,
  STORED,
} from "./archive-browse-statement.ts";
import { kysely, sql } from "./kysely.ts";
import type { FolderKind, Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

export { BEST_FILE, type BrowseCursor, type BrowseFilter, type BrowseFilters, type FileRow, recentItemsStatement };

export type StoredFileRef = {
  downloadId: string;
  path: string;
  /** Content hash: the key of its thumbnails (/thumb/s/<sha256>.webp). */
  sha256: string | null;
  mime: string | null;
  status: string;
  kind: string;
  size: number | null;
  width: number | null;
  height: number | null;
  /** What is stored: "original", "content", "preview", "video:<quality>", "html" (null on older rows). */
  rendition: string | null;
  /** Why a rendition and not the original: the quota (degraded_reason) or the service's refusal (reason). */
  why: string | null;
};

export type ItemCard = {
  deviationid: string;
  title: string | null;
  type: string | null;
  publishedAt: Date | null;
  artist: string | null;
  isMature: boolean;
  removedAt: Date | null;
  removedReason: string | null;
  file: StoredFileRef | null;
};

/** The cursor of an item, for the links to the pages after and before it. */
export function cursorOf(item: Pick<ItemCard, "deviationid" | "publishedAt">): BrowseCursor {
  return { key: item.publishedAt ? item.publishedAt.toISOString() : "-infinity", deviationid: item.deviationid };
}

/** Works of one month of publication ('YYYY-MM'; null: undated), as deviation_month_counts keeps them. */
export type MonthCount = { month: Row<"deviation_month_counts">["month"] | null; items: Row<"deviation_month_counts">["items"] };

/** Whether a filter keeps fewer works than the whole archive (an artist, folder, type, tag, date, file state). */
export function narrows(f: BrowseFilters): boolean {
  return Boolean(f.artist || f.folder || f.collection || f.archivedOnly || f.notFull || f.type || f.tag || f.from || f.until);
}

export type FolderChoice = { folderid: string; name: string; owner: string | null; size: number; parent: string | null };
export type FilterChoices = { artists: Array<{ username: string; items: number }>; galleries: FolderChoice[]; collections: FolderChoice[] };

export type ItemDetail = {
  deviationid: string;
  url: string | null;
  title: string | null;
  type: string | null;
  publishedAt: Date | null;
  artist: string | null;
  authorUserid: string | null;
  isMature: boolean;
  isDownloadable: boolean | null;
  favourites: number | null;
  comments: number | null;
  firstSeenAt: Date;
  lastSeenAt: Date;
  removedAt: Date | null;
  removedReason: string | null;
  description: string | null;
  tags: string[];
  license: string | null;
  stats: Record<string, unknown> | null;
  text: string | null;
  excerpt: string | null;
  folders: Array<{ kind: string; folderid: string; name: string | null; owner: string | null }>;
  files: StoredFileRef[];
  /** Downloads rows that are not stored files (wanted, deferred, failed ...), with why. */
  pending: Array<{ kind: string; status: string; reason: string | null; lastError: string | null }>;
  history: Array<{ changedAt: Date; field: string; oldValue: unknown; newValue: unknown }>;
};

export function fileOf(r: FileRow): StoredFileRef | null {
  if (!r.download_id || !r.path) return null;
  return {
    downloadId: r.download_id,
    path: r.path,
    sha256: r.sha256,
    rendition: r.rendition,
    why: r.why,
    mime: r.mime,
    status: r.status ?? "done",
    kind: r.kind ?? "original",
    size: r.size,
    width: r.width,
    height: r.height,
  };
}

export class ArchiveBrowserRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Newest published first; filters combine. The page is read along deviations_browse_idx: after a cursor (the
   * pager's next link, keyset paging, as deep as it goes at the cost of one page) or past `offset` items (a page
   * asked by number, an index-only walk). How many items match is monthCounts' (their sum), not counted here.
   */
  async recentItems(filter: BrowseFilter): Promise<{ items: ItemCard[]; hasMore: boolean }> {
    const { rows } = await recentItems(filter).execute(kysely(this.db));
    // Read backwards (before a cursor), the one extra row is the newest: the page is the rows nearest the cursor.
    const page = filter.before && !filter.after ? rows.slice(Math.max(0, rows.length - filter.limit)) : rows.slice(0, filter.limit);
    const items = page.map((r) => ({
      deviationid: r.deviationid,
      title: r.title,
      type: r.type,
      publishedAt: r.published_at,
      artist: r.artist,
      isMature: r.is_mature ?? false,
      removedAt: r.removed_at,
      removedReason: r.removed_reason,
      file: fileOf(r),
    }));
    return { items, hasMore: rows.length > filter.limit };
  }

  /** Items per month of publication, newest first, under the same filters (the grid's date scrubber and its total). */
  async monthCounts(filter: BrowseFilters): Promise<MonthCount[]> {
    // The whole archive from its maintained counters (migration 20261129030000_archive_counters): no count of
    // the mirror on a page view. The month key is 'YYYY-MM', so its text order is the months' order.
    if (!narrows(filter)) {
      return kysely(this.db)
        .selectFrom("deviation_month_counts")
        .select([sql<string | null>`nullif(month, '')`.as("month"), "items"])
        .where("items", ">", 0)
        .orderBy(sql`nullif(month, '') DESC NULLS LAST`)
        .execute();
    }
    // Grouped by the month's timestamp and named after: to_char on every row cost more than the count.
    const { rows } = await sql<MonthCount>`SELECT to_char(m, 'YYYY-MM') AS month, items FROM (
         SELECT date_trunc('month', d.published_at AT TIME ZONE 'UTC') AS m, count(*)::int AS items
         ${browseFrom(filter)}
         GROUP BY 1) x
       ORDER BY m DESC NULLS LAST`.execute(kysely(this.db));
    return rows;
  }

  /**
   * monthCounts, counted only as far as `bound` works: the months when at most `bound` works match the filter,
   * undefined when more do (a filter keeping most of a million works is not counted on each page view). The whole
   * archive is always answered, from its counters.
   */
  async boundedMonthCounts(filter: BrowseFilters, bound: number): Promise<MonthCount[] | undefined> {
    if (narrows(filter)) {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM (SELECT 1 ${browseFrom(filter)} LIMIT ${bound + 1}) x`.execute(kysely(this.db));
      if ((rows[0]?.n ?? 0) > bound) return undefined;
    }
    return this.monthCounts(filter);
  }

  /** The choices of the browser's filters: artists with the most items, every live gallery and collection folder. */
  async filterChoices(): Promise<FilterChoices> {
    const db = kysely(this.db);
    const [artists, folders] = await Promise.all([
      // From the maintained counts per author (migration 20261129030000_archive_counters), not the mirror's rows.
      db
        .selectFrom("artist_work_counts as c")
        .innerJoin("users as u", "u.userid", "c.author_userid")
        .select(["u.username", sql<number>`sum(c.items)::int`.as("items")])
        .where("c.items", ">", 0)
        .groupBy("u.username")
        .orderBy("items", "desc")
        .orderBy(sql`lower(u.username)`)
        .limit(200)
        .execute(),
      db
        .selectFrom("gallery_folders as f")
        .leftJoin("users as u", "u.userid", "f.owner_userid")
        .select((eb) => [
          sql<FolderKind>`'gallery'`.as("kind"),
          "f.folderid",
          "f.name",
          "u.username as owner",
          "f.parent_folderid as parent",
          // The folder's live members as folder_member_counts keeps them (migration 20261129030500_folder_counts).
          eb.selectFrom("folder_member_counts as m").select("m.items").where("m.kind", "=", "gallery").whereRef("m.folderid", "=", "f.folderid").as("size"),
        ])
        .where("f.removed_at", "is", null)
        .unionAll(
          db
            .selectFrom("collection_folders as f")
            .leftJoin("users as u", "u.userid", "f.owner_userid")
            .select((eb) => [
              sql<FolderKind>`'collection'`.as("kind"),
              "f.folderid",
              "f.name",
              "u.username as owner",
              sql<string | null>`NULL::text`.as("parent"),
              eb
                .selectFrom("folder_member_counts as m")
                .select("m.items")
                .where("m.kind", "=", "collection")
                .whereRef("m.folderid", "=", "f.folderid")
                .as("size"),
            ])
            .where("f.removed_at", "is", null),
        )
        .orderBy(sql.lit(4))
        .orderBy(sql.lit(3))
        .orderBy(sql.lit(2))
        .execute(),
    ]);
    const choice = (r: (typeof folders)[number]): FolderChoice => ({
      folderid: r.folderid,
      parent: r.parent,
      name: r.name ?? "(unnamed)",
      owner: r.owner,
      size: r.size ?? 0,
    });
    return {
      artists,
      galleries: folders.filter((r) => r.kind === "gallery").map(choice),
      collections: folders.filter((r) => r.kind === "collection").map(choice),
    };
  }

  async item(deviationid: string): Promise<ItemDetail | null> {
    const db = kysely(this.db);
    const d = await db
      .selectFrom("deviations as d")
      .leftJoin("users as u", "u.userid", "d.author_userid")
      .leftJoin("deviation_metadata as m", "m.deviationid", "d.deviationid")
      .leftJoin("deviation_texts as t", "t.deviationid", "d.deviationid")
      .select((eb) => [
        "d.deviationid",
        "d.url",
        "d.title",
        eb.cast<string | null>("d.type", "text").as("type"),
        "d.published_at",
        "u.username as artist",
        "d.author_userid",
        "d.is_mature",
        "d.is_downloadable",
        "d.stats_favourites",
        "d.stats_comments",
        "d.first_seen_at",
        "d.last_seen_at",
        "d.removed_at",
        eb.cast<string | null>("d.removed_reason", "text").as("removed_reason"),
        "m.description",
        "m.tags",
        "m.license",
        "m.stats",
        "t.html",
        "t.excerpt",
      ])
      .where("d.deviationid", "=", deviationid)
      .executeTakeFirst();
    if (!d) return null;
    const [folders, downloads, history] = await Promise.all([
      db
        .selectFrom("folder_members as fm")
        .leftJoin("gallery_folders as g", (join) => join.on("fm.kind", "=", "gallery").onRef("g.folderid", "=", "fm.folderid"))
        .leftJoin("collection_folders as c", (join) => join.on("fm.kind", "=", "collection").onRef("c.folderid", "=", "fm.folderid"))
        .leftJoin("users as u", (join) => join.on((eb) => eb("u.userid", "=", eb.fn.coalesce("g.owner_userid", "c.owner_userid"))))
        .select((eb) => [eb.cast<string>("fm.kind", "text").as("kind"), "fm.folderid", eb.fn.coalesce("g.name", "c.name").as("name"), "u.username as owner"])
        .where("fm.deviationid", "=", deviationid)
        .where("fm.removed_at", "is", null)
        .orderBy(sql.lit(1))
        .orderBy(sql.lit(3))
        .execute(),
      sql<FileColumns & Pick<Row<"downloads">, "reason" | "last_error"> & { stored: boolean }>`
        SELECT ${FILE_COLUMNS}, dl.reason, dl.last_error, (${STORED}) AS stored
        FROM downloads dl WHERE dl.deviationid = ${deviationid}
        ORDER BY (dl.kind = 'original') DESC, dl.updated_at DESC`.execute(db),
      db
        .selectFrom("deviation_history")
        .select((eb) => ["changed_at as changedAt", eb.cast<string>("field", "text").as("field"), "old_value as oldValue", "new_value as newValue"])
        .where("deviationid", "=", deviationid)
        .orderBy("changed_at", "desc")
        .orderBy("id", "desc")
        .limit(200)
        .execute(),
    ]);
    const stored = downloads.rows.filter((r) => r.stored);
    return {
      deviationid: d.deviationid,
      url: d.url,
      title: d.title,
      type: d.type,
      publishedAt: d.published_at,
      artist: d.artist,
      authorUserid: d.author_userid,
      isMature: d.is_mature ?? false,
      isDownloadable: d.is_downloadable,
      favourites: d.stats_favourites,
      comments: d.stats_comments,
      firstSeenAt: d.first_seen_at,
      lastSeenAt: d.last_seen_at,
      removedAt: d.removed_at,
      removedReason: d.removed_reason,
      description: d.description,
      tags: d.tags ?? [],
      license: d.license,
      stats: d.stats as Record<string, unknown> | null,
      text: d.html,
      excerpt: d.excerpt,
      folders,
      files: stored.map(fileOf).filter((f): f is StoredFileRef => f !== null),
      pending: downloads.rows
        .filter((r) => !stored.includes(r))
        .map((r) => ({ kind: r.kind ?? "", status: r.status ?? "", reason: r.reason, lastError: r.last_error })),
      history,
    };
  }

  /** A stored file by its download id (the only handle the browser gets: paths never travel in URLs). */
  async storedFile(downloadId: string): Promise<StoredFileRef | null> {
    if (!/^\d{1,18}$/.test(downloadId)) return null;
    const { rows } = await sql<FileColumns>`SELECT ${FILE_COLUMNS} FROM downloads dl WHERE dl.id = ${downloadId}::bigint AND ${STORED}`.execute(
      kysely(this.db),
    );
    return rows[0] ? fileOf(rows[0]) : null;
  }

  /** The best stored file of each deviation (for search results' thumbnails). */
  async bestFiles(deviationids: readonly string[]): Promise<Map<string, StoredFileRef>> {
    if (deviationids.length === 0) return new Map();
    const { rows } = await sql<Pick<Row<"deviations">, "deviationid"> & FileColumns>`
      SELECT d.deviationid, f.* FROM unnest(${deviationids}::text[]) AS d(deviationid) CROSS JOIN LATERAL (${BEST_FILE}) f`.execute(kysely(this.db));
    const out = new Map<string, StoredFileRef>();
    for (const r of rows) {
      const f = fileOf(r);
      if (f) out.set(r.deviationid, f);
    }
    return out;
  }
}
