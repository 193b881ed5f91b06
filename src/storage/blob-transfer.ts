// Whole objects moved between a blob store (blob-store.ts) and this machine, or between two stores, with their
// sha256 and size taken on the way: `dvault storage migrate`, backup and restore, and verify's quarantine all
// copy this way. The bytes stream through a temp file of this machine (never all in memory), which the store's
// putFile then takes whole or not at all.
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { BlobStore } from "./blob-store.ts";
import { checkWriterName, writtenPartialKey } from "./layout.ts";

export type BlobDigest = { sha256: string; size: number };

/** A pass-through that hashes and counts, and tells `onBytes` of every chunk. */
function hashing(onBytes?: (n: number) => void): Transform & { digest(): BlobDigest } {
  const hash = createHash("sha256");
  let size = 0;
  const t = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      size += chunk.length;
      onBytes?.(chunk.length);
      done(null, chunk);
    },
  });
  return Object.assign(t, { digest: () => ({ sha256: hash.digest("hex"), size }) });
}

/** sha256 and size of an object, read as a stream; undefined when there is none. */
export async function hashBlob(store: BlobStore, key: string, opts: { signal?: AbortSignal } = {}): Promise<BlobDigest | undefined> {
  const found = await store.openRead(key);
  if (!found) return undefined;
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of found.body as AsyncIterable<Buffer>) {
    opts.signal?.throwIfAborted();
    hash.update(chunk);
    size += chunk.length;
  }
  return { sha256: hash.digest("hex"), size };
}

/** Writes an object to `file` of this machine (created, or replaced); undefined when there is no such object. */
export async function downloadBlob(args: {
  store: BlobStore;
  key: string;
  file: string;
  signal?: AbortSignal;
  onBytes?: (n: number) => void;
}): Promise<BlobDigest | undefined> {
  const found = await args.store.openRead(args.key);
  if (!found) return undefined;
  await fs.mkdir(path.dirname(args.file), { recursive: true, mode: 0o700 });
  const tap = hashing(args.onBytes);
  const out = createWriteStream(args.file, { mode: 0o600 });
  try {
    await pipeline(found.body, tap, out, args.signal ? { signal: args.signal } : {});
  } catch (err) {
    // A stop can end the pipeline while the file is still being opened: wait until it is closed, so that a caller
    // removing the file afterwards (src/storage/migrate-store.ts) does not see it created again after the removal.
    if (!out.closed) await once(out, "close").catch(() => undefined);
    throw err;
  }
  return tap.digest();
}

/**
 * Copies one object from `from` to `to` (under `toKey`, the same key by default) through a temp file in
 * `tmpDir`, which is always removed. Returns what was read, or undefined when the source has no such object. The temp
 * file names `writer` (src/queue/holder.ts's thisWriterTag) when given: with tmpDir the archive's .partial/, the one a
 * killed process left is removed at the next start (src/downloads/partial-sweep.ts).
 */
export async function copyBlob(args: {
  from: BlobStore;
  to: BlobStore;
  key: string;
  toKey?: string;
  tmpDir: string;
  writer?: string;
  signal?: AbortSignal;
  onBytes?: (n: number) => void;
}): Promise<BlobDigest | undefined> {
  const tmp = path.join(args.tmpDir, writtenPartialKey("copy", checkWriterName(args.writer)));
  try {
    const got = await downloadBlob({
      store: args.from,
      key: args.key,
      file: tmp,
      ...(args.signal ? { signal: args.signal } : {}),
      ...(args.onBytes ? { onBytes: args.onBytes } : {}),
    });
    if (!got) return undefined;
    await args.to.putFile(args.toKey ?? args.key, tmp, args.signal ? { signal: args.signal } : {});
    return got;
  } finally {
    await fs.rm(tmp, { force: true });
  }
}
