// The readable tree, regenerated from the database's placements: one link per place a stored file belongs to —
// by-user/<owner>/<gallery folder path>/, by-user/<owner>/collections/<folder>/, by-user/<artist>/journals/,
// and by-user/<artist>/unfiled/ for files in no known folder — all named "<title> [<deviationid>].<ext>".
import path from "node:path";
import { ORIGINALS_DIR, READABLE_DIR } from "./layout.ts";
import type { ReadableLink } from "./readable-tree.ts";
import { readableName, sanitizeComponent, safeExtension } from "./sanitize.ts";

/** One place a stored file belongs to, as src/db/readable-tree.repository.ts reads them (place null: in no folder). */
export type PlacementRow = {
  deviationid: string;
  path: string;
  title: string | null;
  type: string | null;
  artist: string | null;
  place: "gallery" | "collection" | null;
  owner: string | null;
  folder: string[] | null;
};

/**
 * The version of the links buildReadableLinks makes from a file's rows, the first part of the fingerprint the tree's
 * record keeps of them (src/db/readable-tree.repository.ts): change it with any change to the names or places below,
 * and every file's links are made again on the next write.
 */
export const READABLE_LINKS_FORMAT = "links-1:";

/** A link of the tree with the deviation whose stored file it stands for. */
export type PlacedLink = ReadableLink & { deviationid: string };

/** Nested gallery folders deeper than this are flattened into their ancestor at this depth (the reader of the rows applies it). */
export const MAX_FOLDER_DEPTH = 16;

/**
 * The blob store key (blob-store.ts) of a stored file's path as the database holds it — relative to the archive
 * root, or absolute inside it in rows written before paths were relative — or undefined when it is not under
 * originals/ (a row pointing anywhere else is never read).
 */
export function originalKeyOf(stored: string, archiveRoot: string): string | undefined {
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
 * referenced from 3 folders and 2 collections gives 5 links to one target. Deterministic order, given the
 * rows in the order the repository returns them (by deviation, then place).
 */
export function buildReadableLinks(rows: readonly PlacementRow[], archiveRoot: string): PlacedLink[] {
  const byDeviation = new Map<string, PlacementRow[]>();
  for (const row of rows) {
    const group = byDeviation.get(row.deviationid);
    if (group) group.push(row);
    else byDeviation.set(row.deviationid, [row]);
  }
  const links: PlacedLink[] = [];
  const seen = new Set<string>();
  const add = (deviationid: string, segments: string[], target: string) => {
    const linkPath = [READABLE_DIR, ...segments].join("/");
    if (seen.has(linkPath)) return;
    seen.add(linkPath);
    links.push({ linkPath, target, deviationid });
  };
  for (const [deviationid, group] of byDeviation) {
    const first = group[0] as PlacementRow;
    const target = originalKeyOf(first.path, archiveRoot);
    if (!target) continue;
    const name = readableName({ title: first.title ?? "", deviationid, ext: extOf(target) });
    const artist = sanitizeComponent(first.artist ?? "unknown", { fallback: "unknown" });
    let placed = false;
    for (const row of group) {
      if (row.place === null || row.folder === null) continue;
      const owner = row.owner === null ? artist : sanitizeComponent(row.owner, { fallback: "unknown" });
      const folder = row.folder.map((f) => sanitizeComponent(f, { fallback: "folder" }));
      add(deviationid, row.place === "gallery" ? [owner, ...folder, name] : [owner, "collections", ...folder, name], target);
      placed = true;
    }
    if (first.type === "journal") add(deviationid, [artist, "journals", name], target);
    else if (!placed) add(deviationid, [artist, "unfiled", name], target);
  }
  return links;
}
