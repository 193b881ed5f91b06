// The readable tree (by-user/...) brought in line with the database after downloads; one process at a time. In the
// local folder it is links, and only the links of files whose placements changed since the last write are made
// again (the record of what the tree holds: src/db/readable-tree.repository.ts), found from the marks the mirror's
// triggers leave on what changed: a run that stores a few files into an archive of a million pays for those few,
// not for a million links nor for comparing a million files' rows. In a bucket, which holds no links, it is
// index objects (src/storage/readable-index.ts), made from every placement.
import fs from "node:fs/promises";
import path from "node:path";
import type { PgPool } from "../db/connect.ts";
import { ReadableTreeRepository } from "../db/readable-tree.repository.ts";
import { acquireLock } from "../coord/lock.ts";
import { buildReadableLinks, MAX_FOLDER_DEPTH, READABLE_LINKS_FORMAT } from "../storage/links.ts";
import { ORIGINALS_DIR, READABLE_DIR } from "../storage/layout.ts";
import { READABLE_INDEX_JSON, writeReadableIndex } from "../storage/readable-index.ts";
import type { Archive } from "../storage/archive.ts";
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
    if (deps.archive.blobs.kind === "local") return await changeLocalTree(pool, deps.archive);
    const record = new ReadableTreeRepository(pool);
    // The marks (what changed since the local tree was written) tell a bucket's index nothing: it is made from every
    // placement. Cleared before the placements are read, so none is lost should this store become a local folder.
    await record.clearMarks();
    const links = buildReadableLinks(await record.listPlacements(MAX_FOLDER_DEPTH), deps.archive.root);
    return { links: links.length, ...(await writeReadableIndex(deps.archive.blobs, links)) };
  } catch (err) {
    // A write that failed (a folder in the way, the database gone a moment) left changes unwritten: still due, so the
    // worker's next round or the next run tries again, not only the next run that stores a file.
    await coord.put(linksDirtyKey(config.redisPrefix), "1").catch(() => undefined);
    throw err;
  } finally {
    await lock.release();
  }
}

/** Files whose links are made at a time: bounds the memory of a first write of a large archive. */
const CHANGES_PER_PAGE = 1000;

/**
 * Makes the links of every stored file whose placements changed since the tree was last written, removes those of
 * files no longer stored or placed elsewhere, and records what the tree now holds, a page of files at a time (each
 * page recorded once its links are on disk: a write cut short leaves the rest, and the marks, to the next). The files
 * compared are those the marks reach; every stored file when the marks are many, when the link format changed, or
 * in an archive from before the marks. With nothing recorded yet (or a rebuild was cut short), or no tree on disk,
 * the tree is rebuilt: every file's links, then a sweep of links the record does not hold.
 */
export async function changeLocalTree(pool: PgPool, archive: Archive): Promise<{ links: number; written: number; removed: number }> {
  // One connection for the whole write: the noted changes live in its session, and a pool of one still suffices.
  const session = await pool.connect();
  const record = new ReadableTreeRepository(session);
  let locked = false;
  try {
    await record.lockWrites();
    locked = true;
    // Taken before anything is read: a mark taken here is of a change this write's reads see. A TRUNCATE's mark that
    // comes later (one that ends while this write runs) stays for the next write, which rebuilds.
    const { marks, truncated } = await record.takeMarks();
    const rebuild = truncated || (await record.rebuildDue()) || (await treeMissing(archive));
    if (rebuild) await record.forget();
    let written = 0;
    let removed = 0;
    const whole = rebuild || marks > MARKS_FOR_A_WHOLE_PASS || (await record.comparedFormat()) !== COMPARED_FORMAT;
    const only = whole ? undefined : await record.markedWorks();
    // Nothing marked: nothing to compare.
    const compare = only === undefined || only.length > 0;
    if (compare) await record.noteChanges(MAX_FOLDER_DEPTH, READABLE_LINKS_FORMAT, only);
    for (let after = ""; compare; ) {
      const changes = await record.nextChanges(after, CHANGES_PER_PAGE);
      const last = changes.at(-1);
      if (!last) break;
      after = last.deviationid;
      const ids = changes.map((c) => c.deviationid);
      // The rows and their fingerprints read in one snapshot: what is recorded is what the links were made from.
      const rows = await record.placementsOf(MAX_FOLDER_DEPTH, READABLE_LINKS_FORMAT, ids);
      const links = buildReadableLinks(rows, archive.root);
      await record.recordIntent(ids, links);
      const done = await archive.changeLinks(links, await record.linksOf(ids));
      written += done.written;
      removed += done.removed;
      const prints = new Map(rows.map((r) => [r.deviationid, r.fingerprint]));
      await record.record(
        ids.map((deviationid) => ({ deviationid, fingerprint: prints.get(deviationid) ?? null })),
        links,
      );
    }
    if (rebuild) {
      removed += await archive.sweepLinks((linkPaths) => record.recorded(linkPaths));
      await record.markSwept(new Date());
    }
    if (whole) await record.markCompared(COMPARED_FORMAT);
    await record.dropTakenMarks();
    return { links: await record.linkCount(), written, removed };
  } finally {
    await record.dropChanges().catch(() => undefined);
    await record.dropTaken().catch(() => undefined);
    // A connection that cannot unlock is not handed back to the pool, which ends it and its lock with it.
    if (locked)
      await record.unlockWrites().then(
        () => session.release(),
        (err: Error) => session.release(err),
      );
    else session.release();
  }
}

/**
 * What a write that compares every stored file notes it compared under (ReadableTreeRepository.markCompared): the
 * link format and the folder depth, the two things a new version may change without a row changing.
 */
const COMPARED_FORMAT = `${READABLE_LINKS_FORMAT}depth-${MAX_FOLDER_DEPTH}`;

/**
 * Above this many marks a write compares every stored file instead of the works they reach (one statement over the
 * archive, 16–18 s at a million works, against a list of works passed to PostgreSQL): after a first sync of a large
 * account, say, whose first write rebuilds the tree anyway.
 */
const MARKS_FOR_A_WHOLE_PASS = 100_000;

/**
 * Whether the store has no readable tree yet although it holds originals: just after `dvault storage migrate`
 * (which copies originals and thumbnails only) or a restore into a bucket.
 */
async function treeMissing(archive: Archive): Promise<boolean> {
  const { blobs } = archive;
  if (blobs.kind === "s3") return (await blobs.stat(READABLE_INDEX_JSON)) === undefined;
  const hasTree = await fs.stat(path.join(archive.root, READABLE_DIR)).then(
    () => true,
    () => false,
  );
  if (hasTree) return false;
  for await (const _ of blobs.list(`${ORIGINALS_DIR}/`)) return true;
  return false;
}

/**
 * Regenerates the links when a download stored a file since the last time, when the store has none yet, or when the
 * local tree's rebuild is due (src/db/readable-tree.repository.ts rebuildDue).
 */
export async function regenerateLinksIfDirty(deps: DownloadDeps): Promise<LinksResult | undefined> {
  const { coord, config } = deps.services;
  const due =
    (await coord.exists(linksDirtyKey(config.redisPrefix))) ||
    (await treeMissing(deps.archive)) ||
    // No sweep recorded: an archive from before the record, or just restored.
    (deps.archive.blobs.kind === "local" && (await new ReadableTreeRepository(deps.services.pool).rebuildDue()));
  if (!due) return undefined;
  return regenerateReadableLinks(deps);
}
