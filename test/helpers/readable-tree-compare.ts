// The readable tree on disk against a full write from the database, and rows made by hand, for the marks' tests.
import fs from "node:fs/promises";
import path from "node:path";
import { expect } from "vitest";
import { ReadableTreeRepository } from "../../src/db/readable-tree.repository.ts";
import { regenerateReadableLinks } from "../../src/downloads/readable-links.ts";
import type { DownloadHarness } from "./download-harness.ts";

let h: DownloadHarness;
export function useHarness(harness: DownloadHarness): void {
  h = harness;
}

/** Every link under `archiveDir`'s by-user/, relative to the archive, with its target relative to the archive. */
export async function linksUnder(archiveDir: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const walk = async (dir: string): Promise<void> => {
    for (const e of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const abs = path.join(dir, e.name);
      if (e.isDirectory()) await walk(abs);
      else if (e.isSymbolicLink()) found.set(path.relative(archiveDir, abs), path.relative(archiveDir, path.resolve(dir, await fs.readlink(abs))));
    }
  };
  await walk(path.join(archiveDir, "by-user"));
  return found;
}

export function tree(): Promise<Map<string, string>> {
  return linksUnder(h.archiveDir);
}

export async function expected(): Promise<Map<string, string>> {
  const { buildReadableLinks, MAX_FOLDER_DEPTH } = await import("../../src/storage/links.ts");
  const links = buildReadableLinks(await new ReadableTreeRepository(h.pool).listPlacements(MAX_FOLDER_DEPTH), h.archiveDir);
  return new Map(links.map((l) => [l.linkPath, l.target]));
}

export async function write(): Promise<{ links: number; written: number; removed: number }> {
  const r = await regenerateReadableLinks(h.deps);
  if ("busy" in r) throw new Error("the links' lock was held");
  return r;
}

export async function marks(): Promise<string[]> {
  const { rows } = await h.pool.query<{ mark: string }>("SELECT kind || ':' || key AS mark FROM readable_tree_marks ORDER BY id");
  return rows.map((r) => r.mark);
}

/** The links under by-user/ that differ from a full write: [missing or wrong, extra]. */
export async function diff(): Promise<{ missingOrWrong: string[]; extra: string[] }> {
  const t = await tree();
  const e = await expected();
  return {
    missingOrWrong: [...e].filter(([l, target]) => t.get(l) !== target).map(([l, target]) => `${l} -> ${target} (tree: ${t.get(l) ?? "none"})`),
    extra: [...t.keys()].filter((l) => !e.has(l)),
  };
}

/** A write through the marks (the format is noted, so not a whole comparison), then the tree equals a full write's. */
export async function writeAndCompare(step: string): Promise<void> {
  const record = new ReadableTreeRepository(h.pool);
  expect(await record.comparedFormat(), `${step}: the write compares through the marks`).not.toBeNull();
  expect(await record.rebuildDue(), `${step}: no rebuild due`).toBe(false);
  await write();
  expect(await diff(), step).toEqual({ missingOrWrong: [], extra: [] });
  expect(await marks(), `${step}: marks left`).toEqual([]);
}

export const q = (text: string, values: unknown[] = []) => h.pool.query(text, values);
let n = 0;
/** A fresh id for this file's rows. */
export const fresh = (p: string) => `red-${p}-${++n}`;

export async function user(username?: string): Promise<string> {
  const id = fresh("u");
  await q("INSERT INTO users (userid, username) VALUES ($1, $2)", [id, username ?? `${id}-name`]);
  return id;
}
export async function work(author: string | null, opts: { title?: string; type?: string } = {}): Promise<string> {
  const id = fresh("w").toUpperCase();
  await q("INSERT INTO deviations (deviationid, title, author_userid, type, raw) VALUES ($1, $2, $3, $4::deviation_type, '{}')", [
    id,
    opts.title ?? `title ${id}`,
    author,
    opts.type ?? "image",
  ]);
  await q("INSERT INTO downloads (deviationid, kind, status, path, sha256, done_at) VALUES ($1, 'original', 'done', $2, 'abcd', now())", [
    id,
    `originals/re/d0/${id}.jpg`,
  ]);
  return id;
}
export async function gallery(owner: string, parent: string | null, name: string): Promise<string> {
  const id = fresh("g");
  await q("INSERT INTO gallery_folders (folderid, owner_userid, parent_folderid, name) VALUES ($1, $2, $3, $4)", [id, owner, parent, name]);
  return id;
}
export async function collection(owner: string, name: string): Promise<string> {
  const id = fresh("c");
  await q("INSERT INTO collection_folders (folderid, owner_userid, name) VALUES ($1, $2, $3)", [id, owner, name]);
  return id;
}
export async function member(kind: "gallery" | "collection", folderid: string, deviationid: string): Promise<void> {
  await q("INSERT INTO folder_members (kind, folderid, deviationid) VALUES ($1::folder_kind, $2, $3)", [kind, folderid, deviationid]);
}

/** A harness synced and downloaded, its tree written twice (the second through the marks): the state each red test starts from. */
export async function startMarksHarness(): Promise<DownloadHarness> {
  const { createDownloadHarness } = await import("./download-harness.ts");
  const { collectionsSource } = await import("../../src/sync/sources/collections.ts");
  const { gallerySource } = await import("../../src/sync/sources/gallery.ts");
  const harness = await createDownloadHarness({
    sim: { dataset: { deviations: 12, galleryFolders: 2, collectionFolders: 1, favourites: 3, trackedUsers: 0 }, downloadQuota: 500 },
    sources: [gallerySource, collectionsSource],
    quota: 500,
  });
  useHarness(harness);
  await harness.syncAll(["gallery", "collections"]);
  await harness.runOnce({ concurrency: 4 });
  await write();
  await write();
  expect(await diff()).toEqual({ missingOrWrong: [], extra: [] });
  return harness;
}
