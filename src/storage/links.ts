// The readable tree, regenerated from the database: one link per place a stored file belongs to —
// by-user/<owner>/<gallery folder path>/, by-user/<owner>/collections/<folder>/, by-user/<artist>/journals/,
// and by-user/<artist>/unfiled/ for files in no known folder — all named "<title> [<deviationid>].<ext>".
import path from "node:path";
import type { Queryable } from "../db/with-transaction.ts";
import { ORIGINALS_DIR, READABLE_DIR, type ReadableLink } from "./archive.ts";
import { readableName, sanitizeComponent, safeExtension } from "./sanitize.ts";

type PlacementRow = {
  deviationid: string;
  path: string;
  title: string | null;
  type: string | null;
  artist: string | null;
  place: "gallery" | "collection" | null;
  owner: string | null;
  folder: string[] | null;
};

/** Nested gallery folders deeper than this are flattened into their ancestor at this depth. */
const MAX_FOLDER_DEPTH = 16;

// One query: the best stored file per deviation (a finished original before a text before a degraded
// rendition), each live gallery membership with the folder's full path, each live collection membership.
const PLACEMENTS = `
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
  WHERE c.removed_at IS NULL AND cardinality(gp.names) < $1
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

/** The stored file's path relative to the archive root, or undefined when it is not under originals/. */
function relativeTarget(stored: string, archiveRoot: string): string | undefined {
  let rel = stored.replaceAll("\\", "/");
  if (path.isAbsolute(stored)) {
    const r = path.relative(path.resolve(archiveRoot), stored);
    if (r.startsWith("..") || path.isAbsolute(r)) return undefined;
    rel = r.split(path.sep).join("/");
  }
  const segments = rel.split("/");
  if (segments[0] !== ORIGINALS_DIR || segments.some((s) => s === "" || s === "." || s === "..")) return undefined;
  return rel;
}

function extOf(rel: string): string {
  const base = rel.slice(rel.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  return (dot > 0 ? safeExtension(base.slice(dot + 1)) : undefined) ?? "bin";
}

/**
 * The link list for Archive.writeLinks: every stored file (downloads done or degraded) once per gallery
 * folder and collection holding it, journals under journals/, files in no folder under unfiled/. A file
 * referenced from 3 folders and 2 collections gives 5 links to one target. Deterministic order.
 */
export async function buildReadableLinks(db: Queryable, archiveRoot: string): Promise<ReadableLink[]> {
  const { rows } = await db.query<PlacementRow>(PLACEMENTS, [MAX_FOLDER_DEPTH]);
  const byDeviation = new Map<string, PlacementRow[]>();
  for (const row of rows) {
    const group = byDeviation.get(row.deviationid);
    if (group) group.push(row);
    else byDeviation.set(row.deviationid, [row]);
  }
  const links: ReadableLink[] = [];
  const seen = new Set<string>();
  const add = (segments: string[], target: string) => {
    const linkPath = [READABLE_DIR, ...segments].join("/");
    if (seen.has(linkPath)) return;
    seen.add(linkPath);
    links.push({ linkPath, target });
  };
  for (const [deviationid, group] of byDeviation) {
    const first = group[0] as PlacementRow;
    const target = relativeTarget(first.path, archiveRoot);
    if (!target) continue;
    const name = readableName({ title: first.title ?? "", deviationid, ext: extOf(target) });
    const artist = sanitizeComponent(first.artist ?? "unknown", { fallback: "unknown" });
    let placed = false;
    for (const row of group) {
      if (row.place === null || row.folder === null) continue;
      const owner = row.owner === null ? artist : sanitizeComponent(row.owner, { fallback: "unknown" });
      const folder = row.folder.map((f) => sanitizeComponent(f, { fallback: "folder" }));
      add(row.place === "gallery" ? [owner, ...folder, name] : [owner, "collections", ...folder, name], target);
      placed = true;
    }
    if (first.type === "journal") add([artist, "journals", name], target);
    else if (!placed) add([artist, "unfiled", name], target);
  }
  return links;
}
