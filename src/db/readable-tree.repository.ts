// Where each stored file belongs in the archive's readable tree (src/storage/links.ts turns the rows into links).
import { kysely, sql } from "./kysely.ts";
import type { FolderKind, Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

type Deviation = Row<"deviations">;
type Source = Row<"readable_tree_sources">;
type Link = Row<"readable_tree_links">;
type Username = Row<"users">["username"];
/** A folder's name as the path shows it: the folder's id when it has none. */
type FolderName = NonNullable<Row<"gallery_folders">["name"]> | Row<"gallery_folders">["folderid"];

/** One placement of a stored file: typed from the tables its columns come from (the statement below). */
export type PlacementRow = Pick<Deviation, "deviationid" | "title" | "type"> & {
  /** The stored file: never null, the statement keeps stored paths only. */
  path: NonNullable<Row<"downloads">["path"]>;
  /** The author's username, else their userid. */
  artist: Username | Deviation["author_userid"];
  place: FolderKind | null;
  /** The folder owner's username, else their userid. */
  owner: Username | null;
  /** The gallery folder's path from its root, or the collection's name. */
  folder: FolderName[] | null;
};

/** `AND <column> = ANY(only)`, or nothing when the whole archive is read. */
const among = (column: string, only: readonly string[] | undefined) => (only === undefined ? sql`` : sql`AND ${sql.ref(column)} = ANY(${only}::text[])`);

// The best stored file per deviation (a finished original before a text before a degraded rendition), each
// live gallery membership with the folder's full path, each live collection membership: as CTEs, for the whole
// archive or for the deviations of `only`. The whole archive's memberships are read whole and joined to the files
// once: a filter by the files made the planner guess a few hundred and walk the index once per file, about half the
// time of the statement at 80 000 files.
const placementsFrom = (maxFolderDepth: number, only: readonly string[] | undefined) => sql`
WITH RECURSIVE
files AS (
  SELECT DISTINCT ON (dl.deviationid) dl.deviationid, dl.path
  FROM downloads dl
  WHERE dl.status IN ('done', 'degraded', 'not_downloadable') AND dl.path IS NOT NULL AND dl.path <> ''
    ${among("dl.deviationid", only)}
  ORDER BY dl.deviationid, (dl.status = 'done') DESC,
    CASE dl.kind WHEN 'original' THEN 0 WHEN 'text' THEN 1 ELSE 2 END,
    dl.done_at DESC NULLS LAST, dl.id DESC
),
gallery_paths AS (
  SELECT g.folderid, g.owner_userid, ARRAY[coalesce(g.name, g.folderid)] AS names, 1 AS depth
  FROM gallery_folders g
  WHERE g.removed_at IS NULL
    AND (g.parent_folderid IS NULL OR NOT EXISTS (
      SELECT 1 FROM gallery_folders p WHERE p.folderid = g.parent_folderid AND p.removed_at IS NULL))
  UNION ALL
  -- A folder deeper than maxFolderDepth takes its ancestor's path at that depth. The walk starts at roots, so it
  -- never enters a loop of parents; the depth's bound is a guard all the same.
  SELECT c.folderid, c.owner_userid,
    CASE WHEN gp.depth < ${maxFolderDepth} THEN gp.names || coalesce(c.name, c.folderid) ELSE gp.names END,
    gp.depth + 1
  FROM gallery_folders c
  JOIN gallery_paths gp ON c.parent_folderid = gp.folderid
  WHERE c.removed_at IS NULL AND gp.depth < 10000
),
placed AS (
  SELECT m.deviationid, 'gallery' AS place, gp.owner_userid, gp.names AS folder
  FROM folder_members m
  JOIN gallery_paths gp ON gp.folderid = m.folderid
  WHERE m.kind = 'gallery' AND m.removed_at IS NULL ${among("m.deviationid", only)}
  UNION ALL
  SELECT m.deviationid, 'collection', c.owner_userid, ARRAY[coalesce(c.name, c.folderid)]
  FROM folder_members m
  JOIN collection_folders c ON c.folderid = m.folderid AND c.removed_at IS NULL
  WHERE m.kind = 'collection' AND m.removed_at IS NULL ${among("m.deviationid", only)}
),
rows AS (
  SELECT f.deviationid, f.path, dv.title, dv.type::text AS type,
    coalesce(au.username, dv.author_userid) AS artist,
    p.place, coalesce(ou.username, p.owner_userid) AS owner, p.folder, p.owner_userid
  FROM files f
  JOIN deviations dv ON dv.deviationid = f.deviationid
  LEFT JOIN users au ON au.userid = dv.author_userid
  LEFT JOIN placed p ON p.deviationid = f.deviationid
  LEFT JOIN users ou ON ou.userid = p.owner_userid
)`;

/** A deviation's rows in the order the links are made from them (the first of a repeated link path wins). */
const PLACE_ORDER = sql`place NULLS LAST, owner_userid, folder`;
/** What a deviation's links are made from, as one text: every column of its rows, in PLACE_ORDER. */
const PLACEMENT_TEXT = sql`string_agg(ROW(path, title, type, artist, place, owner, folder)::text, E'\n' ORDER BY ${PLACE_ORDER})`;

const placements = (maxFolderDepth: number) => sql<PlacementRow>`
${placementsFrom(maxFolderDepth, undefined)}
SELECT deviationid, path, title, type, artist, place, owner, folder FROM rows
ORDER BY deviationid, ${PLACE_ORDER}`;

/** One deviation's rows with the fingerprint of all of them (`format` then their md5), read in one snapshot. */
export type FingerprintedRow = PlacementRow & { fingerprint: string };

/** A stored file whose links the tree on disk may not show: its fingerprint now (null: it has no links any more). */
export type TreeChange = Pick<Source, "deviationid"> & { fingerprint: Source["fingerprint"] | null };

const CHANGES = "readable_tree_changes";
/** The fingerprint of a file whose links a write began to change: no placements have it (theirs begin with the format). */
const UNWRITTEN = "";
export class ReadableTreeRepository {
  constructor(private readonly db: Queryable) {}

  /** Every placement of every stored file, gallery folder paths cut at `maxFolderDepth`, by deviation then place. */
  async listPlacements(maxFolderDepth: number): Promise<PlacementRow[]> {
    const { rows } = await placements(maxFolderDepth).execute(kysely(this.db));
    return rows;
  }

  /** The placements of the stored files among `deviationids`, each row with its deviation's fingerprint (see noteChanges). */
  async placementsOf(maxFolderDepth: number, format: string, deviationids: readonly string[]): Promise<FingerprintedRow[]> {
    const { rows } = await sql<FingerprintedRow>`
      ${placementsFrom(maxFolderDepth, deviationids)},
      prints AS (SELECT deviationid, ${format} || md5(${PLACEMENT_TEXT}) AS fingerprint FROM rows GROUP BY deviationid)
      SELECT r.deviationid, r.path, r.title, r.type, r.artist, r.place, r.owner, r.folder, p.fingerprint
      FROM rows r JOIN prints p USING (deviationid)
      ORDER BY r.deviationid, ${PLACE_ORDER}`.execute(kysely(this.db));
    return rows;
  }

  /**
   * Notes, in a table of this connection's session, every stored file whose placements' fingerprint (`format`, then
   * the md5 of its rows) differs from the one the tree was last written from, and every file the tree holds links
   * of that is no longer stored. Read them with nextChanges, then dropChanges. The Queryable must be one connection
   * (a pool client), since the table lives in its session.
   */
  async noteChanges(maxFolderDepth: number, format: string): Promise<void> {
    await this.dropChanges();
    const q = kysely(this.db);
    await sql`
      CREATE TEMP TABLE ${sql.raw(CHANGES)} AS
      ${placementsFrom(maxFolderDepth, undefined)},
      prints AS (SELECT deviationid, ${format} || md5(${PLACEMENT_TEXT}) AS fingerprint FROM rows GROUP BY deviationid)
      SELECT coalesce(p.deviationid, s.deviationid) AS deviationid, p.fingerprint
      FROM prints p FULL JOIN readable_tree_sources s ON s.deviationid = p.deviationid
      WHERE p.fingerprint IS DISTINCT FROM s.fingerprint`.execute(q);
    // nextChanges reads it a page at a time by id: without a key each page scanned and sorted the whole table, about
    // 0.2 s a page at a million changes, so a first write of a million works spent minutes on it alone.
    await sql`ALTER TABLE ${sql.raw(CHANGES)} ADD PRIMARY KEY (deviationid)`.execute(q);
    await sql`ANALYZE ${sql.raw(CHANGES)}`.execute(q);
  }

  /** Up to `limit` noted changes after `after`, by deviation id. */
  async nextChanges(after: string, limit: number): Promise<TreeChange[]> {
    const { rows } = await sql<TreeChange>`
      SELECT deviationid, fingerprint FROM ${sql.raw(CHANGES)} WHERE deviationid > ${after} ORDER BY deviationid LIMIT ${limit}`.execute(kysely(this.db));
    return rows;
  }

  async dropChanges(): Promise<void> {
    await sql`DROP TABLE IF EXISTS ${sql.raw(CHANGES)}`.execute(kysely(this.db));
  }

  /** The links the tree holds for `deviationids`, as the last write recorded them. */
  async linksOf(deviationids: readonly string[]): Promise<string[]> {
    const rows = await kysely(this.db)
      .selectFrom("readable_tree_links")
      .select("link_path")
      .where("deviationid", "in", [...deviationids])
      .execute();
    return rows.map((r) => r.link_path);
  }

  /** Which of `linkPaths` the tree holds, as the last writes recorded. */
  async recorded(linkPaths: readonly string[]): Promise<Set<string>> {
    if (linkPaths.length === 0) return new Set();
    // ANY of one array, not IN: a folder may hold more links than a statement takes parameters.
    const { rows } = await sql<Pick<Link, "link_path">>`
      SELECT link_path FROM readable_tree_links WHERE link_path = ANY(${linkPaths}::text[])`.execute(kysely(this.db));
    return new Set(rows.map((r) => r.link_path));
  }

  /**
   * Records what a write left on disk for `changes`: each file's links replaced by those of `links` that are its
   * own, and its fingerprint set (removed when null). One statement: the record never shows half a write.
   */
  async record(changes: readonly TreeChange[], links: readonly { linkPath: string; deviationid: string }[]): Promise<void> {
    if (changes.length === 0) return;
    const kept = changes.filter((c): c is { deviationid: string; fingerprint: string } => c.fingerprint !== null);
    await sql`
      WITH wanted AS (
        SELECT * FROM unnest(${links.map((l) => l.linkPath)}::text[], ${links.map((l) => l.deviationid)}::text[]) AS w(link_path, deviationid)
      ),
      unlinked AS (
        DELETE FROM readable_tree_links l
        WHERE l.deviationid = ANY(${changes.map((c) => c.deviationid)}::text[])
          AND NOT EXISTS (SELECT 1 FROM wanted w WHERE w.link_path = l.link_path)
      ),
      linked AS (
        INSERT INTO readable_tree_links (link_path, deviationid) SELECT link_path, deviationid FROM wanted
        ON CONFLICT (link_path) DO UPDATE SET deviationid = excluded.deviationid
      ),
      forgotten AS (
        DELETE FROM readable_tree_sources
        WHERE deviationid = ANY(${changes.filter((c) => c.fingerprint === null).map((c) => c.deviationid)}::text[])
      )
      INSERT INTO readable_tree_sources (deviationid, fingerprint)
      SELECT * FROM unnest(${kept.map((c) => c.deviationid)}::text[], ${kept.map((c) => c.fingerprint)}::text[])
      ON CONFLICT (deviationid) DO UPDATE SET fingerprint = excluded.fingerprint`.execute(kysely(this.db));
  }

  /**
   * Notes `links` as possibly on disk before they are written, and the files of `deviationids` as not written (a
   * fingerprint no placements have): a write cut short after placing them leaves them in the record, and the next
   * write makes those files' links again and removes these, even when the files' rows went back to what the record
   * had (a title changed and changed back) or the files are no longer stored.
   */
  async recordIntent(deviationids: readonly string[], links: readonly { linkPath: string; deviationid: string }[]): Promise<void> {
    await sql`
      INSERT INTO readable_tree_sources (deviationid, fingerprint) SELECT unnest(${deviationids}::text[]), ${UNWRITTEN}
      ON CONFLICT (deviationid) DO UPDATE SET fingerprint = excluded.fingerprint`.execute(kysely(this.db));
    for (let i = 0; i < links.length; i += 5000) {
      const slice = links.slice(i, i + 5000).map((l) => ({ link_path: l.linkPath, deviationid: l.deviationid }));
      await kysely(this.db)
        .insertInto("readable_tree_links")
        .values(slice)
        .onConflict((oc) => oc.column("link_path").doNothing())
        .execute();
    }
  }

  /** Forgets what the tree holds and that it was swept: the next write rebuilds it in full. */
  async forget(): Promise<void> {
    await sql`TRUNCATE readable_tree_links, readable_tree_sources, readable_tree_sweeps`.execute(kysely(this.db));
  }

  /**
   * Forgets that the tree was swept, keeping the rest: the next write rebuilds the tree and sweeps it. A database
   * older than the record has no such table, and nothing to forget.
   */
  async forgetSweep(): Promise<void> {
    const { rows } = await sql<{ t: string | null }>`SELECT to_regclass('public.readable_tree_sweeps')::text AS t`.execute(kysely(this.db));
    if (rows[0]?.t) await kysely(this.db).deleteFrom("readable_tree_sweeps").execute();
  }

  /** Whether the tree was never rebuilt in full and swept since the record began (or since forget). */
  async rebuildDue(): Promise<boolean> {
    const row = await kysely(this.db).selectFrom("readable_tree_sweeps").select("id").executeTakeFirst();
    return row === undefined;
  }

  /** Notes that the tree was rebuilt in full and swept at `at`. */
  async markSwept(at: Date): Promise<void> {
    await kysely(this.db)
      .insertInto("readable_tree_sweeps")
      .values({ id: 1, swept_at: at })
      .onConflict((oc) => oc.column("id").doUpdateSet({ swept_at: at }))
      .execute();
  }

  /** The links the tree holds. */
  async linkCount(): Promise<number> {
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM readable_tree_links`.execute(kysely(this.db));
    return rows[0]?.n ?? 0;
  }
}
