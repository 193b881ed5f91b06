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
/** pg_advisory_lock's key for a write of the local tree: "dvtree" as an integer. */
const TREE_WRITE_LOCK = 0x647674726565n;
/** The ids of the marks a write read (takeMarks), in a table of its session: only these are removed once it is done. */
const TAKEN = "readable_tree_taken_marks";
/**
 * The works the taken marks reach (migration 20261130090322_readable_tree_marks): a work's own mark; a user's works and
 * the members of their folders and collections; a gallery folder's members and those of every folder beneath it
 * (its children's paths begin with its name, or start at them when it is gone); a collection's members.
 */
const MARKED_WORKS = sql<{ deviationid: string }>`
WITH RECURSIVE
marks AS (SELECT m.kind, m.key FROM readable_tree_marks m JOIN ${sql.raw(TAKEN)} t USING (id)),
galleries AS (
  SELECT key AS folderid FROM marks WHERE kind = 'gallery'
  UNION
  SELECT g.folderid FROM gallery_folders g JOIN galleries p ON g.parent_folderid = p.folderid
)
SELECT key AS deviationid FROM marks WHERE kind = 'work'
UNION SELECT d.deviationid FROM deviations d JOIN marks m ON m.kind = 'user' AND d.author_userid = m.key
UNION SELECT fm.deviationid FROM folder_members fm JOIN galleries g ON fm.kind = 'gallery' AND fm.folderid = g.folderid
UNION SELECT fm.deviationid FROM folder_members fm JOIN marks m ON m.kind = 'collection' AND fm.kind = 'collection' AND fm.folderid = m.key
UNION SELECT fm.deviationid FROM folder_members fm
  JOIN gallery_folders g ON fm.kind = 'gallery' AND fm.folderid = g.folderid JOIN marks m ON m.kind = 'user' AND g.owner_userid = m.key
UNION SELECT fm.deviationid FROM folder_members fm
  JOIN collection_folders c ON fm.kind = 'collection' AND fm.folderid = c.folderid JOIN marks m ON m.kind = 'user' AND c.owner_userid = m.key`;
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
   * of that is no longer stored: among the works of `only` (markedWorks), or of the whole archive without it. Read them with nextChanges, then dropChanges. The Queryable must be one connection
   * (a pool client), since the table lives in its session.
   */
  async noteChanges(maxFolderDepth: number, format: string, only?: readonly string[]): Promise<void> {
    await this.dropChanges();
    const q = kysely(this.db);
    const sources = only === undefined ? sql`readable_tree_sources` : sql`(SELECT * FROM readable_tree_sources WHERE deviationid = ANY(${only}::text[]))`;
    await sql`
      CREATE TEMP TABLE ${sql.raw(CHANGES)} AS
      ${placementsFrom(maxFolderDepth, only)},
      prints AS (SELECT deviationid, ${format} || md5(${PLACEMENT_TEXT}) AS fingerprint FROM rows GROUP BY deviationid)
      SELECT coalesce(p.deviationid, s.deviationid) AS deviationid, p.fingerprint
      FROM prints p FULL JOIN ${sources} s ON s.deviationid = p.deviationid
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

  /**
   * Notes, in a table of this connection's session, the marks written so far (what the mirror's triggers noted since
   * the tree was last written): a write compares the works they reach (markedWorks), then removes these
   * (dropTakenMarks). Marks of writers that commit after this statement stay for the next write, since the rows they
   * changed may not be in what this write reads. Returns how many it took, and whether one is a TRUNCATE's (migration
   * 20261130090322_readable_tree_marks): then the tree is to be rebuilt.
   */
  async takeMarks(): Promise<{ marks: number; truncated: boolean }> {
    await this.dropTaken();
    const q = kysely(this.db);
    await sql`CREATE TEMP TABLE ${sql.raw(TAKEN)} AS SELECT id FROM readable_tree_marks`.execute(q);
    await sql`ALTER TABLE ${sql.raw(TAKEN)} ADD PRIMARY KEY (id)`.execute(q);
    const { rows } = await sql<{ marks: number; truncated: boolean }>`
      SELECT count(*)::int AS marks, coalesce(bool_or(m.kind = 'truncate'), false) AS truncated
      FROM readable_tree_marks m JOIN ${sql.raw(TAKEN)} t USING (id)`.execute(q);
    return rows[0] ?? { marks: 0, truncated: false };
  }

  /** The works the taken marks reach, by deviation id (MARKED_WORKS). */
  async markedWorks(): Promise<string[]> {
    const { rows } = await MARKED_WORKS.execute(kysely(this.db));
    return rows.map((r) => r.deviationid);
  }

  /** Removes the taken marks: their works' links are on disk and recorded. */
  async dropTakenMarks(): Promise<void> {
    await sql`DELETE FROM readable_tree_marks WHERE id IN (SELECT id FROM ${sql.raw(TAKEN)})`.execute(kysely(this.db));
  }

  async dropTaken(): Promise<void> {
    await sql`DROP TABLE IF EXISTS ${sql.raw(TAKEN)}`.execute(kysely(this.db));
  }

  /**
   * Removes every mark (a bucket's index is made from every placement, so they tell it nothing) and, in the same
   * statement, the note that a local tree's files were all compared: should the store become that local folder again
   * (`dvault storage migrate` back), its next write compares every file, since the changes meanwhile left no mark.
   */
  async clearMarks(): Promise<void> {
    await sql`
      WITH cleared AS (DELETE FROM readable_tree_marks)
      UPDATE readable_tree_sweeps SET marked_format = NULL`.execute(kysely(this.db));
  }

  /**
   * Holds this session's write of the tree against any other, in PostgreSQL (released by unlockWrites, or with the
   * connection): a write that began when another process's lock in the coordination store had expired (a stall, a
   * restart of Redis) waits here, so the two never interleave their takes and removals of marks.
   */
  async lockWrites(): Promise<void> {
    await sql`SELECT pg_advisory_lock(${TREE_WRITE_LOCK.toString()}::bigint)`.execute(kysely(this.db));
  }

  async unlockWrites(): Promise<void> {
    await sql`SELECT pg_advisory_unlock(${TREE_WRITE_LOCK.toString()}::bigint)`.execute(kysely(this.db));
  }

  /**
   * The link format (and folder depth) every stored file was last compared under, in a write that read them all:
   * null when never (an archive from before the marks, or no sweep yet). Marks note changed rows, not a new format.
   */
  async comparedFormat(): Promise<string | null> {
    const row = await kysely(this.db).selectFrom("readable_tree_sweeps").select("marked_format").executeTakeFirst();
    return row?.marked_format ?? null;
  }

  /** Notes that every stored file was compared under `format` (kept with the sweep's row; none, nothing kept). */
  async markCompared(format: string): Promise<void> {
    await kysely(this.db).updateTable("readable_tree_sweeps").set({ marked_format: format }).execute();
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
