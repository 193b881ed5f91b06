// `dvault verify`: checks every stored file (with progress) against the table through the blob store
// (src/storage/store.ts), the downloads rows' files and those an import keeps beside them, and reports files
// missing, corrupt (bytes that no longer match their sha256, or of another size) and orphaned (under
// originals/ but in no row). A deep check re-hashes every object (the default for the local folder, where
// reading is cheap); a shallow one asks each object's size only (one HEAD per object in a bucket). With `fix`,
// the rows of missing and corrupt files are wanted again — the corrupt bytes moved aside to .corrupt/ first,
// since the content address would otherwise pass them off as the good file (in a bucket: copied to a .corrupt/
// key, then removed) — and the import records of those bytes are dropped.
import fs from "node:fs/promises";
import path from "node:path";
import type { StoredRow } from "../db/download.repository.ts";
import { ImportedFileRepository } from "../db/imported-file.repository.ts";
import type { Logger } from "../log.ts";
import { thisWriterTag } from "../queue/holder.ts";
import { ORIGINALS_DIR, OutsideArchiveError, PARTIAL_DIR } from "../storage/layout.ts";
import { QUARANTINE_DIR } from "../storage/layout.ts";
import { copyBlob, hashBlob } from "../storage/blob-transfer.ts";
import { originalKeyOf } from "../storage/links.ts";
import { storeErrorOf } from "../storage/store-error.ts";
import type { DownloadDeps } from "./deps.ts";

export type VerifyReport = {
  files: number;
  rows: number;
  bytes: number;
  ok: number;
  /** `found`: what stands at the file's name in the local folder when it is not a regular file (a link, a FIFO...). */
  missing: { path: string; deviationids: string[]; found?: string }[];
  /** `actual` is the sha256 found (deep), "unreadable", or undefined when only the size was compared (`actualSize`). */
  corrupt: {
    path: string;
    deviationids: string[];
    expected: string | null;
    actual: string | undefined;
    expectedSize: number | null;
    actualSize: number | undefined;
  }[];
  /**
   * Files that could not be read to the end (a network error from a bucket, an I/O error): neither set aside
   * nor wanted again, since the bytes may be fine; a later run checks them again.
   */
  /** `linkedOut`: behind a folder that links out of the archive, never read (no second run changes that). */
  unreadable: { path: string; deviationids: string[]; reason: string; linkedOut?: true }[];
  /** Whether every object was re-hashed, or only its size compared. */
  deep: boolean;
  orphaned: string[];
  /** Rows marked wanted again (with fix). */
  requeued: number;
  /** Rows whose file is lost for good: the deviation is gone from the service. */
  lost: number;
  /** Records of imported files dropped (with fix) because the archive no longer holds their bytes. */
  forgotten: number;
  durationMs: number;
};

const PAGE = 1000;

type Checked = {
  problem: "missing" | "corrupt" | "unreadable" | undefined;
  actual?: string;
  actualSize?: number;
  reason?: string;
  found?: string;
  linkedOut?: true;
};

/** Why a read failed, for the report: the error's code and HTTP status, never its text (which may carry an address). */
function readFailure(err: unknown): string {
  const { code, status } = storeErrorOf(err);
  return `${code || "error"}${status !== undefined ? ` (HTTP ${status})` : ""}`;
}

/**
 * What stands at a local object's name that the blob store does not take for its file (a link, a FIFO...), or
 * undefined when nothing does, or a regular file (reached through a folder above it that links out of the archive).
 * Looked at without following a link at the name.
 */
async function notAFile(deps: DownloadDeps, key: string): Promise<string | undefined> {
  if (deps.archive.blobs.kind !== "local") return undefined;
  const st = await fs.lstat(path.join(deps.archive.root, key)).catch(() => undefined);
  if (!st) return undefined;
  if (st.isFile()) return undefined;
  if (st.isSymbolicLink()) return "a symbolic link";
  if (st.isFIFO()) return "a FIFO";
  if (st.isDirectory()) return "a folder";
  if (st.isSocket()) return "a socket";
  return "a device";
}

/** One stored file against its row: re-hashed when `deep`, else its size compared (existence when none is known). */
async function checkOne(deps: DownloadDeps, rel: string, expected: { sha256: string | null; size: number | null }, deep: boolean): Promise<Checked> {
  const key = originalKeyOf(rel, deps.archive.root);
  if (!key) return { problem: "corrupt", actual: "unreadable" };
  try {
    return await checkStored(deps, key, expected, deep);
  } catch (err) {
    // The blob store refuses a path that leads out of the archive. A link at the file's own name stands where the file
    // should be; a folder above it that links out may hold the files whole (moved to another disk): nothing of those is
    // set aside or wanted again, which would spend the weekly allowance on files that are there.
    if (!(err instanceof OutsideArchiveError)) throw err;
    const found = await notAFile(deps, key);
    return found
      ? { problem: "missing", found }
      : { problem: "unreadable", reason: "a folder above it links out of the archive (OutsideArchiveError)", linkedOut: true };
  }
}

async function checkStored(deps: DownloadDeps, key: string, expected: { sha256: string | null; size: number | null }, deep: boolean): Promise<Checked> {
  if (!deep) {
    const info = await deps.archive.blobs.stat(key);
    if (!info) return { problem: "missing", found: await notAFile(deps, key) };
    return { problem: expected.size !== null && info.size !== expected.size ? "corrupt" : undefined, actualSize: info.size };
  }
  let actual: Awaited<ReturnType<typeof hashBlob>>;
  try {
    actual = await hashBlob(deps.archive.blobs, key);
  } catch (err) {
    if (err instanceof OutsideArchiveError) throw err;
    // A read that broke off says nothing about the bytes: setting them aside would lose a good file.
    return { problem: "unreadable", reason: readFailure(err) };
  }
  if (!actual) return { problem: "missing", found: await notAFile(deps, key) };
  const bad = actual.sha256 !== expected.sha256 || (expected.size !== null && actual.size !== expected.size);
  return { problem: bad ? "corrupt" : undefined, actual: actual.sha256, actualSize: actual.size };
}

export async function verifyArchive(args: { deps: DownloadDeps; fix: boolean; log: Logger; deep?: boolean; progressEveryMs?: number }): Promise<VerifyReport> {
  const { deps, fix, log } = args;
  const { repo, archive, services } = deps;
  const deep = args.deep ?? archive.blobs.kind === "local";
  const started = Date.now();
  // `importedIds`: a file only an import keeps (no downloads row points at it), for its deviations.
  const byPath = new Map<string, { rows: StoredRow[]; sha256: string | null; size: number | null; importedIds?: string[] }>();
  for (let afterId = "0"; ; ) {
    const rows = await repo.listStoredDownloads({ afterId, limit: PAGE });
    for (const row of rows) {
      const entry = byPath.get(row.path) ?? { rows: [], sha256: row.sha256, size: row.size };
      entry.rows.push(row);
      byPath.set(row.path, entry);
    }
    const last = rows[rows.length - 1];
    if (!last || rows.length < PAGE) break;
    afterId = last.id;
  }
  // Files an import keeps beside a row (a preview next to the original, further images of a post, a copy of an
  // original already stored) are checked like the rows' own: one hard-linked with --link and then edited in the
  // user's folder has changed here too.
  const importedRepo = new ImportedFileRepository(services.pool);
  const importedFiles = await importedRepo.listImportedPaths();
  let besideRecords = 0;
  for (const f of importedFiles) {
    if (byPath.has(f.path)) continue;
    byPath.set(f.path, { rows: [], sha256: f.sha256, size: f.size, importedIds: f.deviationids });
    besideRecords += f.records;
  }
  const totalBytes = [...byPath.values()].reduce((sum, e) => sum + (e.size ?? 0), 0);
  const report: VerifyReport = {
    files: byPath.size,
    rows: [...byPath.values()].reduce((n, e) => n + e.rows.length, 0) + besideRecords,
    bytes: totalBytes,
    ok: 0,
    missing: [],
    corrupt: [],
    unreadable: [],
    orphaned: [],
    deep,
    requeued: 0,
    lost: 0,
    forgotten: 0,
    durationMs: 0,
  };

  let checked = 0;
  let hashedBytes = 0;
  let lastLog = Date.now();
  const okIds: string[] = [];
  for (const [rel, entry] of byPath) {
    const ids = entry.importedIds ?? entry.rows.map((r) => r.deviationid);
    const { problem, actual, actualSize, reason, found, linkedOut } = await checkOne(deps, rel, entry, deep);
    checked++;
    hashedBytes += entry.size ?? 0;
    if (!problem) {
      report.ok++;
      okIds.push(...entry.rows.map((r) => r.id));
    } else if (problem === "missing") {
      report.missing.push({ path: rel, deviationids: ids, ...(found ? { found } : {}) });
    } else if (problem === "unreadable") {
      report.unreadable.push({ path: rel, deviationids: ids, reason: reason ?? "error", ...(linkedOut ? { linkedOut } : {}) });
    } else {
      report.corrupt.push({ path: rel, deviationids: ids, expected: entry.sha256, actual, expectedSize: entry.size, actualSize });
    }
    if ((problem === "missing" || problem === "corrupt") && fix) {
      if (problem === "corrupt" && (await setAsideCorrupt(deps, rel, entry)) === "whole again") {
        // A download stored the right bytes at the address between the check and the move: nothing to fix.
        report.corrupt.pop();
        report.ok++;
        okIds.push(...entry.rows.map((r) => r.id));
        continue;
      }
      if (found) await setAsideInTheWay(deps, rel);
      const note =
        problem === "missing" ? "dvault verify: the file is missing" : `dvault verify: its bytes no longer match its sha256 (moved to ${QUARANTINE_DIR}/)`;
      if (entry.rows.length > 0) {
        const requeued = await repo.markFileLost({ path: rel, change: problem, note, at: new Date(services.now()) });
        report.requeued += requeued;
        report.lost += entry.rows.length - requeued;
      }
      // The imports' records of these bytes go with them: a later import may bring the file again.
      report.forgotten += await importedRepo.forgetImportedPath(rel);
    }
    if (okIds.length >= PAGE) await repo.markDownloadsVerified(okIds.splice(0), new Date(services.now()));
    if (Date.now() - lastLog >= (args.progressEveryMs ?? 2000)) {
      lastLog = Date.now();
      log.info(
        { files: `${checked}/${byPath.size}`, bytes: `${hashedBytes}/${totalBytes}`, missing: report.missing.length, corrupt: report.corrupt.length },
        "verifying",
      );
    }
  }
  await repo.markDownloadsVerified(okIds, new Date(services.now()));
  // Files an import keeps beside a row are no orphans.
  const imported = new Set(importedFiles.map((f) => f.path));
  const known = new Set([...byPath.keys(), ...imported].map((p) => originalKeyOf(p, archive.root) ?? p));
  try {
    for await (const info of archive.blobs.list(`${ORIGINALS_DIR}/`)) if (!known.has(info.key)) report.orphaned.push(info.key);
  } catch (err) {
    // The listing broke off: orphans are unknown this time, which the report says like any unread file.
    report.unreadable.push({ path: `${ORIGINALS_DIR}/`, deviationids: [], reason: readFailure(err) });
  }
  report.durationMs = Date.now() - started;
  return report;
}

/**
 * Moves what stands at a stored file's name instead of the file (a link, a FIFO, a folder) to .corrupt/, never reading
 * it or what it leads to, so that the file fetched again can take the name: nothing of it is removed.
 */
async function setAsideInTheWay(deps: DownloadDeps, rel: string): Promise<void> {
  const key = originalKeyOf(rel, deps.archive.root);
  if (!key) return;
  const from = path.join(deps.archive.resolveInside(path.posix.dirname(key)), path.posix.basename(key));
  const to = deps.archive.resolveInside(`${QUARANTINE_DIR}/${path.posix.basename(key)}.${Date.now()}`);
  await fs.mkdir(path.dirname(to), { recursive: true, mode: 0o700 });
  await fs.rename(from, to).catch((err: unknown) => {
    if ((err as { code?: string }).code !== "ENOENT") throw err;
  });
}

/**
 * Moves a corrupt file out of originals/, so a re-download of the right bytes is not "already stored": renamed
 * within the archive folder, or in a bucket copied to a .corrupt/ key and then removed. The bytes set aside are
 * hashed on the way: a download of the same content that stored the right bytes at the address after the
 * check (another host, while verify ran) finds them left there, "whole again", and nothing set aside.
 */
export async function setAsideCorrupt(
  deps: DownloadDeps,
  rel: string,
  expected: { sha256: string | null; size: number | null },
): Promise<"set aside" | "whole again" | "gone"> {
  const { archive } = deps;
  const key = originalKeyOf(rel, archive.root);
  if (!key) return "gone";
  const aside = `${QUARANTINE_DIR}/${path.posix.basename(key)}.${Date.now()}`;
  const whole = (got: { sha256: string; size: number }) => got.sha256 === expected.sha256 && (expected.size === null || got.size === expected.size);
  if (archive.blobs.kind === "s3") {
    const tmpDir = archive.resolveInside(PARTIAL_DIR);
    await fs.mkdir(tmpDir, { recursive: true, mode: 0o700 });
    const copied = await copyBlob({ from: archive.blobs, to: archive.blobs, key, toKey: aside, tmpDir, writer: thisWriterTag() });
    if (!copied) return "gone";
    if (whole(copied)) {
      await archive.blobs.remove(aside);
      return "whole again";
    }
    await archive.blobs.remove(key);
    return "set aside";
  }
  const from = archive.resolveInside(key);
  const to = archive.resolveInside(aside);
  await fs.mkdir(path.dirname(to), { recursive: true, mode: 0o700 });
  const moved = await fs.rename(from, to).then(
    () => true,
    (err: unknown) => {
      if ((err as { code?: string }).code !== "ENOENT") throw err;
      return false;
    },
  );
  if (!moved) return "gone";
  if (!whole(await archive.hashFile(aside))) return "set aside";
  // Back to its address, unless a download has put the same bytes there meanwhile (link never replaces).
  await fs.link(to, from).catch((err: unknown) => {
    if ((err as { code?: string }).code !== "EEXIST") throw err;
  });
  await fs.rm(to, { force: true });
  return "whole again";
}
