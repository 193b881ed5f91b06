// The archive browser's listing as SQL: which works a filter keeps (browseFrom), a page of them by offset or
// keyset cursor (recentItemsStatement), and what a stored file is. src/db/archive-browser.repository.ts runs them.
// Fragments of Kysely's sql tag: values are bound where they are written, never spliced into the text.
import { type Database, kysely, type RawBuilder, sql } from "./kysely.ts";
import type { Row } from "./schema.ts";

export type BrowseFilter = {
  /** Username, any case. */
  artist?: string | undefined;
  /** A gallery folder id. */
  folder?: string | undefined;
  /** A collection folder id. */
  collection?: string | undefined;
  /** Only items whose file is in the archive. */
  archivedOnly?: boolean | undefined;
  /** Only items not archived in full: no original (or, for text, no stored text) done. */
  notFull?: boolean | undefined;
  /** The deviation's type (image, journal, literature, video, other). */
  type?: string | undefined;
  /** One tag, as the service spelled it (deviation_metadata.tags). */
  tag?: string | undefined;
  /** Published at or after this time. */
  from?: Date | undefined;
  /** Published before this time (exclusive). */
  until?: Date | undefined;
  limit: number;
  offset: number;
  /** Keyset paging: the items after this one (the last of the page before), instead of skipping `offset`. */
  after?: BrowseCursor | undefined;
  /** Keyset paging backwards: the `limit` items just before this one (the first of the page after). */
  before?: BrowseCursor | undefined;
};

/** The filters without the page: what monthCounts and a neighbour's lookup take. */
export type BrowseFilters = Omit<BrowseFilter, "limit" | "offset" | "after" | "before">;

/** Where an item sits in the browser's order: its publication time ("-infinity" when undated: last) and id. */
export type BrowseCursor = { key: string; deviationid: string };

type Download = Row<"downloads">;

/** What FILE_COLUMNS reads of a downloads row, named as the browser's rows carry it. */
export type FileColumns = {
  /** The download's id (bigint) as text. */
  download_id: Download["id"];
  path: Download["path"];
  sha256: Download["sha256"];
  mime: Download["mime"];
  status: Download["status"];
  kind: Download["kind"];
  /** The bytes (bigint) as float8: a number. */
  size: number | null;
  width: Download["width"];
  height: Download["height"];
  rendition: Download["rendition"];
  /** degraded_reason, else the reason of a file that is not the original done. */
  why: Download["degraded_reason"] | Download["reason"];
};
/** FILE_COLUMNS of a LEFT JOIN LATERAL (BEST_FILE): every column null when the work has no stored file. */
export type FileRow = { [K in keyof FileColumns]: FileColumns[K] | null };

// A file on disk: an original (done), a free rendition kept while the quota is spent (degraded), or the rendition
// kept of a work that is not downloadable (not_downloadable with a path and a hash).
export const STORED = sql`dl.path IS NOT NULL AND (dl.status IN ('done', 'degraded') OR (dl.status = 'not_downloadable' AND dl.sha256 IS NOT NULL))`;
export const FILE_COLUMNS = sql`dl.id::text AS download_id, dl.path, dl.sha256, dl.mime, dl.status::text AS status, dl.kind::text AS kind, dl.size::float8 AS size,
  dl.width, dl.height, dl.rendition, coalesce(dl.degraded_reason, CASE WHEN dl.status <> 'done' THEN dl.reason END) AS why`;

// The best stored file of a deviation: an original before a rendition, the newest first.
export const BEST_FILE = sql`
  SELECT ${FILE_COLUMNS}
  FROM downloads dl
  WHERE dl.deviationid = d.deviationid AND ${STORED}
  ORDER BY (dl.kind = 'original' AND dl.status = 'done') DESC, (dl.kind = 'original') DESC, dl.updated_at DESC
  LIMIT 1`;

// The browser's order, newest published first and the undated last, as the expression of deviations_browse_idx
// (migration 20261128161000_archive_browse_index) so a page at any depth is read from the index, never sorted.
const BROWSE_KEY = sql`coalesce(d.published_at, '-infinity'::timestamptz)`;

// The browser's listing, FROM and WHERE: an artist, a gallery folder, a collection, stored files only, a type, a tag,
// published from, published before, not archived in full. An artist joins users (their works by the author index,
// then sorted: a few hundred rows); without one and without a type, tag or "not in full" the listing reads
// deviations' own indexed columns only, so a page is an index-only scan of deviations_browse_idx (a date range
// narrows that scan: it is on the index's key). Each filter is bound (null when unset) and folded by the custom plan.
export function browseFrom(f: BrowseFilters): RawBuilder<unknown> {
  const artist = f.artist || null;
  const folder = f.folder || null;
  const collection = f.collection || null;
  const archivedOnly = f.archivedOnly ?? false;
  const type = f.type || null;
  const tag = f.tag || null;
  const from = f.from ?? null;
  const until = f.until ?? null;
  const notFull = f.notFull ?? false;
  return sql`FROM deviations d${artist ? sql` JOIN users u ON u.userid = d.author_userid AND lower(u.username) = lower(${artist}::text)` : sql``}
  WHERE ${artist ? sql`true` : sql`${artist}::text IS NULL`}
    AND (${folder}::text IS NULL OR EXISTS (SELECT 1 FROM folder_members fm WHERE fm.kind = 'gallery' AND fm.folderid = ${folder}::text AND fm.deviationid = d.deviationid AND fm.removed_at IS NULL))
    AND (${collection}::text IS NULL OR EXISTS (SELECT 1 FROM folder_members fm WHERE fm.kind = 'collection' AND fm.folderid = ${collection}::text AND fm.deviationid = d.deviationid AND fm.removed_at IS NULL))
    AND (NOT ${archivedOnly}::boolean OR EXISTS (SELECT 1 FROM downloads dl WHERE dl.deviationid = d.deviationid AND ${STORED}))
    AND (${type}::text IS NULL OR d.type::text = ${type}::text)
    AND (${tag}::text IS NULL OR EXISTS (SELECT 1 FROM deviation_metadata md WHERE md.deviationid = d.deviationid AND md.tags @> ARRAY[${tag}::text]))
    AND (${from}::timestamptz IS NULL OR ${BROWSE_KEY} >= ${from}::timestamptz)
    AND (${until}::timestamptz IS NULL OR ${BROWSE_KEY} < ${until}::timestamptz)
    AND (NOT ${notFull}::boolean OR NOT EXISTS (SELECT 1 FROM downloads dl WHERE dl.deviationid = d.deviationid AND dl.status = 'done' AND dl.kind IN ('original', 'text')))`;
}

/** A card of the grid: the work's columns and its best stored file (FileRow). */
export type CardRow = Pick<Row<"deviations">, "deviationid" | "title" | "type" | "published_at" | "is_mature" | "removed_at" | "removed_reason"> & {
  /** The author's username (null when unknown). */
  artist: Row<"users">["username"] | null;
} & FileRow;

/** The statement of recentItems, one per page. */
export function recentItems(filter: BrowseFilter): RawBuilder<CardRow> {
  // After a cursor: `key <= cursor` is where the index scan starts (the order mixes DESC and ASC, so a row
  // comparison cannot say it), then the items of the cursor's own time up to and with its id are skipped.
  // Before a cursor the same, mirrored, read in the reverse order from the cursor up (the outer ORDER BY puts
  // the page back in the browser's order).
  const after = filter.after;
  const before = after ? undefined : filter.before;
  const afterKey = after?.key ?? null;
  const afterId = after?.deviationid ?? null;
  const beforeKey = before?.key ?? null;
  const beforeId = before?.deviationid ?? null;
  return sql<CardRow>`WITH page AS (
         SELECT d.deviationid, ${BROWSE_KEY} AS k
         ${browseFrom(filter)}
           AND (${afterKey}::timestamptz IS NULL OR (${BROWSE_KEY} <= ${afterKey}::timestamptz
             AND (${BROWSE_KEY} < ${afterKey}::timestamptz OR d.deviationid > ${afterId}::text)))
           AND (${beforeKey}::timestamptz IS NULL OR (${BROWSE_KEY} >= ${beforeKey}::timestamptz
             AND (${BROWSE_KEY} > ${beforeKey}::timestamptz OR d.deviationid < ${beforeId}::text)))
         ORDER BY ${before ? sql`${BROWSE_KEY}, d.deviationid DESC` : sql`${BROWSE_KEY} DESC, d.deviationid`}
         LIMIT ${filter.limit + 1} OFFSET ${after || before ? 0 : filter.offset})
       SELECT d.deviationid, d.title, d.type::text AS type, d.published_at, u.username AS artist, d.is_mature,
         d.removed_at, d.removed_reason::text AS removed_reason, f.*
       FROM page p
       JOIN deviations d ON d.deviationid = p.deviationid
       LEFT JOIN users u ON u.userid = d.author_userid
       LEFT JOIN LATERAL (${BEST_FILE}) f ON true
       ORDER BY p.k DESC, d.deviationid`;
}

/** Compiles without running: statements shown, not executed (EXPLAIN in tests). */
let compiler: Database | undefined;

/** The statement of recentItems as text and values (EXPLAIN reads it in test/medium/hostile-dashboard-load.test.ts). */
export function recentItemsStatement(filter: BrowseFilter): { text: string; values: unknown[] } {
  compiler ??= kysely({ query: () => Promise.reject(new Error("recentItemsStatement only compiles")) });
  const compiled = recentItems(filter).compile(compiler);
  return { text: compiled.sql, values: [...compiled.parameters] };
}
