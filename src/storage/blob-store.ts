// The one interface the archive's bytes are read and written through, keyed by a relative path
// ("originals/ab/cd/<sha256>.jpg", "thumbnails/ab/cd/<sha256>-<size>.s.webp"), with the semantics an object
// store also offers (whole-object writes, prefix listings), so that thumbnails and originals can move to one
// together. The local-disk implementation keeps every rule of local-disk.ts: paths checked to stay inside the
// root, writes through a partial file, fsynced and renamed, the archive's modes. The partial file is named for its
// writer (layout.ts's writtenPartialKey), so that the one a process killed before the rename left is removed at the
// next start (src/downloads/partial-sweep.ts).
import fs, { type FileHandle } from "node:fs/promises";
import path from "node:path";
import { checkWriterName, errCode, writtenPartialKey } from "./layout.ts";
import type { LocalDisk } from "./local-disk.ts";

export type BlobInfo = { key: string; size: number };

/** A byte range of an object, both ends included (as in an HTTP Range header); `end` defaults to the last byte. */
export type BlobRange = { start: number; end?: number };

export type BlobDownload = { body: NodeJS.ReadableStream; size: number; range?: { start: number; end: number } };

export interface BlobStore {
  /** "local" (the archive folder) or "s3" (an S3-compatible bucket). */
  readonly kind: "local" | "s3";
  /** Where the objects are, for messages: the folder, or s3://bucket/prefix at the endpoint. Never a secret. */
  describe(): string;
  /** The object (or a range of it) as a stream, or undefined when there is none. */
  openRead(key: string, range?: BlobRange): Promise<BlobDownload | undefined>;
  /**
   * Puts a complete file of this machine under `key`, or nothing (a failed upload is aborted and leaves no
   * object or unfinished multipart upload). The file is not changed; the local driver may hard-link it, so
   * the caller must not write to it afterwards (remove it instead).
   */
  putFile(key: string, file: string, opts?: { signal?: AbortSignal; contentType?: string }): Promise<void>;
  /**
   * A URL a browser can GET the object from for `ttlSeconds`, or undefined when the store has none (local)
   * or is not configured to hand them out.
   */
  presignGet(key: string, opts: { ttlSeconds: number; contentType?: string; filename?: string }): Promise<string | undefined>;
  /** The whole object, or undefined when there is none. */
  read(key: string): Promise<Buffer | undefined>;
  /** The object's size, or undefined when there is none. */
  stat(key: string): Promise<BlobInfo | undefined>;
  /** Writes the whole object or nothing (a reader never sees half of it); replaces one already there. */
  write(key: string, bytes: Uint8Array): Promise<void>;
  remove(key: string): Promise<void>;
  /** Every object whose key starts with `prefix` (a folder "a/b/" or part of a name "a/b/c1"), in key order. */
  list(prefix: string): AsyncIterable<BlobInfo>;
}

/** Object keys are relative POSIX paths with no empty, "." or ".." segment. */
export function checkKey(key: string): string {
  if (!isBlobKey(key)) throw new RangeError(`not a blob key: ${JSON.stringify(key)}`);
  return key;
}

/** Whether `key` could be one of dvault's blobs: relative, its segments named (none empty, `.` or `..`). */
export function isBlobKey(key: string): boolean {
  return !key.includes("\0") && !key.includes("\\") && !key.split("/").some((p) => p === "" || p === "." || p === "..");
}

export type LocalBlobStoreOptions = {
  /**
   * This process as the writer of the partial files under the root's .partial/ (src/queue/holder.ts's thisWriterTag,
   * given by the caller: storage does not import the queue); without it they are named at random and go only by age.
   */
  writer?: string | undefined;
};

/** The archive folder on this machine as a BlobStore. */
export class LocalBlobStore implements BlobStore {
  readonly kind = "local";
  private readonly writer: string | undefined;
  constructor(
    private readonly disk: LocalDisk,
    options: LocalBlobStoreOptions = {},
  ) {
    this.writer = checkWriterName(options.writer);
  }

  /** The archive folder the objects are files of. */
  get root(): string {
    return this.disk.root;
  }

  describe(): string {
    return this.disk.root;
  }

  /**
   * The object's file opened for reading, never through a link at its own name and never waiting on a FIFO put there
   * (an open of one without a writer would hold verify, a thumbnail or a page for ever, and keep the process from
   * exiting); undefined when there is none. Callers refuse what fstat says is not a regular file.
   */
  private async openObject(key: string): Promise<FileHandle | undefined> {
    const abs = this.disk.resolveInside(checkKey(key));
    const flags = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);
    return fs.open(abs, flags).catch((err: unknown) => {
      if (errCode(err) === "ENOENT" || errCode(err) === "ELOOP") return undefined;
      throw err;
    });
  }

  async openRead(key: string, range?: BlobRange): Promise<BlobDownload | undefined> {
    const fh = await this.openObject(key);
    if (!fh) return undefined;
    const st = await fh.stat();
    if (!st.isFile()) {
      await fh.close();
      return undefined;
    }
    if (!range) return { body: fh.createReadStream({ highWaterMark: 1024 * 1024 }), size: st.size };
    const end = Math.min(range.end ?? st.size - 1, st.size - 1);
    if (range.start > end) {
      await fh.close();
      throw new RangeError(`range ${range.start}-${range.end ?? ""} lies outside ${key} (${st.size} bytes)`);
    }
    return { body: fh.createReadStream({ start: range.start, end, highWaterMark: 1024 * 1024 }), size: st.size, range: { start: range.start, end } };
  }

  async putFile(key: string, file: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    opts.signal?.throwIfAborted();
    // Through a partial copy, so the caller's file stays theirs and a reader never sees half an object.
    const partial = await this.disk.preparePartial(writtenPartialKey("blob", this.writer));
    try {
      await fs.copyFile(file, partial);
      const fh = await fs.open(partial, "r+");
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      await this.disk.place(partial, checkKey(key));
    } catch (err) {
      await this.disk.remove(partial);
      throw err;
    }
  }

  async presignGet(): Promise<string | undefined> {
    return undefined;
  }

  async read(key: string): Promise<Buffer | undefined> {
    const fh = await this.openObject(key);
    if (!fh) return undefined;
    try {
      if (!(await fh.stat()).isFile()) return undefined;
      return await fh.readFile();
    } finally {
      await fh.close();
    }
  }

  async stat(key: string): Promise<BlobInfo | undefined> {
    const st = await fs.lstat(this.disk.resolveInside(checkKey(key))).catch(() => undefined);
    return st?.isFile() ? { key, size: st.size } : undefined;
  }

  async write(key: string, bytes: Uint8Array): Promise<void> {
    const partial = await this.disk.preparePartial(writtenPartialKey("blob", this.writer));
    try {
      await this.disk.writeFile(partial, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), true);
      await this.disk.place(partial, checkKey(key));
    } catch (err) {
      await this.disk.remove(partial);
      throw err;
    }
  }

  async remove(key: string): Promise<void> {
    await this.disk.remove(this.disk.resolveInside(checkKey(key)));
  }

  async *list(prefix: string): AsyncIterable<BlobInfo> {
    const slash = prefix.lastIndexOf("/");
    const dir = slash < 0 ? "" : prefix.slice(0, slash);
    const start = prefix.slice(slash + 1);
    yield* this.walk(dir, start);
  }

  private async *walk(dir: string, start: string): AsyncIterable<BlobInfo> {
    const abs = dir === "" ? this.disk.root : this.disk.resolveInside(checkKey(dir));
    const entries = await fs.readdir(abs, { withFileTypes: true }).catch((err: unknown) => {
      if (errCode(err) === "ENOENT" || errCode(err) === "ENOTDIR") return [];
      throw err;
    });
    // A folder sorts as its name and a slash, so that the walk yields keys in the order a bucket lists them
    // ("a-c" before "a/b", since "-" comes before "/").
    const sortName = (x: { name: string; isDirectory(): boolean }) => (x.isDirectory() ? `${x.name}/` : x.name);
    for (const e of entries.filter((x) => x.name.startsWith(start)).sort((a, b) => (sortName(a) < sortName(b) ? -1 : 1))) {
      const key = dir === "" ? e.name : `${dir}/${e.name}`;
      // Links are not followed: the archive's own objects are plain files and folders.
      if (e.isDirectory()) yield* this.walk(key, "");
      else if (e.isFile()) {
        const st = await fs.lstat(path.join(abs, e.name)).catch(() => undefined);
        if (st?.isFile()) yield { key, size: st.size };
      }
    }
  }
}
