// The archive: what dvault decides about the files it keeps. Each file is stored once under its content
// address (originals/ab/cd/<sha256>.<ext>), only when it arrived whole (the announced size, the expected
// sha256, under its cap), through a partial file a later attempt resumes, and never when space runs low.
// Where the bytes go is local-disk.ts (paths checked by layout.ts); the streaming write is stream-write.ts,
// the readable by-user/ tree readable-tree.ts, free space free-space.ts. Nothing is ever written outside
// the root; files and folders are owner-only unless configured otherwise.
import { createHash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import { ForeignFileError, foreignFileChunks } from "../foreign-file.ts";
import { DiskFullError } from "./free-space.ts";
import { checkWriterName, errCode, originalRelPath, relOf, writtenPartialKey } from "./layout.ts";
import { type BlobStore, LocalBlobStore } from "./blob-store.ts";
import { hashBlob } from "./blob-transfer.ts";
import { LocalDisk } from "./local-disk.ts";
import { proveWritable } from "./preflight.ts";
import { changeReadableTree, type ReadableLink, sweepUnlisted, writeReadableTree } from "./readable-tree.ts";
import { safeExtension } from "./sanitize.ts";
import { DISK_FULL_CODES } from "./storage-fault.ts";
import { BatchedWriter, checkRunningSize, hashInto, nextOrAbort, SizeMismatchError, toBuffer } from "./stream-write.ts";

// What src/downloads still imports through this file; the rest of dvault imports each from the file that defines it.

export type ArchiveOptions = {
  root: string;
  /** Mode of every file written (default 0o600). */
  fileMode?: number;
  /** Mode of every folder created (default 0o700). */
  dirMode?: number;
  /** Transfers refuse to start, and stop, below this much free space (default 2 GiB). */
  minFreeBytes?: number;
  /** Where originals and thumbnails are kept (store.ts); the archive folder itself when not given. */
  blobs?: BlobStore;
  /**
   * This process as the writer of storeBytes's partial files, named in them (src/queue/holder.ts's thisWriterTag), and
   * of the default blob store's: a file a killed writer left is then removed at the next start
   * (src/downloads/partial-sweep.ts), not only once old.
   */
  writer?: string;
};

export type StoredFile = { sha256: string; size: number; relPath: string; deduplicated: boolean };

/** A transfer's bytes, whole and checked, still in its partial file (its handle open): Archive.placeWritten's input. */
export type WrittenFile = {
  key: string;
  partial: string;
  fh: FileHandle;
  sha256: string;
  size: number;
  ext: string;
  signal: AbortSignal | undefined;
};

/** A transfer's key and ETag, and whether its resume metadata is written yet (Archive.transfer). */
type ResumeMeta = { key: string; etag: string | undefined; written: boolean };

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

const DEFAULT_MIN_FREE = 2 * 1024 ** 3;
/** Free space is re-checked after this many bytes of a transfer. */
const SPACE_CHECK_EVERY = 64 * 1024 * 1024;

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

function isDiskFull(err: unknown): boolean {
  return DISK_FULL_CODES.has(errCode(err) ?? "");
}

export class Archive {
  private readonly disk: LocalDisk;
  private readonly minFreeBytes: number;
  private readonly activeKeys = new Set<string>();
  /** The archive's objects (originals, thumbnails) through the one storage interface (blob-store.ts). */
  readonly blobs: BlobStore;
  /**
   * The store is this very folder: a finished partial file is renamed into place (fsynced, no copy), as it always
   * was. Any other store (a bucket) gets the partial file uploaded, then removed.
   */
  private readonly placesLocally: boolean;
  private readonly writer: string | undefined;

  constructor(options: ArchiveOptions) {
    if (!options.root) throw new Error("Archive needs a root directory (DVAULT_ARCHIVE_DIR)");
    this.writer = checkWriterName(options.writer);
    this.disk = new LocalDisk({ root: options.root, fileMode: options.fileMode ?? 0o600, dirMode: options.dirMode ?? 0o700 });
    this.minFreeBytes = options.minFreeBytes ?? DEFAULT_MIN_FREE;
    this.blobs = options.blobs ?? new LocalBlobStore(this.disk, { writer: this.writer });
    this.placesLocally = !options.blobs || (options.blobs instanceof LocalBlobStore && options.blobs.root === this.disk.root);
  }

  get root(): string {
    return this.disk.root;
  }

  /** Absolute path for a relative one; throws OutsideArchiveError if it would resolve outside the root. */
  resolveInside(relPath: string): string {
    return this.disk.resolveInside(relPath);
  }

  /**
   * Throws OutsideArchiveError when `abs`, or the deepest part of it that exists, resolves outside the
   * root through a link: checked before every write, since a link can be planted at any time.
   */
  assertInside(abs: string): void {
    this.disk.assertInside(abs);
  }

  /**
   * Every folder dvault writes into, checked: the partial files' and the originals'. Throws
   * OutsideArchiveError naming the first that leads outside the root.
   */
  checkLayout(): void {
    this.disk.checkLayout();
  }

  /** Temp file of a transfer, stable per key, under <root>/.partial/. */
  partialPath(key: string): string {
    return this.disk.partialPath(key);
  }

  /** Bytes already in the partial file (0 if none) and the ETag recorded with it. */
  partialState(key: string): Promise<{ size: number; etag: string | undefined }> {
    return this.disk.partialState(key);
  }

  discardPartial(key: string): Promise<void> {
    return this.disk.discardPartial(key);
  }

  /**
   * A small note about the transfer `key`, kept on the archive folder's own disk beside the partial files (with a
   * bucket too: the folder is this host's): writable when the database refuses writes (src/downloads/placed-originals.ts).
   */
  keepPlacedNote(key: string, text: string): Promise<void> {
    return this.disk.writePlacedNote(key, text);
  }

  readPlacedNote(key: string): string | undefined {
    return this.disk.readPlacedNote(key);
  }

  dropPlacedNote(key: string): void {
    this.disk.removePlacedNote(key);
  }

  /**
   * A batch's journal (src/downloads/placed-journal.ts): `.partial/<name>`, written whole and fsynced with its folder, on
   * the archive folder's own disk whatever the store (with a bucket, this host's folder).
   */
  keepJournal(name: string, text: string): Promise<void> {
    return this.disk.writeDurablyInPartial(name, text);
  }

  /** The journals of the partial folder whose names `named` takes, with their text (one that cannot be read is left out). */
  readJournals(named: (name: string) => boolean): { name: string; text: string }[] {
    return this.disk.readInPartial(named);
  }

  /** A journal replaced by `text`, or removed when undefined; neither fsynced. */
  replaceJournal(name: string, text: string | undefined): void {
    this.disk.replaceInPartial(name, text);
  }

  /** sha256 and size of a stored file, read as a stream; a missing one throws an error with code ENOENT. */
  async hashFile(relPath: string): Promise<{ sha256: string; size: number }> {
    // Through the blob store in the archive folder too: it never waits on a FIFO at the name nor follows a link there
    // (a note's or a journal's line naming such a file held its download for ever, placed-originals.ts), and takes
    // either for no file.
    const got = await hashBlob(this.blobs, relPath);
    if (!got) throw Object.assign(new Error(`${relPath} is not in ${this.blobs.describe()}`), { code: "ENOENT" });
    return got;
  }

  /** The key of a stored original with this sha256 and size, whatever its extension. */
  private async findStored(sha256: string, size: number): Promise<string | undefined> {
    if (this.placesLocally) return this.disk.findStored(sha256, size);
    for await (const blob of this.blobs.list(originalRelPath(sha256, ""))) {
      if (blob.size === size) return blob.key;
    }
    return undefined;
  }

  /** Free bytes for an unprivileged writer on the archive's filesystem. */
  freeBytes(): Promise<number> {
    return this.disk.freeBytes();
  }

  /** The preflight of the downloads (preflight.ts): throws StorageFaultError naming the folder or bucket that refused. */
  proveWritable(): Promise<void> {
    return proveWritable(this.disk, this.placesLocally ? undefined : this.blobs, this.writer);
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
   * atomically; links not listed are removed, and folders left empty (see writeReadableTree).
   */
  writeLinks(links: readonly ReadableLink[]): Promise<{ written: number; removed: number }> {
    return writeReadableTree(this.disk, links);
  }

  /** Writes `links` and removes the links of `drop` not among them, leaving the rest of the tree (see changeReadableTree). */
  changeLinks(links: readonly ReadableLink[], drop: readonly string[]): Promise<{ written: number; removed: number }> {
    return changeReadableTree(this.disk, links, drop);
  }

  /** Removes the links of the tree that `listed` does not keep, given a folder's links at a time as paths relative to the root. */
  sweepLinks(listed: (linkPaths: string[]) => Promise<Set<string>>): Promise<number> {
    return sweepUnlisted(this.disk, async (abs) => {
      const byRel = new Map(abs.map((a) => [relOf(this.disk.root, a), a]));
      const keep = await listed([...byRel.keys()]);
      return new Set([...byRel].filter(([rel]) => keep.has(rel)).map(([, a]) => a));
    });
  }

  /**
   * Streams `body` into the partial file (after `resumeFrom` kept bytes, hashed first), checks the size,
   * fsyncs and renames it to originals/ab/cd/<sha256>.<ext> — or drops it when those bytes are already
   * stored. On abort or a body error the partial file stays for a resume; on ENOSPC it is deleted and a
   * DiskFullError thrown; when more bytes than expected arrive it is deleted and SizeMismatchError thrown.
   */
  async storeStream(args: StoreStreamArgs): Promise<StoredFile> {
    const [placed] = await this.placeWritten([await this.writeStream(args)]);
    if (placed?.status !== "fulfilled") throw placed?.reason;
    return placed.value;
  }

  /**
   * storeStream's first half: the bytes written, checked and hashed in the partial file, neither fsynced nor
   * placed yet. The file must then go through placeWritten (alone, or in a batch: src/downloads/group-commit.ts),
   * which holds its key until it is placed.
   */
  async writeStream(args: StoreStreamArgs): Promise<WrittenFile> {
    const { key, signal } = args;
    if (this.activeKeys.has(key)) throw new Error(`transfer ${key} is already running in this process`);
    this.activeKeys.add(key);
    try {
      return await this.transfer(args, signal);
    } catch (err) {
      this.activeKeys.delete(key);
      throw err;
    }
  }

  /** Where placeWritten puts `written` unless its bytes are stored already (then where they are). */
  addressOf(written: Pick<WrittenFile, "sha256" | "size" | "ext">): StoredFile {
    return { sha256: written.sha256, size: written.size, relPath: originalRelPath(written.sha256, written.ext), deduplicated: false };
  }

  /**
   * Makes written files durable and places them, as one pass for the batch: in the archive folder every file is
   * fsynced (concurrently, so the filesystem can share one journal commit), renamed to its content address (or
   * dropped: those bytes are stored), and then every folder that gained a name fsynced once; a bucket gets each
   * file uploaded (an object is durable when its upload returns; there is nothing to fsync). Settled per file:
   * one that fails leaves the others placed. Only once this returns may a row point at a file.
   */
  async placeWritten(files: readonly WrittenFile[]): Promise<PromiseSettledResult<StoredFile>[]> {
    try {
      const synced = await Promise.allSettled(files.map((f) => this.closeWritten(f)));
      const placed = await Promise.allSettled(
        files.map(async (f, i) => {
          const sync = synced[i];
          if (sync?.status === "rejected") throw sync.reason;
          return this.commit(f.partial, f.sha256, f.size, f.ext, { signal: f.signal, syncDir: false });
        }),
      );
      const dirs = new Set<string>();
      for (const p of placed) if (p.status === "fulfilled" && p.value.placedIn) dirs.add(p.value.placedIn);
      const dirSync = await Promise.allSettled([...dirs].map((dir) => this.disk.syncDir(dir)));
      const dirFailure = dirSync.find((d) => d.status === "rejected");
      return await Promise.all(
        placed.map(async (p, i): Promise<PromiseSettledResult<StoredFile>> => {
          if (p.status === "rejected") return p;
          const { placedIn, ...stored } = p.value;
          // A folder whose new name may not survive a crash: no row may point into it yet.
          if (placedIn && dirFailure) return dirFailure;
          await this.disk.forgetPartialMeta((files[i] as WrittenFile).key);
          return { status: "fulfilled", value: stored };
        }),
      );
    } finally {
      for (const f of files) this.activeKeys.delete(f.key);
    }
  }

  /**
   * A written file's bytes made durable where they are placed from (the archive folder), and its handle closed.
   * A filesystem out of space for them (delayed allocation reports it here) removes the partial file.
   */
  private async closeWritten(f: WrittenFile): Promise<void> {
    try {
      if (this.placesLocally) await f.fh.sync();
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      await this.discardPartial(f.key);
      throw await this.diskFull(err, f.size);
    } finally {
      await f.fh.close().catch(() => undefined);
    }
  }

  private async transfer(args: StoreStreamArgs, signal: AbortSignal | undefined): Promise<WrittenFile> {
    const { key, expectedSize } = args;
    const resumeFrom = Math.max(0, args.resumeFrom ?? 0);
    const ext = safeExtension(args.ext) ?? "bin";
    signal?.throwIfAborted();
    await this.assertSpace(expectedSize !== undefined ? Math.max(0, expectedSize - resumeFrom) : 0);
    const partial = await this.disk.preparePartial(key);
    const hash = createHash("sha256");
    if (resumeFrom > 0) {
      const { size: have } = await this.partialState(key);
      if (have < resumeFrom) throw new RangeError(`cannot resume ${key} from byte ${resumeFrom}: the partial file holds ${have} (use partialState())`);
      await hashInto(partial, hash, resumeFrom);
    }
    const fh = await this.disk.openPartial(partial, resumeFrom);
    // What a resume needs (the ETag, for If-Range) is kept beside the partial file once it holds bytes worth
    // resuming: before the first write of a batch while more may follow, or when a failed transfer keeps its prefix
    // (stopTransfer). A file whose bytes all come in one batch (most, at 512 KiB) never has one: a process killed
    // meanwhile fetches it again from its first byte, with the signed URL it already paid for.
    const meta = { key, etag: args.etag, written: resumeFrom > 0 };
    try {
      if (resumeFrom > 0) await this.disk.writePartialMeta(key, args.etag);
      else await this.disk.forgetPartialMeta(key);
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }

    let size = resumeFrom;
    const writer = new BatchedWriter(fh, resumeFrom);
    let nextSpaceCheck = resumeFrom + SPACE_CHECK_EVERY;
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
        try {
          checkRunningSize(size, { key, expectedSize, maxBytes: args.maxBytes });
        } catch (err) {
          // More than announced, or past the cap: nothing of it is worth resuming.
          discard = true;
          throw err;
        }
        hash.update(chunk);
        if (writer.wouldWrite(chunk.length)) await this.keepResumeMeta(meta);
        await writer.push(chunk);
        if (writer.written >= nextSpaceCheck) {
          nextSpaceCheck = writer.written + SPACE_CHECK_EVERY;
          await this.assertSpace();
        }
      }
      await writer.flush();
      if (expectedSize !== undefined && size !== expectedSize) throw new SizeMismatchError(expectedSize, size, key);
    } catch (err) {
      await this.stopTransfer({ err, meta, fh, writer, iterator, discard, expectedSize });
    }
    const sha256 = hash.digest("hex");
    if (args.expectedSha256 !== undefined && sha256 !== args.expectedSha256) {
      await fh.close();
      await this.discardPartial(key);
      throw new ContentMismatchError(key, `sha256 ${sha256}, expected ${args.expectedSha256}`);
    }
    return { key, partial, fh, sha256, size, ext, signal };
  }

  /**
   * A transfer failed: what arrived is kept for a resume (a valid prefix, whatever was still buffered),
   * unless the disk is full or the bytes are not worth keeping. Always throws.
   */
  private async stopTransfer(args: {
    err: unknown;
    meta: ResumeMeta;
    fh: FileHandle;
    writer: BatchedWriter;
    iterator: AsyncIterator<unknown>;
    discard: boolean;
    expectedSize: number | undefined;
  }): Promise<never> {
    const { err, meta, fh, writer, iterator, discard, expectedSize } = args;
    const { key } = meta;
    // Stop the body (a got stream is destroyed), without waiting on a generator stuck in next().
    void Promise.resolve(iterator.return?.()).catch(() => undefined);
    const full = isDiskFull(err);
    if (!full && !discard) {
      await writer.flush().catch(() => undefined);
      await fh.sync().catch(() => undefined);
      if (writer.written > 0) await this.keepResumeMeta(meta).catch(() => undefined);
    }
    await fh.close().catch(() => undefined);
    if (full || discard) await this.discardPartial(key);
    if (full) throw await this.diskFull(err, expectedSize !== undefined ? Math.max(0, expectedSize - writer.written) : 0);
    throw err;
  }

  /** Writes the partial file's resume metadata, once per transfer; without an ETag there is nothing to resume with. */
  private async keepResumeMeta(meta: ResumeMeta): Promise<void> {
    if (meta.written || meta.etag === undefined) return;
    meta.written = true;
    await this.disk.writePartialMeta(meta.key, meta.etag);
  }

  /** The DiskFullError for a write the filesystem refused for want of space (ENOSPC, EDQUOT). */
  private async diskFull(cause: unknown, neededBytes: number): Promise<DiskFullError> {
    const free = await this.freeBytes().catch(() => 0);
    return new DiskFullError({ root: this.root, freeBytes: free, minFreeBytes: this.minFreeBytes, ...(neededBytes > 0 ? { neededBytes } : {}), cause });
  }

  /**
   * Brings a file from outside the archive in under its content address without changing it: read as src/foreign-file.ts
   * reads one and copied through a partial file, refused unless its bytes hash to `expected.sha256`; or with `link`
   * hard-linked when it sits on the archive's filesystem (checked to be the very file hashed; a copy otherwise),
   * keeping its own permissions: the archive's modes are never applied to the user's inode.
   */
  async adoptFile(args: AdoptFileArgs): Promise<AdoptedFile> {
    const { sha256, size } = args.expected;
    const existing = await this.findStored(sha256, size);
    if (existing) return { sha256, size, relPath: existing, deduplicated: true, linked: false };
    const ext = safeExtension(args.ext) ?? "bin";
    // A hard link only helps where the originals are files of this machine.
    if (args.link && this.placesLocally) {
      const linked = await this.linkIn(args, ext);
      if (linked) return linked;
    }
    // Named for this process and at random, as storeBytes's: two files of the same bytes adopted at once never share
    // it, and the one a killed import left is removed at the next start (src/downloads/partial-sweep.ts).
    const key = writtenPartialKey("adopt", this.writer);
    const stored = await this.storeStream({
      key,
      body: foreignFileChunks(args.from, { maxBytes: size }),
      ext,
      expectedSize: size,
      expectedSha256: sha256,
    }).catch(async (err: unknown) => {
      // Nothing resumes it: what a failed copy kept for a resume goes now.
      await this.disk.discardPartial(key);
      const changed = err instanceof SizeMismatchError || (err instanceof ForeignFileError && err.refusal !== "unreadable");
      throw changed ? new ContentMismatchError(args.from, err.message) : err;
    });
    return { ...stored, linked: false };
  }

  /** A hard link to `from` committed at its content address; undefined when the filesystem refuses the link. */
  private async linkIn(args: AdoptFileArgs, ext: string): Promise<AdoptedFile | undefined> {
    const { sha256, size, ino, mtimeMs } = args.expected;
    const link = await this.disk.linkAsPartial(args.from, writtenPartialKey("adopt", this.writer));
    if (!link) return undefined;
    if (link.ino !== ino || link.size !== size || link.mtimeMs !== mtimeMs) {
      await this.disk.remove(link.partial);
      throw new ContentMismatchError(args.from, "its size, time or inode differs from when it was hashed");
    }
    return { ...(await this.commit(link.partial, sha256, size, ext)), linked: true };
  }

  /** Same for bytes already in memory (journals and literature as HTML). */
  async storeBytes(args: { bytes: Uint8Array; ext: string }): Promise<StoredFile> {
    const ext = safeExtension(args.ext) ?? "bin";
    const bytes = toBuffer(args.bytes);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    const existing = await this.findStored(sha256, bytes.length);
    if (existing) return { sha256, size: bytes.length, relPath: existing, deduplicated: true };
    if (!this.placesLocally) {
      // A bucket's PutObject is whole or nothing by itself: no partial file needed.
      const relPath = originalRelPath(sha256, ext);
      await this.blobs.write(relPath, bytes);
      return { sha256, size: bytes.length, relPath, deduplicated: false };
    }
    // Named for this process and at random (layout.ts): the writer's name lets src/downloads/partial-sweep.ts remove
    // the file a killed process left between the write and the rename.
    const partial = await this.disk.preparePartial(writtenPartialKey("bytes", this.writer));
    try {
      await this.disk.writeFile(partial, bytes, true);
    } catch (err) {
      await this.disk.remove(partial);
      throw isDiskFull(err) ? await this.diskFull(err, bytes.length) : err;
    }
    // Its name is random, so nothing would ever resume it: a failed commit removes it.
    return this.commit(partial, sha256, bytes.length, ext).catch(async (err: unknown) => {
      await this.disk.remove(partial);
      throw err;
    });
  }

  /**
   * Moves a complete, fsynced partial file to its content address in the store (or drops it: those bytes are
   * stored): renamed into place in the archive folder (its folder fsynced, unless `syncDir` is false: then
   * `placedIn` names the folder the caller must fsync before anything points at the file), or uploaded to a
   * bucket and then removed. A failed upload leaves nothing in the bucket and the partial file where it was.
   */
  private async commit(
    partial: string,
    sha256: string,
    size: number,
    ext: string,
    opts: { signal?: AbortSignal | undefined; syncDir?: boolean } = {},
  ): Promise<StoredFile & { placedIn?: string }> {
    const existing = await this.findStored(sha256, size);
    if (existing) {
      await this.disk.remove(partial);
      // Its name may be another process's rename not yet fsynced: the batch's folder pass covers it too.
      const placedIn = this.placesLocally && opts.syncDir === false ? { placedIn: path.dirname(this.disk.resolveInside(existing)) } : {};
      return { sha256, size, relPath: existing, deduplicated: true, ...placedIn };
    }
    const relPath = originalRelPath(sha256, ext);
    if (this.placesLocally) {
      const placedIn = await this.disk.place(partial, relPath, { syncDir: opts.syncDir ?? true });
      return { sha256, size, relPath, deduplicated: false, ...(opts.syncDir === false ? { placedIn } : {}) };
    }
    await this.blobs.putFile(relPath, partial, opts.signal ? { signal: opts.signal } : {});
    await this.disk.remove(partial);
    return { sha256, size, relPath, deduplicated: false };
  }
}
