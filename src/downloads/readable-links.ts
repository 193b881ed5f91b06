// The readable tree (by-user/...) regenerated from the database after downloads; one process at a time. In the
// local folder it is links; in a bucket, which holds none, index objects (src/storage/readable-index.ts).
import fs from "node:fs/promises";
import path from "node:path";
import { ReadableTreeRepository } from "../db/readable-tree.repository.ts";
import { acquireLock } from "../coord/lock.ts";
import { buildReadableLinks, MAX_FOLDER_DEPTH } from "../storage/links.ts";
import { ORIGINALS_DIR, READABLE_DIR } from "../storage/layout.ts";
import { READABLE_INDEX_JSON, writeReadableIndex } from "../storage/readable-index.ts";
import type { DownloadDeps } from "./deps.ts";
import { linksDirtyKey } from "./after-store.ts";

export type LinksResult = { links: number; written: number; removed: number } | { busy: true };

export async function regenerateReadableLinks(deps: DownloadDeps): Promise<LinksResult> {
  const { coord, config, pool } = deps.services;
  const lock = await acquireLock(coord, `${config.redisPrefix}:downloads:links-lock`, 60_000);
  if (!lock) {
    // Another process is writing them; it may have read the table before our latest file.
    await coord.put(linksDirtyKey(config.redisPrefix), "1");
    return { busy: true };
  }
  try {
    await coord.remove(linksDirtyKey(config.redisPrefix));
    const links = buildReadableLinks(await new ReadableTreeRepository(pool).listPlacements(MAX_FOLDER_DEPTH), deps.archive.root);
    const blobs = deps.archive.blobs;
    const result = blobs.kind === "local" ? await deps.archive.writeLinks(links) : await writeReadableIndex(blobs, links);
    return { links: links.length, ...result };
  } finally {
    await lock.release();
  }
}

/**
 * Whether the store has no readable tree yet although it holds originals: just after `dvault storage migrate`
 * (which copies originals and thumbnails only) or a restore into a bucket.
 */
async function treeMissing(deps: DownloadDeps): Promise<boolean> {
  const { blobs } = deps.archive;
  if (blobs.kind === "s3") return (await blobs.stat(READABLE_INDEX_JSON)) === undefined;
  const hasTree = await fs.stat(path.join(deps.archive.root, READABLE_DIR)).then(
    () => true,
    () => false,
  );
  if (hasTree) return false;
  for await (const _ of blobs.list(`${ORIGINALS_DIR}/`)) return true;
  return false;
}

/** Regenerates the links when a download stored a file since the last time, or when the store has none yet. */
export async function regenerateLinksIfDirty(deps: DownloadDeps): Promise<LinksResult | undefined> {
  const { coord, config } = deps.services;
  if (!(await coord.exists(linksDirtyKey(config.redisPrefix))) && !(await treeMissing(deps))) return undefined;
  return regenerateReadableLinks(deps);
}
