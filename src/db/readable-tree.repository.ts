// Where each stored file belongs in the archive's readable tree (src/storage/links.ts turns the rows into links).
import { kysely, sql } from "./kysely.ts";
import type { FolderKind, Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

type Deviation = Row<"deviations">;
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

// One query: the best stored file per deviation (a finished original before a text before a degraded
// rendition), each live gallery membership with the folder's full path, each live collection membership.
const placements = (maxFolderDepth: number) => sql<PlacementRow>`
WITH RECURSIVE
files AS (
  SELECT DISTINCT ON (dl.deviationid) dl.deviationid, dl.path
  FROM downloads dl
  WHERE dl.status IN ('done', 'degraded', 'not_downloadable') AND dl.path IS NOT NULL AND dl.path <> ''
  ORDER BY dl.deviationid, (dl.status = 'done') DESC,
    CASE dl.kind WHEN 'original' THEN 0 WHEN 'text' THEN 1 ELSE 2 END,
    dl.done_at DESC NULLS LAST, dl.id DESC
),
gallery_paths AS (
  SELECT g.folderid, g.owner_userid, ARRAY[coalesce(g.name, g.folderid)] AS names
  FROM gallery_folders g
  WHERE g.removed_at IS NULL
    AND (g.parent_folderid IS NULL OR NOT EXISTS (
      SELECT 1 FROM gallery_folders p WHERE p.folderid = g.parent_folderid AND p.removed_at IS NULL))
  UNION ALL
  SELECT c.folderid, c.owner_userid, gp.names || coalesce(c.name, c.folderid)
  FROM gallery_folders c
  JOIN gallery_paths gp ON c.parent_folderid = gp.folderid
  WHERE c.removed_at IS NULL AND cardinality(gp.names) < ${maxFolderDepth}
),
placed AS (
  SELECT m.deviationid, 'gallery' AS place, gp.owner_userid, gp.names AS folder
  FROM folder_members m
  JOIN gallery_paths gp ON gp.folderid = m.folderid
  WHERE m.kind = 'gallery' AND m.removed_at IS NULL AND m.deviationid IN (SELECT deviationid FROM files)
  UNION ALL
  SELECT m.deviationid, 'collection', c.owner_userid, ARRAY[coalesce(c.name, c.folderid)]
  FROM folder_members m
  JOIN collection_folders c ON c.folderid = m.folderid AND c.removed_at IS NULL
  WHERE m.kind = 'collection' AND m.removed_at IS NULL AND m.deviationid IN (SELECT deviationid FROM files)
)
SELECT f.deviationid, f.path, dv.title, dv.type::text AS type,
  coalesce(au.username, dv.author_userid) AS artist,
  p.place, coalesce(ou.username, p.owner_userid) AS owner, p.folder
FROM files f
JOIN deviations dv ON dv.deviationid = f.deviationid
LEFT JOIN users au ON au.userid = dv.author_userid
LEFT JOIN placed p ON p.deviationid = f.deviationid
LEFT JOIN users ou ON ou.userid = p.owner_userid
ORDER BY f.deviationid, p.place NULLS LAST, p.owner_userid, p.folder`;

export class ReadableTreeRepository {
  constructor(private readonly db: Queryable) {}

  /** Every placement of every stored file, gallery folder paths cut at `maxFolderDepth`, by deviation then place. */
  async listPlacements(maxFolderDepth: number): Promise<PlacementRow[]> {
    const { rows } = await placements(maxFolderDepth).execute(kysely(this.db));
    return rows;
  }
}
