// The archive on disk: content-addressed originals (originals/ab/cd/<sha256>.<ext>) written through a
// resumable temp file with fsync and atomic rename, and a readable tree of relative links (by-user/...).
// Nothing is ever written outside the root; files and folders are owner-only unless configured otherwise.
import { createHash, randomBytes, type Hash } from "node:crypto";
import { createReadStream, realpathSync } from "node:fs";
import fs, { type FileHandle } from "node:fs/promises";
import path from "node:path";
import { safeExtension } from "./sanitize.ts";

export type ArchiveOptions = {
  root: string;
  /** Mode of every file written (default 0o600). */
  fileMode?: number;
  /** Mode of every folder created (default 0o700). */
  dirMode?: number;
  /** Transfers refuse to start, and stop, below this much free space (default 2 GiB). */
  minFreeBytes?: number;
};

export type StoredFile = { sha256: string; size: number; relPath: string; deduplicated: boolean };

export type StoreStreamArgs = {
  /** Stable per transfer, e.g. "<deviationid>-original": names the partial file a later attempt resumes. */
  key: string;
  body: NodeJS.ReadableStream | AsyncIterable<Uint8Array>;
  ext: string;
  /** When given, the transfer fails (no final file) unless exactly this many bytes arrive in total. */
  expectedSize?: number;
  /** When given, the transfer fails (partial file removed, ContentMismatchError) unless the bytes hash to this. */
  expectedSha256?: string;
  /**
   * The most bytes accepted in total, whatever the server claims. Past it the partial file is removed and
   * FileTooLargeError thrown (docs/service-behaviour.md#hostile-answers); nothing past the cap is written.
   */
  maxBytes?: number;
  /** Bytes of the partial file to keep (the server answered a Range request from here); 0 starts afresh. */
  resumeFrom?: number;
  /** Recorded next to the partial file, so a later resume can send If-Range with it. */
  etag?: string;
  signal?: AbortSignal;
};

export type ReadableLink = {
  /** Relative to the root, under by-user/, each segment made with sanitizeComponent. */
  linkPath: string;
  /** Relative to the root, under originals/. */
  target: string;
};

export const ORIGINALS_DIR = "originals";
export const PARTIAL_DIR = ".partial";
export const READABLE_DIR = "by-user";
const DEFAULT_MIN_FREE = 2 * 1024 ** 3;
/** Buffered bytes per write call: few syscalls without holding much. */
const WRITE_BATCH_BYTES = 512 * 1024;
/** Free space is re-checked after this many bytes of a transfer. */
const SPACE_CHECK_EVERY = 64 * 1024 * 1024;
const LINK_TMP_SUFFIX = ".link-tmp";
/** Files dvault writes are opened without following a link at their own name. */
const NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0;
const WRITE_NOFOLLOW = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | NOFOLLOW;

export class DiskFullError extends Error {
  readonly freeBytes: number;
  readonly neededBytes?: number;
  constructor(args: { root: string; freeBytes: number; minFreeBytes: number; neededBytes?: number; cause?: unknown }) {
    const need = args.neededBytes !== undefined ? ` (${formatBytes(args.neededBytes)} more needed for this file)` : "";
    super(
      `disk almost full at ${args.root}: ${formatBytes(args.freeBytes)} free, below the ${formatBytes(args.minFreeBytes)} threshold${need}. ` +
        "Free some space (or lower the threshold); downloads resume when space returns.",
      args.cause === undefined ? undefined : { cause: args.cause },
    );
    this.name = "DiskFullError";
    this.freeBytes = args.freeBytes;
    if (args.neededBytes !== undefined) this.neededBytes = args.neededBytes;
  }
}

export class SizeMismatchError extends Error {
  constructor(
    readonly expected: number,
    readonly actual: number,
    readonly key: string,
  ) {
    super(
      actual > expected
        ? `transfer ${key} sent more than the expected ${expected} bytes; the partial file was discarded, fetch it again`
        : `transfer ${key} ended after ${actual} of ${expected} bytes; the partial file is kept for a resume`,
    );
    this.name = "SizeMismatchError";
  }
}

/** A body with no announced size went past its cap; the partial file was removed. */
export class FileTooLargeError extends Error {
  constructor(
    readonly maxBytes: number,
    readonly actual: number,
    readonly key: string,
  ) {
    super(`transfer ${key} passed its cap of ${maxBytes} bytes with no size announced; the partial file was removed`);
    this.name = "FileTooLargeError";
  }
}

/** A file brought in from outside (adoptFile) is not the one that was hashed: it changed meanwhile. */
export class ContentMismatchError extends Error {
  constructor(
    readonly source: string,
    readonly detail: string,
  ) {
    super(`${source} changed while it was being archived (${detail}); nothing was stored for it: run again`);
    this.name = "ContentMismatchError";
  }
}

export type AdoptFileArgs = {
  /** The file outside the archive; it is only ever read (or hard-linked), never moved or changed. */
  from: string;
  ext: string;
  /** What the caller hashed: the file must still be exactly this. */
  expected: { sha256: string; size: number; ino: number; mtimeMs: number };
  /** Hard-link instead of copying when the file is on the archive's filesystem (a copy otherwise). */
  link: boolean;
};

export type AdoptedFile = StoredFile & { linked: boolean };

/** Hard links are refused across filesystems, and by some filesystems and mounts at all: then a copy. */
const LINK_REFUSED = new Set(["EXDEV", "EPERM", "EMLINK", "ENOTSUP", "EOPNOTSUPP", "EACCES"]);

export class OutsideArchiveError extends Error {
  constructor(
    readonly relPath: string,
    readonly root: string,
  ) {
    super(`refusing path ${JSON.stringify(relPath)}: it would resolve outside the archive ${root}`);
    this.name = "OutsideArchiveError";
  }
}

function formatBytes(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(2)} GiB`;
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${n} B`;
}

function errCode(err: unknown): string | undefined {
  return typeof err === "object" && err !== null && "code" in err ? String((err as { code: unknown }).code) : undefined;
}

function isWithin(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === "" || (rel !== ".." && !rel.startsWith(".." + path.sep) && !path.isAbsolute(rel));
}

/** Relative POSIX path of `abs` under `root`. */
function relOf(root: string, abs: string): string {
  return path.relative(root, abs).split(path.sep).join("/");
}

function toBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (typeof chunk === "string") return Buffer.from(chunk, "utf8");
  throw new TypeError(`storeStream body yielded ${typeof chunk}, expected bytes`);
}

/** Next item of `it`, or the signal's reason when it aborts first (a stalled body cannot hold an abort). */
function nextOrAbort<T>(it: AsyncIterator<T>, signal: AbortSignal | undefined): Promise<IteratorResult<T>> {
  if (!signal) return it.next();
  signal.throwIfAborted();
  return new Promise<IteratorResult<T>>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    it.next().then(
      (r) => {
        signal.removeEventListener("abort", onAbort);
        resolve(r);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

async function writeAll(fh: FileHandle, buffers: Buffer[], position: number): Promise<void> {
  let pos = position;
  let pending = buffers;
  while (pending.length > 0) {
    const total = pending.reduce((s, b) => s + b.length, 0);
    const { bytesWritten } = await fh.writev(pending, pos);
    pos += bytesWritten;
    if (bytesWritten >= total) return;
    // A short write: continue with what is left.
    let skip = bytesWritten;
    const rest: Buffer[] = [];
    for (const b of pending) {
      if (skip >= b.length) {
        skip -= b.length;
        continue;
      }
      rest.push(skip > 0 ? b.subarray(skip) : b);
      skip = 0;
    }
    pending = rest;
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const fh = await fs.open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function hashInto(file: string, hash: Hash, end: number): Promise<void> {
  if (end <= 0) return;
  const stream = createReadStream(file, { start: 0, end: end - 1, highWaterMark: 1024 * 1024 });
  for await (const chunk of stream) hash.update(chunk as Buffer);
}

export class Archive {
  readonly root: string;
  private readonly fileMode: number;
  private readonly dirMode: number;
  private readonly minFreeBytes: number;
  private readonly knownDirs = new Set<string>();
  private readonly activeKeys = new Set<string>();

  constructor(options: ArchiveOptions) {
    if (!options.root) throw new Error("Archive needs a root directory (DVAULT_ARCHIVE_DIR)");
    this.root = path.resolve(options.root);
    this.fileMode = options.fileMode ?? 0o600;
    this.dirMode = options.dirMode ?? 0o700;
    this.minFreeBytes = options.minFreeBytes ?? DEFAULT_MIN_FREE;
  }

  /** Absolute path for a relative one; throws OutsideArchiveError if it would resolve outside the root. */
  resolveInside(relPath: string): string {
    if (typeof relPath !== "string" || relPath.includes("\0") || path.isAbsolute(relPath) || /^[A-Za-z]:|^[\\/]/.test(relPath)) {
      throw new OutsideArchiveError(String(relPath), this.root);
    }
    const abs = path.resolve(this.root, relPath);
    if (!isWithin(this.root, abs)) throw new OutsideArchiveError(relPath, this.root);
    // The deepest existing ancestor (the path itself included), with its symlinks resolved, must stay inside.
    const realRoot = this.realRoot();
    for (let probe = abs; isWithin(this.root, probe); probe = path.dirname(probe)) {
      let real: string;
      try {
        real = realpathSync(probe);
      } catch (err) {
        if (errCode(err) === "ENOENT" || errCode(err) === "ENOTDIR") {
          if (probe === this.root) break;
          continue;
        }
        throw err;
      }
      if (!isWithin(realRoot, real)) throw new OutsideArchiveError(relPath, this.root);
      break;
    }
    return abs;
  }

  /** Temp file of a transfer, stable per key, under <root>/.partial/. */
  partialPath(key: string): string {
    const safe = /^[A-Za-z0-9][A-Za-z0-9._-]{0,119}$/.test(key) ? key : `k-${createHash("sha256").update(key).digest("hex").slice(0, 40)}`;
    return path.join(this.root, PARTIAL_DIR, `${safe}.part`);
  }

  /** Bytes already in the partial file (0 if none) and the ETag recorded with it. */
  async partialState(key: string): Promise<{ size: number; etag: string | undefined }> {
    const file = this.partialPath(key);
    let size = 0;
    try {
      size = (await fs.stat(file)).size;
    } catch (err) {
      if (errCode(err) !== "ENOENT") throw err;
      return { size: 0, etag: undefined };
    }
    let etag: string | undefined;
    try {
      const meta = JSON.parse(await fs.readFile(`${file}.json`, "utf8")) as { etag?: unknown };
      if (typeof meta.etag === "string") etag = meta.etag;
    } catch {
      etag = undefined;
    }
    return { size, etag };
  }

  /**
   * Streams `body` into the partial file (after `resumeFrom` kept bytes, hashed first), checks the size,
   * fsyncs and renames it to originals/ab/cd/<sha256>.<ext> — or drops it when those bytes are already
   * stored. On abort or a body error the partial file stays for a resume; on ENOSPC it is deleted and a
   * DiskFullError thrown; when more bytes than expected arrive it is deleted and SizeMismatchError thrown.
   */
  async storeStream(args: StoreStreamArgs): Promise<StoredFile> {
    const { key, signal } = args;
    if (this.activeKeys.has(key)) throw new Error(`transfer ${key} is already running in this process`);
    this.activeKeys.add(key);
    try {
      return await this.transfer(args, signal);
    } finally {
      this.activeKeys.delete(key);
    }
  }

  private async transfer(args: StoreStreamArgs, signal: AbortSignal | undefined): Promise<StoredFile> {
    const { key, expectedSize } = args;
    const resumeFrom = Math.max(0, args.resumeFrom ?? 0);
    const ext = safeExtension(args.ext) ?? "bin";
    signal?.throwIfAborted();
    await this.assertSpace(expectedSize !== undefined ? Math.max(0, expectedSize - resumeFrom) : 0);
    const partial = this.partialPath(key);
    await this.ensureDir(path.dirname(partial));
    this.assertInside(partial);
    const hash = createHash("sha256");
    let fh: FileHandle;
    if (resumeFrom > 0) {
      const { size: have } = await this.partialState(key);
      if (have < resumeFrom) throw new RangeError(`cannot resume ${key} from byte ${resumeFrom}: the partial file holds ${have} (use partialState())`);
      await hashInto(partial, hash, resumeFrom);
      fh = await fs.open(partial, fs.constants.O_RDWR | NOFOLLOW);
      await fh.truncate(resumeFrom);
    } else {
      fh = await fs.open(partial, WRITE_NOFOLLOW, this.fileMode);
      await fh.chmod(this.fileMode);
    }
    await this.writeFile(`${partial}.json`, JSON.stringify({ key, etag: args.etag ?? null, startedAt: new Date().toISOString() }));

    let size = resumeFrom;
    let written = resumeFrom;
    let nextSpaceCheck = resumeFrom + SPACE_CHECK_EVERY;
    let batch: Buffer[] = [];
    let batchBytes = 0;
    const flush = async () => {
      if (batchBytes === 0) return;
      const out = batch;
      batch = [];
      batchBytes = 0;
      await writeAll(fh, out, written);
      written += out.reduce((s, b) => s + b.length, 0);
    };
    const iterable = args.body as AsyncIterable<unknown>;
    const iterator = iterable[Symbol.asyncIterator]();
    let discard = false;
    try {
      for (;;) {
        const next = await nextOrAbort(iterator, signal);
        if (next.done) break;
        const chunk = toBuffer(next.value);
        if (chunk.length === 0) continue;
        size += chunk.length;
        if (expectedSize !== undefined && size > expectedSize) {
          discard = true;
          throw new SizeMismatchError(expectedSize, size, key);
        }
        if (args.maxBytes !== undefined && size > args.maxBytes) {
          discard = true;
          throw new FileTooLargeError(args.maxBytes, size, key);
        }
        hash.update(chunk);
        batch.push(chunk);
        batchBytes += chunk.length;
        if (batchBytes >= WRITE_BATCH_BYTES) await flush();
        if (written >= nextSpaceCheck) {
          nextSpaceCheck = written + SPACE_CHECK_EVERY;
          await this.assertSpace();
        }
      }
      await flush();
      if (expectedSize !== undefined && size !== expectedSize) throw new SizeMismatchError(expectedSize, size, key);
      await fh.sync();
    } catch (err) {
      // Stop the body (a got stream is destroyed), without waiting on a generator stuck in next().
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
      const full = errCode(err) === "ENOSPC" || errCode(err) === "EDQUOT";
      if (!full && !discard) {
        // Keep what arrived for a resume: it is a valid prefix whatever was still buffered.
        await flush().catch(() => undefined);
        await fh.sync().catch(() => undefined);
      }
      await fh.close().catch(() => undefined);
      if (full || discard) await this.discardPartial(key);
      if (full) {
        const free = await this.freeBytes().catch(() => 0);
        throw new DiskFullError({ root: this.root, freeBytes: free, minFreeBytes: this.minFreeBytes, ...(expectedSize !== undefined ? { neededBytes: Math.max(0, expectedSize - written) } : {}), cause: err });
      }
      throw err;
    }
    await fh.close();
    const sha256 = hash.digest("hex");
    if (args.expectedSha256 !== undefined && sha256 !== args.expectedSha256) {
      await this.discardPartial(key);
      throw new ContentMismatchError(key, `sha256 ${sha256}, expected ${args.expectedSha256}`);
    }
    const stored = await this.commit(partial, sha256, size, ext);
    await fs.rm(`${partial}.json`, { force: true });
    return stored;
  }

  /**
   * Brings a file from outside the archive in under its content address without changing it: copied through
   * a partial file and refused unless its bytes hash to `expected.sha256`, or with `link` hard-linked when it
   * sits on the archive's filesystem (and checked to be the very file that was hashed; a copy otherwise). A
   * hard-linked file keeps its own permissions: the archive's modes are never applied to the user's inode.
   */
  async adoptFile(args: AdoptFileArgs): Promise<AdoptedFile> {
    const { sha256, size } = args.expected;
    const existing = await this.findStored(sha256, size);
    if (existing) return { sha256, size, relPath: existing, deduplicated: true, linked: false };
    const ext = safeExtension(args.ext) ?? "bin";
    if (args.link) {
      const linked = await this.linkIn(args, ext);
      if (linked) return linked;
    }
    const stored = await this.storeStream({
      key: `adopt-${sha256.slice(0, 48)}`,
      body: createReadStream(args.from, { highWaterMark: 1024 * 1024 }),
      ext,
      expectedSize: size,
      expectedSha256: sha256,
    }).catch((err: unknown) => {
      if (err instanceof SizeMismatchError) throw new ContentMismatchError(args.from, err.message);
      throw err;
    });
    return { ...stored, linked: false };
  }

  /** A hard link to `from` committed at its content address; undefined when the filesystem refuses the link. */
  private async linkIn(args: AdoptFileArgs, ext: string): Promise<AdoptedFile | undefined> {
    const { sha256, size, ino, mtimeMs } = args.expected;
    const partial = this.partialPath(`adopt-link-${sha256.slice(0, 48)}`);
    await this.ensureDir(path.dirname(partial));
    this.assertInside(partial);
    await fs.rm(partial, { force: true });
    try {
      await fs.link(args.from, partial);
    } catch (err) {
      if (LINK_REFUSED.has(errCode(err) ?? "")) return undefined;
      throw err;
    }
    const st = await fs.lstat(partial);
    if (st.ino !== ino || st.size !== size || st.mtimeMs !== mtimeMs) {
      await fs.rm(partial, { force: true });
      throw new ContentMismatchError(args.from, "its size, time or inode differs from when it was hashed");
    }
    return { ...(await this.commit(partial, sha256, size, ext)), linked: true };
  }

  /** Same for bytes already in memory (journals and literature as HTML). */
  async storeBytes(args: { bytes: Uint8Array; ext: string }): Promise<StoredFile> {
    const ext = safeExtension(args.ext) ?? "bin";
    const bytes = toBuffer(args.bytes);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    const existing = await this.findStored(sha256, bytes.length);
    if (existing) return { sha256, size: bytes.length, relPath: existing, deduplicated: true };
    const partial = this.partialPath(`bytes-${randomBytes(8).toString("hex")}`);
    await this.ensureDir(path.dirname(partial));
    try {
      await this.writeFile(partial, bytes, true);
    } catch (err) {
      await fs.rm(partial, { force: true });
      if (errCode(err) === "ENOSPC" || errCode(err) === "EDQUOT") {
        throw new DiskFullError({ root: this.root, freeBytes: await this.freeBytes().catch(() => 0), minFreeBytes: this.minFreeBytes, neededBytes: bytes.length, cause: err });
      }
      throw err;
    }
    // Its name is random, so nothing would ever resume it: a failed commit removes it.
    return this.commit(partial, sha256, bytes.length, ext).catch(async (err: unknown) => {
      await fs.rm(partial, { force: true });
      throw err;
    });
  }

  async discardPartial(key: string): Promise<void> {
    const partial = this.partialPath(key);
    await fs.rm(partial, { force: true });
    await fs.rm(`${partial}.json`, { force: true });
  }

  /** sha256 and size of a stored file, read as a stream. */
  async hashFile(relPath: string): Promise<{ sha256: string; size: number }> {
    const abs = this.resolveInside(relPath);
    const hash = createHash("sha256");
    let size = 0;
    for await (const chunk of createReadStream(abs, { highWaterMark: 1024 * 1024 })) {
      const buf = chunk as Buffer;
      size += buf.length;
      hash.update(buf);
    }
    return { sha256: hash.digest("hex"), size };
  }

  /** Free bytes for an unprivileged writer on the archive's filesystem. */
  async freeBytes(): Promise<number> {
    let probe = this.root;
    for (;;) {
      try {
        const s = await fs.statfs(probe);
        return Number(s.bavail) * Number(s.bsize);
      } catch (err) {
        const parent = path.dirname(probe);
        if (errCode(err) !== "ENOENT" || parent === probe) throw err;
        probe = parent;
      }
    }
  }

  /** Throws DiskFullError when free space (less `neededBytes`, when given) is below minFreeBytes. */
  async assertSpace(neededBytes = 0): Promise<void> {
    if (this.minFreeBytes <= 0 && neededBytes <= 0) return;
    const free = await this.freeBytes();
    if (free - neededBytes < this.minFreeBytes) {
      throw new DiskFullError({ root: this.root, freeBytes: free, minFreeBytes: this.minFreeBytes, ...(neededBytes > 0 ? { neededBytes } : {}) });
    }
  }

  /**
   * Makes the readable tree (by-user/...) exactly `links`: relative symlinks to originals/, each replaced
   * atomically (symlink to a temp name, then rename); links not listed are removed, and folders left empty.
   * Regular files under by-user/ are never touched. The first entry wins when a linkPath repeats.
   */
  async writeLinks(links: readonly ReadableLink[]): Promise<{ written: number; removed: number }> {
    const wanted = new Map<string, string>();
    for (const link of links) {
      const linkRel = checkRelative(link.linkPath, READABLE_DIR, "linkPath");
      const targetRel = checkRelative(link.target, ORIGINALS_DIR, "target");
      if (!wanted.has(linkRel)) wanted.set(linkRel, targetRel);
    }
    let written = 0;
    const wantedAbs = new Set<string>();
    // Another process may have pruned folders of the tree since this one last wrote it.
    const readableRoot = path.join(this.root, READABLE_DIR);
    for (const dir of this.knownDirs) if (isWithin(readableRoot, dir)) this.knownDirs.delete(dir);
    for (const [linkRel, targetRel] of wanted) {
      const abs = this.resolveInside(linkRel);
      const targetAbs = this.resolveInside(targetRel);
      wantedAbs.add(abs);
      const dir = path.dirname(abs);
      await this.ensureDir(dir);
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
    const removed = await this.sweepLinks(path.join(this.root, READABLE_DIR), wantedAbs);
    return { written, removed };
  }

  // ---- internals ------------------------------------------------------------------------------------------

  private realRoot(): string {
    try {
      return realpathSync(this.root);
    } catch {
      return this.root;
    }
  }

  /**
   * Throws OutsideArchiveError when `abs`, or the deepest part of it that exists, resolves outside the
   * root through a link: checked before every write, since a link can be planted at any time.
   */
  assertInside(abs: string): void {
    this.resolveInside(relOf(this.root, abs));
  }

  /**
   * Every folder dvault writes into, checked: the partial files' and the originals'. Throws
   * OutsideArchiveError naming the first that leads outside the root.
   */
  checkLayout(): void {
    for (const dir of [PARTIAL_DIR, ORIGINALS_DIR]) this.resolveInside(dir);
  }

  /** Creates `abs` and any missing folders between it and the root with dirMode (not left to the umask). */
  private async ensureDir(abs: string): Promise<void> {
    if (this.knownDirs.has(abs)) {
      // Still a real folder: done. Removed or replaced (by a link) since: made again, and checked.
      if ((await fs.lstat(abs).catch(() => undefined))?.isDirectory()) return;
      this.knownDirs.delete(abs);
    }
    if (!isWithin(this.root, abs)) throw new OutsideArchiveError(abs, this.root);
    if (abs === this.root) await fs.mkdir(path.dirname(abs), { recursive: true });
    else await this.ensureDir(path.dirname(abs));
    try {
      await fs.mkdir(abs, { mode: this.dirMode });
      await fs.chmod(abs, this.dirMode);
    } catch (err) {
      if (errCode(err) !== "EEXIST") throw err;
    }
    this.assertInside(abs);
    this.knownDirs.add(abs);
  }

  private async writeFile(abs: string, data: string | Buffer, sync = false): Promise<void> {
    const fh = await fs.open(abs, WRITE_NOFOLLOW, this.fileMode);
    try {
      await fh.chmod(this.fileMode);
      await fh.writeFile(data);
      if (sync) await fh.sync();
    } finally {
      await fh.close();
    }
  }

  /** The relPath of a stored file with this sha256 and size, whatever its extension. */
  private async findStored(sha256: string, size: number): Promise<string | undefined> {
    const dir = path.join(this.root, ORIGINALS_DIR, sha256.slice(0, 2), sha256.slice(2, 4));
    const names = await fs.readdir(dir).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.startsWith(`${sha256}.`)).sort()) {
      const st = await fs.lstat(path.join(dir, name)).catch(() => undefined);
      if (st?.isFile() && st.size === size) return relOf(this.root, path.join(dir, name));
    }
    return undefined;
  }

  /** Moves a complete, fsynced partial file to its content address (or drops it: those bytes are stored). */
  private async commit(partial: string, sha256: string, size: number, ext: string): Promise<StoredFile> {
    const existing = await this.findStored(sha256, size);
    if (existing) {
      await fs.rm(partial, { force: true });
      return { sha256, size, relPath: existing, deduplicated: true };
    }
    const relPath = `${ORIGINALS_DIR}/${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}.${ext}`;
    const abs = this.resolveInside(relPath);
    await this.ensureDir(path.dirname(abs));
    this.assertInside(abs);
    try {
      await fs.rename(partial, abs);
    } catch (err) {
      if (errCode(err) !== "ENOENT") throw err;
      // A folder known to exist was removed meanwhile (by another process): make it again, once.
      this.knownDirs.clear();
      await this.ensureDir(path.dirname(abs));
      await this.ensureDir(path.dirname(partial));
      await fs.rename(partial, abs);
    }
    await fsyncDir(path.dirname(abs));
    return { sha256, size, relPath, deduplicated: false };
  }

  /** Removes symlinks under `dir` that are not wanted (and stale temp links), then empty folders. */
  private async sweepLinks(dir: string, wanted: ReadonlySet<string>): Promise<number> {
    let removed = 0;
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch((err: unknown) => {
      if (errCode(err) === "ENOENT") return [];
      throw err;
    });
    for (const entry of entries) {
      const abs = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        removed += await this.sweepLinks(abs, wanted);
        if (!(await hasEntries(abs))) {
          await fs.rmdir(abs).catch(() => undefined);
          this.knownDirs.delete(abs);
        }
      } else if (entry.isSymbolicLink() && !wanted.has(abs)) {
        await fs.unlink(abs);
        if (!entry.name.endsWith(LINK_TMP_SUFFIX)) removed++;
      }
    }
    return removed;
  }
}

async function hasEntries(dir: string): Promise<boolean> {
  const entries = await fs.readdir(dir).catch(() => ["?"]);
  return entries.length > 0;
}

/** A relative POSIX path under `top`/, free of empty, "." and ".." segments. */
function checkRelative(rel: string, top: string, what: string): string {
  const norm = String(rel).replaceAll("\\", "/");
  const segments = norm.split("/");
  if (norm.includes("\0") || segments[0] !== top || segments.length < 2 || segments.some((s) => s === "" || s === "." || s === "..")) {
    throw new OutsideArchiveError(`${what} ${rel} (expected a relative path under ${top}/)`, top);
  }
  return norm;
}

const MIME_EXTENSIONS: Record<string, string> = {
  "image/jpeg": "jpg",
  "image/jpg": "jpg",
  "image/pjpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/avif": "avif",
  "image/bmp": "bmp",
  "image/tiff": "tif",
  "image/svg+xml": "svg",
  "image/vnd.adobe.photoshop": "psd",
  "video/mp4": "mp4",
  "video/webm": "webm",
  "video/quicktime": "mov",
  "audio/mpeg": "mp3",
  "application/pdf": "pdf",
  "application/zip": "zip",
  "application/x-shockwave-flash": "swf",
  "text/html": "html",
  "text/plain": "txt",
};

/** Extensions a file manager would run: a name from the service never gets to pick one ("gnp.exe" tricks). */
const EXECUTABLE_EXTENSIONS = new Set([
  "exe", "com", "bat", "cmd", "scr", "pif", "msi", "msp", "cpl", "dll", "sys", "lnk", "url", "reg", "hta", "jar",
  "js", "jse", "vbs", "vbe", "wsf", "wsh", "ps1", "psm1", "sh", "bash", "zsh", "csh", "command", "app", "apk", "deb", "rpm", "desktop",
]);

function extFromName(name: string | undefined): string | undefined {
  if (!name) return undefined;
  const base = name.split(/[\\/]/).pop() ?? "";
  const dot = base.lastIndexOf(".");
  if (dot <= 0 || dot === base.length - 1) return undefined;
  const ext = safeExtension(base.slice(dot + 1));
  if (ext === undefined || EXECUTABLE_EXTENSIONS.has(ext)) return undefined;
  return ext === "jpeg" || ext === "jpe" ? "jpg" : ext;
}

/**
 * A safe lowercase extension: from the filename, else the URL's last path segment, else the MIME type,
 * else the fallback ("bin"). Executable extensions from names are never used.
 */
export function extensionFor(args: { filename?: string; mime?: string; url?: string; fallback?: string }): string {
  const fromFilename = extFromName(args.filename);
  if (fromFilename) return fromFilename;
  if (args.url) {
    try {
      const segment = new URL(args.url).pathname.split("/").filter(Boolean).pop();
      const fromUrl = extFromName(segment === undefined ? undefined : decodeURIComponent(segment));
      if (fromUrl) return fromUrl;
    } catch {
      // Not a URL: fall through to the MIME type.
    }
  }
  const mime = args.mime?.split(";")[0]?.trim().toLowerCase();
  const fromMime = mime ? MIME_EXTENSIONS[mime] : undefined;
  if (fromMime) return fromMime;
  return safeExtension(args.fallback) ?? "bin";
}
