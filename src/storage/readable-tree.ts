// The readable tree on disk (by-user/...): relative symlinks to the content-addressed originals, made to
// match a list exactly. What belongs in the list is decided from the database (links.ts).
import { randomBytes } from "node:crypto";
import fsSync from "node:fs";
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
  const { written, wanted } = await placeLinks(disk, links);
  const wantedAbs = new Set([...wanted.keys()].map((rel) => disk.resolveInside(rel)));
  const removed = await sweepUnlisted(disk, async (abs) => new Set(abs.filter((a) => wantedAbs.has(a))));
  return { written, removed };
}

/**
 * Changes the tree by `links` to write and `drop` to remove (paths relative to the root, under by-user/), the rest
 * left as it is: a link listed in both stays. A dropped path that is not a link (a person's own file) is left; the
 * folders a dropped link leaves empty go, also when it was already gone.
 */
export async function changeReadableTree(
  disk: LocalDisk,
  links: readonly ReadableLink[],
  drop: readonly string[],
): Promise<{ written: number; removed: number }> {
  const { written, wanted } = await placeLinks(disk, links);
  const readableRoot = path.join(disk.root, READABLE_DIR);
  // On a filesystem that ignores case (macOS, a Mac folder mounted into Docker), a title or folder whose name changed
  // only in case is placed onto its old link, which is then not to be removed.
  const folded = new Map([...wanted.keys()].map((rel) => [rel.toLowerCase(), rel]));
  let removed = 0;
  for (const linkPath of drop) {
    const linkRel = checkRelative(linkPath, READABLE_DIR, "linkPath");
    if (wanted.has(linkRel)) continue;
    const abs = linkPlace(disk, linkRel);
    const stat = await fs.lstat(abs).catch(() => undefined);
    if (stat && !stat.isSymbolicLink()) continue;
    if (stat) {
      const twin = folded.get(linkRel.toLowerCase());
      const placed = twin === undefined ? undefined : await fs.lstat(linkPlace(disk, twin)).catch(() => undefined);
      if (placed && placed.dev === stat.dev && placed.ino === stat.ino) continue;
      await fs.unlink(abs).catch((err: unknown) => {
        if (errCode(err) !== "ENOENT") throw err;
      });
      removed++;
    }
    // Its folders go when it leaves them empty, or when it was already gone (a link deleted by hand).
    for (let dir = path.dirname(abs); dir !== readableRoot && dir.startsWith(`${readableRoot}${path.sep}`); dir = path.dirname(dir)) {
      if (
        !(await fs.rmdir(dir).then(
          () => true,
          () => false,
        ))
      )
        break;
      disk.forgetDirs(dir, { under: false });
    }
  }
  return { written, removed };
}

/**
 * Where a link goes, its folder checked inside the archive. The link itself is never followed (read, replaced or
 * removed as a link): one planted there pointing outside is replaced or removed, not refused, which would stop
 * every later write of the tree.
 */
function linkPlace(disk: LocalDisk, linkRel: string): string {
  return path.join(disk.resolveInside(path.posix.dirname(linkRel)), path.posix.basename(linkRel));
}

/**
 * A link the tree could not place because something not a link stands at its name (a person's folder): theirs is
 * left as it is, the write stops there, and the changes stay due (src/downloads/readable-links.ts).
 */
export class LinkBlockedError extends Error {
  constructor(
    readonly linkRel: string,
    cause: unknown,
  ) {
    super(`cannot place the link ${linkRel}: ${cause instanceof Error ? cause.message : String(cause)} (a folder or file is in the way)`, { cause });
    this.name = "LinkBlockedError";
  }
}

/** Places each link of `links` (the first of a repeated path), skipping those already right; what it wanted, relative. */
async function placeLinks(disk: LocalDisk, links: readonly ReadableLink[]): Promise<{ written: number; wanted: Map<string, string> }> {
  const wanted = new Map<string, string>();
  for (const link of links) {
    const linkRel = checkRelative(link.linkPath, READABLE_DIR, "linkPath");
    const targetRel = checkRelative(link.target, ORIGINALS_DIR, "target");
    if (!wanted.has(linkRel)) wanted.set(linkRel, targetRel);
  }
  let written = 0;
  // Another process may have pruned folders of the tree since this one last wrote it.
  disk.forgetDirs(path.join(disk.root, READABLE_DIR), { under: true });
  for (const [linkRel, targetRel] of wanted) {
    const abs = linkPlace(disk, linkRel);
    const targetAbs = disk.resolveInside(targetRel);
    const dir = path.dirname(abs);
    await disk.ensureDir(dir);
    const rel = path.relative(dir, targetAbs);
    // Each link's few quick calls are synchronous, as the archive's own (local-disk.ts says why).
    const current = currentLink(abs);
    if (current === rel) continue;
    // Not a link: a person's own file there (a copy put in the link's place) is kept; a folder is in the way (below).
    if (current === null && fsSync.lstatSync(abs).isFile()) continue;
    const tmp = path.join(dir, `.${randomBytes(6).toString("hex")}${LINK_TMP_SUFFIX}`);
    fsSync.symlinkSync(rel, tmp);
    try {
      fsSync.renameSync(tmp, abs);
    } catch (err) {
      fsSync.rmSync(tmp, { force: true });
      throw new LinkBlockedError(linkRel, err);
    }
    written++;
  }
  return { written, wanted };
}

/** What the link at `abs` points at; null when something other than a link is there, undefined when nothing is. */
function currentLink(abs: string): string | null | undefined {
  try {
    return fsSync.readlinkSync(abs);
  } catch (err) {
    return errCode(err) === "EINVAL" ? null : undefined;
  }
}

/**
 * Removes the symlinks under by-user/ that `listed` does not keep (it is given one folder's links at a time, as
 * absolute paths, and answers those to keep), stale temp links always, then the folders left empty; how many
 * links went (temp links not counted).
 */
export function sweepUnlisted(disk: LocalDisk, listed: (absPaths: string[]) => Promise<Set<string>>): Promise<number> {
  return sweepLinks(disk, path.join(disk.root, READABLE_DIR), listed);
}

async function sweepLinks(disk: LocalDisk, dir: string, listed: (absPaths: string[]) => Promise<Set<string>>): Promise<number> {
  let removed = 0;
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch((err: unknown) => {
    if (errCode(err) === "ENOENT") return [];
    throw err;
  });
  const links: string[] = [];
  for (const entry of entries) {
    const abs = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      removed += await sweepLinks(disk, abs, listed);
      if (!(await hasEntries(abs))) {
        await fs.rmdir(abs).catch(() => undefined);
        disk.forgetDirs(abs, { under: false });
      }
    } else if (entry.isSymbolicLink()) {
      if (entry.name.endsWith(LINK_TMP_SUFFIX)) await fs.unlink(abs);
      else links.push(abs);
    }
  }
  const keep = links.length > 0 ? await listed(links) : new Set<string>();
  for (const abs of links) {
    if (keep.has(abs)) continue;
    await fs.unlink(abs);
    removed++;
  }
  return removed;
}

async function hasEntries(dir: string): Promise<boolean> {
  const entries = await fs.readdir(dir).catch(() => ["?"]);
  return entries.length > 0;
}
