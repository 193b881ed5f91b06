// Storing what was planned: each file glanced at, hashed (and refused if it changes meanwhile), looked at (what
// it is decided by its bytes, classify.ts judgeLook: the bytes of a file already imported are not looked at
// again), copied or hard-linked under its content address, and recorded in one statement with the downloads
// row it fills, if any. A row a downloader may be working on is filled only under that file's download lock.
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { DownloadRepository, type DownloadStatus } from "../../db/download.repository.ts";
import { ImportedFileRepository, type DownloadState, type RowFill } from "../../db/imported-file.repository.ts";
import { removeIfUnreferenced } from "../../downloads/after-store.ts";
import { linksDirtyKey } from "../../downloads/after-store.ts";
import { downloadLockKey } from "../../downloads/download-file.ts";
import { ForeignFileError, foreignChunks, openForeignFile } from "../../foreign-file.ts";
import { acquireLock } from "../../coord/lock.ts";
import { thisWriterTag } from "../../queue/holder.ts";
import { ContentMismatchError, type AdoptedFile } from "../../storage/archive.ts";
import { extensionFor } from "../../storage/extension.ts";
import { openArchive } from "../../storage/store.ts";
import { judgeGlance, judgeLook, judgeSize, type Judgement } from "./classify.ts";
import { glanceAtFile, lookAtFile, type FileLook } from "./file-look.ts";
import { UNMATCHED, type ImportOptions, type ImportReport, type Planned } from "./types.ts";
import type { FolderEntry } from "./walk.ts";

const DEFAULT_CONCURRENCY = 4;
const LOCK_TTL_MS = 60_000;

const ROLE_ORDER = { original: 0, rendition: 1, extra_image: 2 } as const;

export async function adoptAll(args: {
  opts: ImportOptions;
  repo: ImportedFileRepository;
  planned: Planned[];
  report: ImportReport;
  unmatched: (s: { entry: FolderEntry }, reason: string, detail?: string) => void;
}): Promise<void> {
  const { opts, repo, planned, report } = args;
  const { services } = opts;
  const archive = opts.archive ?? openArchive(services.config, { writer: thisWriterTag() });
  const targets = await repo.findImportTargets([...new Set(planned.map((p) => p.deviation.deviationid))]);
  const rows = new Map<string, DownloadState>(targets.rows.filter((r) => r.kind === "original").map((r) => [r.deviationid, r]));
  const known = new Set([
    ...targets.imported.map((i) => `${i.deviationid}:${i.sha256}`),
    ...targets.rows.filter((r) => r.sha256).map((r) => `${r.deviationid}:${r.sha256}`),
  ]);
  // Per deviation, originals first: a rendition then never takes the row an original of the same run fills.
  const groups = new Map<string, Planned[]>();
  for (const p of planned) groups.set(p.deviation.deviationid, [...(groups.get(p.deviation.deviationid) ?? []), p]);
  for (const g of groups.values()) g.sort((a, b) => ROLE_ORDER[a.role] - ROLE_ORDER[b.role] || a.entry.rel.localeCompare(b.entry.rel));
  const downloads = new DownloadRepository(services.pool);
  // Each file's record: one statement per file, small beside hashing and copying it.
  const records = new ImportedFileRepository(services.pool);
  let done = 0;
  let bytes = 0;
  let filled = 0;
  const adoptOne = async (planned: Planned): Promise<void> => {
    const id = planned.deviation.deviationid;
    // A rendition too large for its work is refused before a byte of it is read, a file whose first or last
    // bytes are not the work's before it is hashed.
    const bySize = judgeSize(planned, planned.entry.size, planned.deviation);
    if (bySize) return args.unmatched(planned, UNMATCHED[bySize.refused], bySize.detail);
    let hashed: Awaited<ReturnType<typeof hashUnchanged>>;
    try {
      const glanced = judgeGlance(planned.ext, await glanceAtFile(planned.entry.abs));
      if (glanced) return args.unmatched(planned, UNMATCHED[glanced.refused], glanced.detail);
      hashed = await hashUnchanged(planned.entry.abs);
    } catch (err) {
      // Gone since the walk, or not readable by this user: listed, and the rest goes on.
      const problem = readProblem(err);
      if (!problem) throw err;
      return args.unmatched(planned, problem.reason, problem.code);
    }
    if (!hashed) return args.unmatched(planned, UNMATCHED.changed);
    if (known.has(`${id}:${hashed.sha256}`)) {
      report.duplicates++;
      return;
    }
    const judged = await judge(planned, hashed);
    if ("reason" in judged) return args.unmatched(planned, judged.reason, judged.detail);
    const p = { ...planned, ...judged };
    known.add(`${id}:${hashed.sha256}`);
    const row = rows.get(id);
    const fill = rowFill(p, row, new Date(services.now()));
    // A row the downloader might be working on is filled only under its download lock.
    const lock = fill && row ? await acquireLock(services.coord, downloadLockKey(services.config.redisPrefix, id, "original"), LOCK_TTL_MS) : undefined;
    if (fill && row && !lock) return args.unmatched(p, UNMATCHED.busy);
    try {
      let stored: AdoptedFile;
      try {
        stored = await archive.adoptFile({
          from: p.entry.abs,
          ext: extensionFor({ filename: path.basename(p.entry.abs) }),
          expected: hashed,
          link: opts.link,
        });
      } catch (err) {
        if (err instanceof ContentMismatchError) return args.unmatched(p, UNMATCHED.changed);
        throw err;
      }
      const at = new Date(services.now());
      const result = await records.adoptImportedFile(
        {
          deviationid: id,
          role: p.role,
          rendition: p.rendition,
          path: stored.relPath,
          sha256: stored.sha256,
          size: stored.size,
          sourcePath: p.entry.abs,
          linked: stored.linked,
          evidence: p.evidence,
          at,
        },
        fill,
      );
      if (!result.recorded) {
        report.duplicates++;
        return;
      }
      if (!stored.deduplicated) {
        if (stored.linked) report.bytesLinked += stored.size;
        else report.bytesCopied += stored.size;
      }
      if (p.role === "original") report.originals++;
      else if (p.role === "rendition") report.renditions++;
      else report.extraImages++;
      if (result.filled) {
        filled++;
        const hadOriginal = result.old?.status === "done" && result.old.rendition === "original";
        if (p.role === "original" && !hadOriginal && p.deviation.isDownloadable !== false) report.quotaSaved++;
        rows.set(id, {
          deviationid: id,
          kind: "original",
          status: fill?.status ?? "done",
          rendition: p.rendition ?? "original",
          path: stored.relPath,
          sha256: stored.sha256,
        });
        await removeIfUnreferenced({ repo: downloads, archive, oldPath: result.old?.path ?? null, newPath: stored.relPath });
      }
    } finally {
      await lock?.release();
    }
  };
  const queue = [...groups.values()];
  const worker = async () => {
    for (let g = queue.shift(); g; g = queue.shift()) {
      for (const p of g) {
        opts.signal?.throwIfAborted();
        await adoptOne(p);
        done++;
        bytes += p.entry.size;
        opts.onProgress?.({ phase: "importing", done, total: planned.length, bytes });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? DEFAULT_CONCURRENCY) }, worker));
  // The readable tree (by-user/…) is rebuilt by the next download run or the worker.
  if (filled > 0) await services.coord.put(linksDirtyKey(services.config.redisPrefix), "1");
}

/** Where reading a file broke off: gone or replaced since the walk (a link or a FIFO now) is "changed". */
function readProblem(err: unknown): { reason: string; code: string } | undefined {
  const code = (err as { code?: string }).code;
  if (code === undefined) return undefined;
  return { reason: ["ENOENT", "ELOOP", "ENOTFILE"].includes(code) ? UNMATCHED.changed : UNMATCHED.unreadable, code };
}

/**
 * What a planned file is once its bytes are seen (classify.ts judgeLook), or why it is listed as unmatched. The
 * file looked at must be the one hashed (same inode, size and time): not one put in its place since.
 */
async function judge(
  p: Planned,
  hashed: { ino: number; size: number; mtimeMs: number },
): Promise<Exclude<Judgement, { refused: string }> | { reason: string; detail?: string }> {
  let look: FileLook;
  try {
    look = await lookAtFile(p.entry.abs);
  } catch (err) {
    const problem = readProblem(err);
    if (!problem) throw err;
    return { reason: problem.reason, detail: problem.code };
  }
  if (look.stat.ino !== hashed.ino || look.stat.size !== hashed.size || look.stat.mtimeMs !== hashed.mtimeMs) return { reason: UNMATCHED.changed };
  const judged = judgeLook({ planned: p, ext: p.ext, look, deviation: p.deviation });
  return "refused" in judged ? { reason: UNMATCHED[judged.refused], detail: judged.detail } : judged;
}

/** How a file fills its deviation's downloads row, or null when it is kept beside the row. */
function rowFill(p: Planned, row: DownloadState | undefined, now: Date): RowFill | null {
  const note = `imported from ${p.entry.abs}`;
  const base = { sourceFilename: path.basename(p.entry.abs), note };
  const partial = p.deviation.isMultiMedia ? "multi-image post: the API gives the first image only" : null;
  if (p.role === "original") {
    if (row?.status === "done" && row.rendition === "original") return null;
    return { ...base, status: "done", degradedReason: null, nextAttemptAt: null, isPartial: partial !== null, partialReason: partial };
  }
  if (p.role !== "rendition" || row?.path) return null;
  const offered = p.deviation.isDownloadable !== false;
  const status: DownloadStatus & RowFill["status"] = offered ? "degraded" : "not_downloadable";
  const reason = offered
    ? `imported from a gallery-dl folder: a rendition (${p.rendition ?? "unknown"}), not the original; the original is wanted when the weekly allowance allows`
    : "the artist does not offer the original for download (is_downloadable is false)";
  return { ...base, status, degradedReason: reason, nextAttemptAt: offered ? now : null, isPartial: partial !== null, partialReason: partial };
}

/**
 * sha256, size and identity of a file, or undefined when it changed while it was read (size or time moved, or it
 * is no longer the regular file the walk saw: src/foreign-file.ts opens it without following a link or waiting on a FIFO).
 */
async function hashUnchanged(abs: string): Promise<{ sha256: string; size: number; ino: number; mtimeMs: number } | undefined> {
  let opened: Awaited<ReturnType<typeof openForeignFile>>;
  try {
    opened = await openForeignFile(abs, { maxBytes: Number.MAX_SAFE_INTEGER });
  } catch (err) {
    if (err instanceof ForeignFileError && err.refusal !== "unreadable") return undefined;
    throw err;
  }
  const { handle, stats: before } = opened;
  const hash = createHash("sha256");
  let size = 0;
  try {
    for await (const chunk of foreignChunks(abs, handle, { maxBytes: before.size })) {
      size += chunk.length;
      hash.update(chunk);
    }
  } catch (err) {
    void handle.close().catch(() => undefined);
    if (err instanceof ForeignFileError && err.refusal === "too-large") return undefined;
    throw err;
  }
  await handle.close();
  const after = await fs.lstat(abs);
  if (!after.isFile() || after.ino !== before.ino || after.size !== before.size || after.mtimeMs !== before.mtimeMs || size !== before.size) return undefined;
  return { sha256: hash.digest("hex"), size, ino: after.ino, mtimeMs: after.mtimeMs };
}
