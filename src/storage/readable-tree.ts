// The readable tree on disk (by-user/...): relative symlinks to the content-addressed originals, made to
// match a list exactly. What belongs in the list is decided from the database (links.ts).
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { checkRelative, errCode, ORIGINALS_DIR, READABLE_DIR } from "./layout.ts";
import type { LocalDisk } from "./local-disk.ts";

export type ReadableLink = {
  /** Relative to the root, under by-user/, each segment made with sanitizeComponent. */
  linkPath: string;
  /** Relative to the root, under originals/. */
  target: string;
};

const LINK_TMP_SUFFIX = ".link-tmp";

/**
 * Makes the readable tree (by-user/...) exactly `links`: relative symlinks to originals/, each replaced
 * atomically (symlink to a temp name, then rename); links not listed are removed, and folders left empty.
 * Regular files under by-user/ are never touched. The first entry wins when a linkPath repeats.
 */
export async function writeReadableTree(disk: LocalDisk, links: readonly ReadableLink[]): Promise<{ written: number; removed: number }> {
  const wanted = new Map<string, string>();
  for (const link of links) {
    const linkRel = checkRelative(link.linkPath, READABLE_DIR, "linkPath");
    const targetRel = checkRelative(link.target, ORIGINALS_DIR, "target");
    if (!wanted.has(linkRel)) wanted.set(linkRel, targetRel);
  }
  let written = 0;
  const wantedAbs = new Set<string>();
  // Another process may have pruned folders of the tree since this one last wrote it.
  const readableRoot = path.join(disk.root, READABLE_DIR);
  disk.forgetDirs(readableRoot, { under: true });
  for (const [linkRel, targetRel] of wanted) {
    const abs = disk.resolveInside(linkRel);
    const targetAbs = disk.resolveInside(targetRel);
    wantedAbs.add(abs);
    const dir = path.dirname(abs);
    await disk.ensureDir(dir);
    const rel = path.relative(dir, targetAbs);
    const current = await fs.readlink(abs).catch(() => undefined);
    if (current === rel) continue;
    const tmp = path.join(dir, `.${randomBytes(6).toString("hex")}${LINK_TMP_SUFFIX}`);
    await fs.symlink(rel, tmp);
    try {
      await fs.rename(tmp, abs);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw new Error(`cannot place the link ${linkRel}: ${err instanceof Error ? err.message : String(err)} (a folder or file is in the way)`, { cause: err });
    }
    written++;
  }
  const removed = await sweepLinks(disk, readableRoot, wantedAbs);
  return { written, removed };
}

/** Removes symlinks under `dir` that are not wanted (and stale temp links), then empty folders. */
async function sweepLinks(disk: LocalDisk, dir: string, wanted: ReadonlySet<string>): Promise<number> {
  let removed = 0;
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch((err: unknown) => {
    if (errCode(err) === "ENOENT") return [];
    throw err;
  });
  for (const entry of entries) {
    const abs = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      removed += await sweepLinks(disk, abs, wanted);
      if (!(await hasEntries(abs))) {
        await fs.rmdir(abs).catch(() => undefined);
        disk.forgetDirs(abs, { under: false });
      }
    } else if (entry.isSymbolicLink() && !wanted.has(abs)) {
      await fs.unlink(abs);
      if (!entry.name.endsWith(LINK_TMP_SUFFIX)) removed++;
    }
  }
  return removed;
}

async function hasEntries(dir: string): Promise<boolean> {
  const entries = await fs.readdir(dir).catch(() => ["?"]);
  return entries.length > 0;
}
