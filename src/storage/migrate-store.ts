// `dvault storage migrate`: every original and thumbnail of one blob store copied into another (the local
// folder into a bucket, or back), each verified where it landed — its size, and for an original the sha256
// its key names, hashed again from the target. The source is only ever read. An object already in the target
// with the right size (and, for an original, the right hash) is skipped, so a run stopped half way resumes
// where it stopped and a second run copies nothing (docs/storage-readers.md#migrating).
import fs from "node:fs/promises";
import path from "node:path";
import type { BlobInfo, BlobStore } from "./blob-store.ts";
import { downloadBlob, hashBlob } from "./blob-transfer.ts";
import { checkWriterName, errCode, ORIGINALS_DIR, writtenPartialKey } from "./layout.ts";
import { DISK_FULL_CODES, folderFault, StorageFaultError } from "./storage-fault.ts";
import { originalOf, THUMBNAILS_DIR } from "./thumbnails.ts";

export const MIGRATED_PREFIXES = [`${ORIGINALS_DIR}/`, `${THUMBNAILS_DIR}/`] as const;

export type MigrateResult = {
  objects: number;
  copied: number;
  /** Already in the target, whole. */
  skipped: number;
  bytes: number;
  /** Objects not copied, with why (a source whose bytes do not match its key, a read or write that failed). */
  failed: { key: string; reason: string }[];
};

/** What a migration tells as it goes: the events of src/queue/progress.ts it uses, so a terminal draws them as a download's. */
export type MigrateProgress =
  | { type: "start"; task: { kind: "transfer"; id: string; label: string } }
  | { type: "bytes"; id: string; bytes: number }
  | { type: "end"; id: string; outcome: string }
  | { type: "files"; finished: number; total: number };

export type MigrateOptions = {
  from: BlobStore;
  to: BlobStore;
  /** A folder of this machine for the copies on their way (each removed once placed). */
  tmpDir: string;
  /**
   * This process as the copies' writer (src/queue/holder.ts's thisWriterTag), named in them: with tmpDir the archive's
   * .partial/, a copy a killed run left is removed at the next start (src/downloads/partial-sweep.ts).
   */
  writer?: string;
  /** Objects copied at once (default 4): a bucket answers each request slowly but many in parallel. */
  concurrency?: number;
  signal?: AbortSignal;
  progress?: (event: MigrateProgress) => void;
};

/** Whether `key` in `to` is already the object `info` of the source: the same size, and for an original its sha256. */
async function alreadyThere(to: BlobStore, info: BlobInfo, signal: AbortSignal | undefined): Promise<boolean> {
  const there = await to.stat(info.key);
  if (!there || there.size !== info.size) return false;
  const sha256 = originalOf(info)?.sha256;
  if (!sha256) return true;
  return (await hashBlob(to, info.key, signal ? { signal } : {}))?.sha256 === sha256;
}

/** Copies one object and checks it in the target; a string says why it was not copied. */
async function copyOne(o: MigrateOptions, info: BlobInfo, onBytes: (n: number) => void): Promise<number | string> {
  const sha256 = originalOf(info)?.sha256;
  const tmp = path.join(o.tmpDir, writtenPartialKey("migrate", checkWriterName(o.writer)));
  const signal = o.signal ? { signal: o.signal } : {};
  try {
    const got = await downloadBlob({ store: o.from, key: info.key, file: tmp, onBytes, ...signal });
    if (!got) return "gone from the source while migrating";
    if (sha256 && got.sha256 !== sha256) return `the source's bytes hash to ${got.sha256}, not the sha256 of its key: run dvault verify`;
    await o.to.putFile(info.key, tmp, signal);
    const landed = sha256 ? await hashBlob(o.to, info.key, signal) : await o.to.stat(info.key);
    if (landed?.size !== got.size || (sha256 && (landed as { sha256?: string }).sha256 !== sha256)) {
      return "the copy in the target does not match what was read: run again";
    }
    return got.size;
  } finally {
    await fs.rm(tmp, { force: true });
  }
}

/**
 * Every object of the source, listed again once a pass is done until a listing finds none it had not: a worker that
 * still downloads into the source meanwhile (docs/storage-readers.md#migrating) writes objects the first listing
 * did not hold, which the "every object is in the target" of the end would otherwise leave behind.
 */
export async function migrateStore(o: MigrateOptions): Promise<MigrateResult> {
  const listed = new Set<string>();
  let objects = await unlisted(o.from, listed);
  await fs.mkdir(o.tmpDir, { recursive: true, mode: 0o700 });
  const result: MigrateResult = { objects: 0, copied: 0, skipped: 0, bytes: 0, failed: [] };
  const pass = { finished: 0 };
  do {
    result.objects += objects.length;
    o.progress?.({ type: "files", finished: pass.finished, total: result.objects });
    await copyAll(o, objects, result, pass);
    objects = await unlisted(o.from, listed);
  } while (objects.length > 0);
  return result;
}

/** The objects of `from` to migrate that `listed` does not hold yet, added to it. */
async function unlisted(from: BlobStore, listed: Set<string>): Promise<BlobInfo[]> {
  const objects: BlobInfo[] = [];
  for (const prefix of MIGRATED_PREFIXES) {
    for await (const info of from.list(prefix)) {
      if (listed.has(info.key)) continue;
      listed.add(info.key);
      objects.push(info);
    }
  }
  return objects;
}

/**
 * A failure of a place, not of one object: the target or the source cannot take or give any file (its disk full or
 * read-only, a bucket refusing or gone). The run stops at the first, in one line: every object after it would fail
 * the same way, each read from the source first (a bucket's egress) and each listed as a failure to "run again".
 */
function placeFault(err: unknown, to: BlobStore, result: MigrateResult): StorageFaultError | undefined {
  const code = errCode(err) ?? "";
  if (DISK_FULL_CODES.has(code)) {
    const where = to.describe();
    return new StorageFaultError(
      { where, code },
      `${where} is full (${code}) after ${result.copied} object(s) copied: free space there, then run it again (what arrived whole is skipped)`,
    );
  }
  // A bucket's own faults come as StorageFaultError (s3-blob-store.ts); of a folder's, only a read-only one surely is the
  // place's (EACCES on one source file unreadable is that file's).
  if (err instanceof StorageFaultError) return err;
  return code === "EROFS" ? folderFault(err) : undefined;
}

/** One pass over `objects`, `o.concurrency` at a time, into `result`; the first fault of a place stops every worker. */
async function copyAll(o: MigrateOptions, objects: BlobInfo[], result: MigrateResult, pass: { finished: number }): Promise<void> {
  const progress = o.progress ?? (() => undefined);
  let next = 0;
  let stopped = false;
  const worker = async (): Promise<void> => {
    while (next < objects.length && !stopped) {
      o.signal?.throwIfAborted();
      const info = objects[next++] as BlobInfo;
      if (await alreadyThere(o.to, info, o.signal)) {
        result.skipped++;
      } else {
        progress({ type: "start", task: { kind: "transfer", id: info.key, label: info.key.slice(info.key.lastIndexOf("/") + 1) } });
        const copied = await copyOne(o, info, (n) => progress({ type: "bytes", id: info.key, bytes: n })).catch((err: unknown) => {
          if (o.signal?.aborted || placeFault(err, o.to, result)) throw err;
          return err instanceof Error ? err.message : String(err);
        });
        progress({ type: "end", id: info.key, outcome: typeof copied === "number" ? "copied" : "failed" });
        if (typeof copied === "number") {
          result.copied++;
          result.bytes += copied;
        } else {
          result.failed.push({ key: info.key, reason: copied });
        }
      }
      progress({ type: "files", finished: ++pass.finished, total: result.objects });
    }
  };
  const stopOthers = (err: unknown) => {
    stopped = true;
    throw err;
  };
  // Every worker stopped (and its temp file gone) before an abort or a fault is passed on.
  const settled = await Promise.allSettled(Array.from({ length: Math.max(1, o.concurrency ?? 4) }, () => worker().catch(stopOthers)));
  if (o.signal?.aborted) throw o.signal.reason;
  const failure = settled.find((s) => s.status === "rejected");
  if (failure) throw placeFault(failure.reason, o.to, result) ?? failure.reason;
}
