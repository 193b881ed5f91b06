// The archive browser's listing as SQL: which works a filter keeps (browseFrom), a page of them by offset or
// keyset cursor (recentItemsStatement), and what a stored file is. src/db/archive-browser.repository.ts runs them.

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

// A file on disk: an original (done), a free rendition kept while the quota is spent (degraded), or the rendition
// kept of a work that is not downloadable (not_downloadable with a path and a hash).
export const STORED = `dl.path IS NOT NULL AND (dl.status IN ('done', 'degraded') OR (dl.status = 'not_downloadable' AND dl.sha256 IS NOT NULL))`;
export const FILE_COLUMNS = `dl.id::text AS download_id, dl.path, dl.sha256, dl.mime, dl.status::text AS status, dl.kind::text AS kind, dl.size::float8 AS size,
  dl.width, dl.height, dl.rendition, coalesce(dl.degraded_reason, CASE WHEN dl.status <> 'done' THEN dl.reason END) AS why`;

// The best stored file of a deviation: an original before a rendition, the newest first.
export const BEST_FILE = `
  SELECT ${FILE_COLUMNS}
  FROM downloads dl
  WHERE dl.deviationid = d.deviationid AND ${STORED}
  ORDER BY (dl.kind = 'original' AND dl.status = 'done') DESC, (dl.kind = 'original') DESC, dl.updated_at DESC
  LIMIT 1`;

// The browser's order, newest published first and the undated last, as the expression of deviations_browse_idx
// (migration 20261128161000_archive_browse_index) so a page at any depth is read from the index, never sorted.
const BROWSE_KEY = "coalesce(d.published_at, '-infinity'::timestamptz)";

// The browser's listing, FROM and WHERE: $1 artist, $2 gallery folder, $3 collection, $4 stored files only, and
// from $n on: type, tag, published from, published before, not archived in full. An artist joins users (their
// works by the author index, then sorted: a few hundred rows); without one and without a type, tag or "not in
// full" the listing reads deviations' own indexed columns only, so a page is an index-only scan of
// deviations_browse_idx (a date range narrows that scan: it is on the index's key).
export function browseFrom(artist: boolean, n: number): string {
  return `FROM deviations d${artist ? " JOIN users u ON u.userid = d.author_userid AND lower(u.username) = lower($1::text)" : ""}
  WHERE ${artist ? "true" : "$1::text IS NULL"}
    AND ($2::text IS NULL OR EXISTS (SELECT 1 FROM folder_members fm WHERE fm.kind = 'gallery' AND fm.folderid = $2::text AND fm.deviationid = d.deviationid AND fm.removed_at IS NULL))
    AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM folder_members fm WHERE fm.kind = 'collection' AND fm.folderid = $3::text AND fm.deviationid = d.deviationid AND fm.removed_at IS NULL))
    AND (NOT $4::boolean OR EXISTS (SELECT 1 FROM downloads dl WHERE dl.deviationid = d.deviationid AND ${STORED}))
    AND ($${n}::text IS NULL OR d.type::text = $${n}::text)
    AND ($${n + 1}::text IS NULL OR EXISTS (SELECT 1 FROM deviation_metadata md WHERE md.deviationid = d.deviationid AND md.tags @> ARRAY[$${n + 1}::text]))
    AND ($${n + 2}::timestamptz IS NULL OR ${BROWSE_KEY} >= $${n + 2}::timestamptz)
    AND ($${n + 3}::timestamptz IS NULL OR ${BROWSE_KEY} < $${n + 3}::timestamptz)
    AND (NOT $${n + 4}::boolean OR NOT EXISTS (SELECT 1 FROM downloads dl WHERE dl.deviationid = d.deviationid AND dl.status = 'done' AND dl.kind IN ('original', 'text')))`;
}

/** The values of browseFrom's parameters from $n on. */
export function filterValues(f: BrowseFilters): unknown[] {
  return [f.type || null, f.tag || null, f.from ?? null, f.until ?? null, f.notFull ?? false];
}

/** The statement of recentItems (EXPLAIN reads it in test/medium/hostile-dashboard-load.test.ts). */
export function recentItemsStatement(filter: BrowseFilter): { text: string; values: unknown[] } {
  // After a cursor: `key <= cursor` is where the index scan starts (the order mixes DESC and ASC, so a row
  // comparison cannot say it), then the items of the cursor's own time up to and with its id are skipped.
  // Before a cursor the same, mirrored, read in the reverse order from the cursor up (the outer ORDER BY puts
  // the page back in the browser's order).
  const after = filter.after;
  const before = after ? undefined : filter.before;
  return {
    text: `WITH page AS (
         SELECT d.deviationid, ${BROWSE_KEY} AS k
         ${browseFrom(Boolean(filter.artist), 11)}
           AND ($7::timestamptz IS NULL OR (${BROWSE_KEY} <= $7::timestamptz
             AND (${BROWSE_KEY} < $7::timestamptz OR d.deviationid > $8::text)))
           AND ($9::timestamptz IS NULL OR (${BROWSE_KEY} >= $9::timestamptz
             AND (${BROWSE_KEY} > $9::timestamptz OR d.deviationid < $10::text)))
         ORDER BY ${before ? `${BROWSE_KEY}, d.deviationid DESC` : `${BROWSE_KEY} DESC, d.deviationid`}
         LIMIT $5 OFFSET $6)
       SELECT d.deviationid, d.title, d.type::text AS type, d.published_at, u.username AS artist, d.is_mature,
         d.removed_at, d.removed_reason::text AS removed_reason, f.*
       FROM page p
       JOIN deviations d ON d.deviationid = p.deviationid
       LEFT JOIN users u ON u.userid = d.author_userid
       LEFT JOIN LATERAL (${BEST_FILE}) f ON true
       ORDER BY p.k DESC, d.deviationid`,
    values: [
      filter.artist || null,
      filter.folder || null,
      filter.collection || null,
      filter.archivedOnly ?? false,
      filter.limit + 1,
      after || before ? 0 : filter.offset,
      after?.key ?? null,
      after?.deviationid ?? null,
      before?.key ?? null,
      before?.deviationid ?? null,
      ...filterValues(filter),
    ],
  };
}
