// What the dashboard's archive browser reads: recent items with their stored file, the filters' choices,
// one item with its metadata, history and files, and a stored file by its download id. Read-only.
import {
  BEST_FILE,
  type BrowseCursor,
  type BrowseFilter,
  type BrowseFilters,
  browseFrom,
  FILE_COLUMNS,
  filterValues,
  recentItemsStatement,
  STORED,
} from "./archive-browse-statement.ts";
import type { Queryable } from "./with-transaction.ts";

export { BEST_FILE, type BrowseCursor, type BrowseFilter, type BrowseFilters, recentItemsStatement };

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

type CardRow = {
  deviationid: string;
  title: string | null;
  type: string | null;
  published_at: Date | null;
  artist: string | null;
  is_mature: boolean | null;
  removed_at: Date | null;
  removed_reason: string | null;
  download_id: string | null;
  path: string | null;
  sha256: string | null;
  mime: string | null;
  status: string | null;
  kind: string | null;
  size: number | null;
  width: number | null;
  height: number | null;
  rendition: string | null;
  why: string | null;
};

export type FileRow = Pick<CardRow, "download_id" | "path" | "sha256" | "mime" | "status" | "kind" | "size" | "width" | "height" | "rendition" | "why">;

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
    const { text, values } = recentItemsStatement(filter);
    const { rows } = await this.db.query<CardRow>(text, values);
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
  async monthCounts(filter: BrowseFilters): Promise<Array<{ month: string | null; items: number }>> {
    const { rows } = await this.db.query<{ month: string | null; items: number }>(
      // Grouped by the month's timestamp and named after: to_char on every row cost more than the count.
      `SELECT to_char(m, 'YYYY-MM') AS month, items FROM (
         SELECT date_trunc('month', d.published_at AT TIME ZONE 'UTC') AS m, count(*)::int AS items
         ${browseFrom(Boolean(filter.artist), 5)}
         GROUP BY 1) x
       ORDER BY m DESC NULLS LAST`,
      [filter.artist || null, filter.folder || null, filter.collection || null, filter.archivedOnly ?? false, ...filterValues(filter)],
    );
    return rows;
  }

  /** The choices of the browser's filters: artists with the most items, every live gallery and collection folder. */
  async filterChoices(): Promise<FilterChoices> {
    const [artists, folders] = await Promise.all([
      this.db.query<{ username: string; items: number }>(
        `SELECT u.username, count(*)::int AS items FROM deviations d JOIN users u ON u.userid = d.author_userid
         GROUP BY u.username ORDER BY items DESC, lower(u.username) LIMIT 200`,
      ),
      this.db.query<{ kind: string; folderid: string; name: string | null; owner: string | null; size: number; parent: string | null }>(
        `SELECT 'gallery' AS kind, f.folderid, f.name, u.username AS owner, f.parent_folderid AS parent,
           (SELECT count(*)::int FROM folder_members m WHERE m.kind = 'gallery' AND m.folderid = f.folderid AND m.removed_at IS NULL) AS size
         FROM gallery_folders f LEFT JOIN users u ON u.userid = f.owner_userid WHERE f.removed_at IS NULL
         UNION ALL
         SELECT 'collection', f.folderid, f.name, u.username, NULL::text,
           (SELECT count(*)::int FROM folder_members m WHERE m.kind = 'collection' AND m.folderid = f.folderid AND m.removed_at IS NULL)
         FROM collection_folders f LEFT JOIN users u ON u.userid = f.owner_userid WHERE f.removed_at IS NULL
         ORDER BY 4, 3, 2`,
      ),
    ]);
    const choice = (r: { folderid: string; name: string | null; owner: string | null; size: number; parent: string | null }): FolderChoice => ({
      folderid: r.folderid,
      parent: r.parent,
      name: r.name ?? "(unnamed)",
      owner: r.owner,
      size: r.size,
    });
    return {
      artists: artists.rows,
      galleries: folders.rows.filter((r) => r.kind === "gallery").map(choice),
      collections: folders.rows.filter((r) => r.kind === "collection").map(choice),
    };
  }

  async item(deviationid: string): Promise<ItemDetail | null> {
    const { rows } = await this.db.query<{
      deviationid: string;
      url: string | null;
      title: string | null;
      type: string | null;
      published_at: Date | null;
      artist: string | null;
      author_userid: string | null;
      is_mature: boolean | null;
      is_downloadable: boolean | null;
      stats_favourites: number | null;
      stats_comments: number | null;
      first_seen_at: Date;
      last_seen_at: Date;
      removed_at: Date | null;
      removed_reason: string | null;
      description: string | null;
      tags: string[] | null;
      license: string | null;
      stats: Record<string, unknown> | null;
      html: string | null;
      excerpt: string | null;
    }>(
      `SELECT d.deviationid, d.url, d.title, d.type::text AS type, d.published_at, u.username AS artist, d.author_userid,
         d.is_mature, d.is_downloadable, d.stats_favourites, d.stats_comments, d.first_seen_at, d.last_seen_at,
         d.removed_at, d.removed_reason::text AS removed_reason, m.description, m.tags, m.license, m.stats, t.html, t.excerpt
       FROM deviations d
       LEFT JOIN users u ON u.userid = d.author_userid
       LEFT JOIN deviation_metadata m ON m.deviationid = d.deviationid
       LEFT JOIN deviation_texts t ON t.deviationid = d.deviationid
       WHERE d.deviationid = $1`,
      [deviationid],
    );
    const d = rows[0];
    if (!d) return null;
    const [folders, downloads, history] = await Promise.all([
      this.db.query<{ kind: string; folderid: string; name: string | null; owner: string | null }>(
        `SELECT fm.kind::text AS kind, fm.folderid, coalesce(g.name, c.name) AS name, u.username AS owner
         FROM folder_members fm
         LEFT JOIN gallery_folders g ON fm.kind = 'gallery' AND g.folderid = fm.folderid
         LEFT JOIN collection_folders c ON fm.kind = 'collection' AND c.folderid = fm.folderid
         LEFT JOIN users u ON u.userid = coalesce(g.owner_userid, c.owner_userid)
         WHERE fm.deviationid = $1 AND fm.removed_at IS NULL
         ORDER BY 1, 3`,
        [deviationid],
      ),
      this.db.query<CardRow & { reason: string | null; last_error: string | null; stored: boolean }>(
        `SELECT ${FILE_COLUMNS}, dl.reason, dl.last_error, (${STORED}) AS stored
         FROM downloads dl WHERE dl.deviationid = $1
         ORDER BY (dl.kind = 'original') DESC, dl.updated_at DESC`,
        [deviationid],
      ),
      this.db.query<{ changed_at: Date; field: string; old_value: unknown; new_value: unknown }>(
        `SELECT changed_at, field::text AS field, old_value, new_value FROM deviation_history WHERE deviationid = $1 ORDER BY changed_at DESC, id DESC LIMIT 200`,
        [deviationid],
      ),
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
      stats: d.stats,
      text: d.html,
      excerpt: d.excerpt,
      folders: folders.rows,
      files: stored.map(fileOf).filter((f): f is StoredFileRef => f !== null),
      pending: downloads.rows
        .filter((r) => !stored.includes(r))
        .map((r) => ({ kind: r.kind ?? "", status: r.status ?? "", reason: r.reason, lastError: r.last_error })),
      history: history.rows.map((h) => ({ changedAt: h.changed_at, field: h.field, oldValue: h.old_value, newValue: h.new_value })),
    };
  }

  /** A stored file by its download id (the only handle the browser gets: paths never travel in URLs). */
  async storedFile(downloadId: string): Promise<StoredFileRef | null> {
    if (!/^\d{1,18}$/.test(downloadId)) return null;
    const { rows } = await this.db.query<CardRow>(`SELECT ${FILE_COLUMNS} FROM downloads dl WHERE dl.id = $1::bigint AND ${STORED}`, [downloadId]);
    return rows[0] ? fileOf(rows[0]) : null;
  }

  /** The best stored file of each deviation (for search results' thumbnails). */
  async bestFiles(deviationids: readonly string[]): Promise<Map<string, StoredFileRef>> {
    if (deviationids.length === 0) return new Map();
    const { rows } = await this.db.query<CardRow>(`SELECT d.deviationid, f.* FROM unnest($1::text[]) AS d(deviationid) CROSS JOIN LATERAL (${BEST_FILE}) f`, [
      deviationids,
    ]);
    const out = new Map<string, StoredFileRef>();
    for (const r of rows) {
      const f = fileOf(r);
      if (f) out.set(r.deviationid, f);
    }
    return out;
  }
}
