// Where the archive's bytes go: a folder on the local disk. Every path is checked to stay inside the root
// before it is written (layout.ts), files are opened without following a link at their own name, folders and
// files get the configured modes, and a file is placed at its content address by an fsynced rename. It
// decides nothing about what is stored: that is the Archive's (archive.ts).
import fsSync from "node:fs";
import fs, { type FileHandle } from "node:fs/promises";
import path from "node:path";
import { freeBytesAt } from "./free-space.ts";
import { errCode, isWithin, originalDir, OutsideArchiveError, PARTIAL_DIR, partialFileName, relOf, resolveInside, ORIGINALS_DIR } from "./layout.ts";
import { makeDirs } from "../make-dirs.ts";

/** Files dvault writes are opened without following a link at their own name. */
const NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0;
const WRITE_NOFOLLOW = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | NOFOLLOW;
/**
 * The synchronous opens (writeFile, the partial's metadata) never wait on a FIFO at the name: that would stop the whole
 * process, not one transfer. O_NONBLOCK changes nothing for a regular file; a FIFO with no reader refuses (ENXIO).
 */
const NONBLOCK = fs.constants.O_NONBLOCK ?? 0;

/** Hard links are refused across filesystems, and by some filesystems and mounts at all: then a copy. */
const LINK_REFUSED = new Set(["EXDEV", "EPERM", "EMLINK", "ENOTSUP", "EOPNOTSUPP", "EACCES"]);

export type LocalDiskOptions = {
  root: string;
  /** Mode of every file written. */
  fileMode: number;
  /** Mode of every folder created. */
  dirMode: number;
};

// The small steps around a file (a folder looked at or made, a name moved, a metadata file read or written, a
// descriptor opened or closed) are synchronous calls: each takes microseconds, where the promise API's trip through
// the thread pool and back cost 5–9 times that in CPU and wake two threads (docs/PERFORMANCE.md#sync-metadata). What
// can take long stays asynchronous: fsync, and the bytes of a transfer (stream-write.ts).

/** fsync of a descriptor, off the main thread. */
function fsyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsSync.fsync(fd, (err) => (err ? reject(err) : resolve())));
}

/** What is at `abs`, not followed through a link; undefined when nothing can be read there (missing, unreadable, a file above it). */
function lstatOrNothing(abs: string): fsSync.Stats | undefined {
  try {
    return fsSync.lstatSync(abs);
  } catch {
    return undefined;
  }
}

/** A small regular file's text; anything else at the name (a FIFO, a device) throws, without waiting on it. */
function readRegularFile(abs: string): string {
  const fd = fsSync.openSync(abs, fs.constants.O_RDONLY | NONBLOCK);
  try {
    if (!fsSync.fstatSync(fd).isFile()) throw Object.assign(new Error(`${abs} is not a regular file`), { code: "ENOTREG" });
    return fsSync.readFileSync(fd, "utf8");
  } finally {
    fsSync.closeSync(fd);
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const fd = fsSync.openSync(dir, "r");
  try {
    await fsyncFd(fd);
  } finally {
    fsSync.closeSync(fd);
  }
}

export class LocalDisk {
  readonly root: string;
  private readonly fileMode: number;
  private readonly dirMode: number;
  /** Folders made or checked by this process; checked again when one may have changed since. */
  private readonly knownDirs = new Set<string>();

  constructor(options: LocalDiskOptions) {
    this.root = path.resolve(options.root);
    this.fileMode = options.fileMode;
    this.dirMode = options.dirMode;
  }

  /** Absolute path for a relative one; throws OutsideArchiveError if it would resolve outside the root. */
  resolveInside(relPath: string): string {
    return resolveInside(this.root, relPath);
  }

  /**
   * Throws OutsideArchiveError when `abs`, or the deepest part of it that exists, resolves outside the
   * root through a link: checked before every write, since a link can be planted at any time.
   */
  assertInside(abs: string): void {
    this.resolveInside(relOf(this.root, abs));
  }

  /** Temp file of a transfer, stable per key, under <root>/.partial/. */
  partialPath(key: string): string {
    return path.join(this.root, PARTIAL_DIR, partialFileName(key));
  }

  /** Bytes already in the partial file (0 if none) and the ETag recorded with it. */
  async partialState(key: string): Promise<{ size: number; etag: string | undefined }> {
    const file = this.partialPath(key);
    let size = 0;
    try {
      size = fsSync.statSync(file).size;
    } catch (err) {
      if (errCode(err) !== "ENOENT") throw err;
      return { size: 0, etag: undefined };
    }
    let etag: string | undefined;
    try {
      const meta = JSON.parse(readRegularFile(`${file}.json`)) as { etag?: unknown };
      if (typeof meta.etag === "string") etag = meta.etag;
    } catch {
      etag = undefined;
    }
    return { size, etag };
  }

  /** Records what a later resume needs next to the partial file (its ETag, for If-Range). */
  async writePartialMeta(key: string, etag: string | undefined): Promise<void> {
    const partial = this.partialPath(key);
    await this.writeFile(`${partial}.json`, JSON.stringify({ key, etag: etag ?? null, startedAt: new Date().toISOString() }));
  }

  /** The partial file of `key`, its folder made and the path checked to stay inside the root. */
  async preparePartial(key: string): Promise<string> {
    const partial = this.partialPath(key);
    await this.ensureDir(path.dirname(partial));
    this.assertInside(partial);
    return partial;
  }

  /** Opens a prepared partial file: afresh (empty), or kept up to `keep` bytes for a resume. */
  async openPartial(partial: string, keep: number): Promise<FileHandle> {
    if (keep > 0) {
      const fh = await fs.open(partial, fs.constants.O_RDWR | NOFOLLOW);
      await fh.truncate(keep);
      return fh;
    }
    const fh = await fs.open(partial, WRITE_NOFOLLOW, this.fileMode);
    await fh.chmod(this.fileMode);
    return fh;
  }

  async discardPartial(key: string): Promise<void> {
    const partial = this.partialPath(key);
    fsSync.rmSync(partial, { force: true });
    fsSync.rmSync(`${partial}.json`, { force: true });
  }

  /** Removes the metadata kept next to a partial file once its bytes are placed. */
  async forgetPartialMeta(key: string): Promise<void> {
    fsSync.rmSync(`${this.partialPath(key)}.json`, { force: true });
  }

  /**
   * A note kept beside the partial file of `key` (`<key>.part.placed.json`): what a placed file's row, not yet
   * written, needs (src/downloads/placed-originals.ts). Fsynced, and replaced whole through a rename, so a crash
   * leaves the old note or the new one.
   */
  async writePlacedNote(key: string, text: string): Promise<void> {
    const note = `${await this.preparePartial(key)}.placed.json`;
    await this.writeFile(`${note}.tmp`, text, true);
    fsSync.renameSync(`${note}.tmp`, note);
  }

  /** The note of `key` (writePlacedNote), undefined when there is none or it cannot be read. */
  readPlacedNote(key: string): string | undefined {
    try {
      return readRegularFile(`${this.partialPath(key)}.placed.json`);
    } catch {
      return undefined;
    }
  }

  removePlacedNote(key: string): void {
    fsSync.rmSync(`${this.partialPath(key)}.placed.json`, { force: true });
  }

  /** A small file of the partial folder, `name` there (not a transfer's), written whole and fsynced, its folder too. */
  async writeDurablyInPartial(name: string, text: string): Promise<void> {
    const abs = path.join(this.root, PARTIAL_DIR, name);
    await this.ensureDir(path.dirname(abs));
    this.assertInside(abs);
    await this.writeFile(abs, text, true);
    await fsyncDir(path.dirname(abs));
  }

  /** The regular files of the partial folder whose names `named` takes, with their text. */
  readInPartial(named: (name: string) => boolean): { name: string; text: string }[] {
    let dir: string;
    let names: string[];
    try {
      // Checked as every write is: a link planted at .partial is not followed.
      dir = this.resolveInside(PARTIAL_DIR);
      names = fsSync.readdirSync(dir).filter(named);
    } catch {
      return [];
    }
    return names.flatMap((name) => {
      try {
        return [{ name, text: readRegularFile(path.join(dir, name)) }];
      } catch {
        return [];
      }
    });
  }

  /** A file of the partial folder replaced whole through a rename (not fsynced), or removed when `text` is undefined. */
  replaceInPartial(name: string, text: string | undefined): void {
    const abs = path.join(this.root, PARTIAL_DIR, name);
    if (text === undefined) {
      fsSync.rmSync(abs, { force: true });
      return;
    }
    this.assertInside(abs);
    const fd = fsSync.openSync(`${abs}.tmp`, WRITE_NOFOLLOW | NONBLOCK, this.fileMode);
    try {
      fsSync.writeFileSync(fd, text);
    } finally {
      fsSync.closeSync(fd);
    }
    fsSync.renameSync(`${abs}.tmp`, abs);
  }

  /** Removes a file dvault wrote (a partial one), if it is there. */
  async remove(abs: string): Promise<void> {
    fsSync.rmSync(abs, { force: true });
  }

  /**
   * Hard-links `from` (a file outside the archive) as the partial file of `key`, and returns what the link
   * points at; undefined when the filesystem refuses the link (another filesystem, or no hard links there).
   */
  async linkAsPartial(from: string, key: string): Promise<{ partial: string; ino: number; size: number; mtimeMs: number } | undefined> {
    const partial = await this.preparePartial(key);
    await fs.rm(partial, { force: true });
    try {
      await fs.link(from, partial);
    } catch (err) {
      if (LINK_REFUSED.has(errCode(err) ?? "")) return undefined;
      throw err;
    }
    const st = await fs.lstat(partial);
    return { partial, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
  }

  /** Creates `abs` and any missing folders between it and the root with dirMode (not left to the umask). */
  async ensureDir(abs: string): Promise<void> {
    if (this.knownDirs.has(abs)) {
      // Still a real folder: done. Removed or replaced (by a link) since: made again, and checked.
      if (lstatOrNothing(abs)?.isDirectory()) return;
      this.knownDirs.delete(abs);
    }
    if (!isWithin(this.root, abs)) throw new OutsideArchiveError(abs, this.root);
    if (abs === this.root) await makeDirs(path.dirname(abs));
    else await this.ensureDir(path.dirname(abs));
    try {
      fsSync.mkdirSync(abs, { mode: this.dirMode });
      fsSync.chmodSync(abs, this.dirMode);
    } catch (err) {
      if (errCode(err) !== "EEXIST") throw err;
    }
    this.assertInside(abs);
    this.knownDirs.add(abs);
  }

  /** Forgets the folders known under `dir` (another process may have removed them), or `dir` itself. */
  forgetDirs(dir: string, { under }: { under: boolean }): void {
    if (!under) {
      this.knownDirs.delete(dir);
      return;
    }
    for (const known of this.knownDirs) if (isWithin(dir, known)) this.knownDirs.delete(known);
  }

  /** Writes a whole file with the archive's mode, never through a link at its name; `sync` fsyncs it. */
  async writeFile(abs: string, data: string | Buffer, sync = false): Promise<void> {
    const fd = fsSync.openSync(abs, WRITE_NOFOLLOW | NONBLOCK, this.fileMode);
    try {
      fsSync.fchmodSync(fd, this.fileMode);
      fsSync.writeFileSync(fd, data);
      if (sync) await fsyncFd(fd);
    } finally {
      fsSync.closeSync(fd);
    }
  }

  /** The relPath of a stored file with this sha256 and size, whatever its extension. */
  async findStored(sha256: string, size: number): Promise<string | undefined> {
    const dir = path.join(this.root, originalDir(sha256));
    let names: string[];
    try {
      names = fsSync.readdirSync(dir);
    } catch {
      names = [];
    }
    for (const name of names.filter((n) => n.startsWith(`${sha256}.`)).sort()) {
      const st = lstatOrNothing(path.join(dir, name));
      if (st?.isFile() && st.size === size) return relOf(this.root, path.join(dir, name));
    }
    return undefined;
  }

  /**
   * Moves a complete, fsynced file (a partial one, inside the root) to `relPath`, and fsyncs its folder — unless
   * `syncDir` is false, when the caller fsyncs it (syncDir), once for a batch. Returns that folder.
   */
  async place(from: string, relPath: string, opts: { syncDir?: boolean } = {}): Promise<string> {
    const abs = this.resolveInside(relPath);
    await this.ensureDir(path.dirname(abs));
    this.assertInside(abs);
    try {
      fsSync.renameSync(from, abs);
    } catch (err) {
      if (errCode(err) !== "ENOENT") throw err;
      // A folder known to exist was removed meanwhile (by another process): make it again, once.
      this.knownDirs.clear();
      await this.ensureDir(path.dirname(abs));
      await this.ensureDir(path.dirname(from));
      fsSync.renameSync(from, abs);
    }
    if (opts.syncDir ?? true) await fsyncDir(path.dirname(abs));
    return path.dirname(abs);
  }

  /** Makes the names in a folder durable (the renames into it). */
  syncDir(dir: string): Promise<void> {
    return fsyncDir(dir);
  }

  /** Free bytes for an unprivileged writer on the archive's filesystem. */
  freeBytes(): Promise<number> {
    return freeBytesAt(this.root);
  }

  /** Every folder dvault writes into, checked: the partial files' and the originals'. */
  checkLayout(): void {
    for (const dir of [PARTIAL_DIR, ORIGINALS_DIR]) this.resolveInside(dir);
  }
}
