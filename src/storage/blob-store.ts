// The one interface the archive's bytes are read and written through, keyed by a relative path
// ("originals/ab/cd/<sha256>.jpg", "thumbnails/ab/cd/<sha256>-<size>.s.webp"), with the semantics an object
// store also offers (whole-object writes, prefix listings), so that thumbnails and originals can move to one
// together. The local-disk implementation keeps every rule of local-disk.ts: paths checked to stay inside the
// root, writes through a partial file, fsynced and renamed, the archive's modes.
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { errCode } from "./layout.ts";
import type { LocalDisk } from "./local-disk.ts";

export type BlobInfo = { key: string; size: number };

export interface BlobStore {
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
function checkKey(key: string): string {
  const parts = key.split("/");
  if (key.includes("\0") || key.includes("\\") || parts.some((p) => p === "" || p === "." || p === "..")) {
    throw new RangeError(`not a blob key: ${JSON.stringify(key)}`);
  }
  return key;
}

/** The archive folder on this machine as a BlobStore. */
export class LocalBlobStore implements BlobStore {
  constructor(private readonly disk: LocalDisk) {}

  async read(key: string): Promise<Buffer | undefined> {
    const abs = this.disk.resolveInside(checkKey(key));
    const fh = await fs.open(abs, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0)).catch((err: unknown) => {
      if (errCode(err) === "ENOENT" || errCode(err) === "ELOOP") return undefined;
      throw err;
    });
    if (!fh) return undefined;
    try {
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
    const partial = await this.disk.preparePartial(`blob-${randomBytes(8).toString("hex")}`);
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
    for (const e of entries.filter((x) => x.name.startsWith(start)).sort((a, b) => (a.name < b.name ? -1 : 1))) {
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
