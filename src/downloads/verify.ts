// `dvault verify`: re-hashes every stored file (with progress) against the table, and reports files
// missing, corrupt (bytes that no longer match their sha256) and orphaned (under originals/ but in no
// row). With `fix`, the rows of missing and corrupt files are wanted again — the corrupt bytes moved
// aside to .corrupt/ first, since the content address would otherwise pass them off as the good file.
import fs from "node:fs/promises";
import path from "node:path";
import type { StoredRow } from "../db/download.repository.ts";
import { ImportedFileRepository } from "../db/imported-file.repository.ts";
import type { Logger } from "../log.ts";
import { ORIGINALS_DIR } from "../storage/archive.ts";
import type { DownloadDeps } from "./deps.ts";

export type VerifyReport = {
  files: number;
  rows: number;
  bytes: number;
  ok: number;
  missing: { path: string; deviationids: string[] }[];
  corrupt: { path: string; deviationids: string[]; expected: string | null; actual: string }[];
  orphaned: string[];
  /** Rows marked wanted again (with fix). */
  requeued: number;
  /** Rows whose file is lost for good: the deviation is gone from the service. */
  lost: number;
  durationMs: number;
};

const QUARANTINE_DIR = ".corrupt";
const PAGE = 1000;

export async function verifyArchive(args: { deps: DownloadDeps; fix: boolean; log: Logger; progressEveryMs?: number }): Promise<VerifyReport> {
  const { deps, fix, log } = args;
  const { repo, archive, services } = deps;
  const started = Date.now();
  const byPath = new Map<string, { rows: StoredRow[]; sha256: string | null; size: number | null }>();
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
  const totalBytes = [...byPath.values()].reduce((sum, e) => sum + (e.size ?? 0), 0);
  const report: VerifyReport = {
    files: byPath.size,
    rows: [...byPath.values()].reduce((n, e) => n + e.rows.length, 0),
    bytes: totalBytes,
    ok: 0,
    missing: [],
    corrupt: [],
    orphaned: [],
    requeued: 0,
    lost: 0,
    durationMs: 0,
  };

  let checked = 0;
  let hashedBytes = 0;
  let lastLog = Date.now();
  const okIds: string[] = [];
  for (const [rel, entry] of byPath) {
    const ids = entry.rows.map((r) => r.deviationid);
    let actual: { sha256: string; size: number } | undefined;
    let problem: "missing" | "corrupt" | undefined;
    try {
      actual = await archive.hashFile(rel);
      if (actual.sha256 !== entry.sha256 || (entry.size !== null && actual.size !== entry.size)) problem = "corrupt";
    } catch (err) {
      problem = (err as { code?: string }).code === "ENOENT" ? "missing" : "corrupt";
    }
    checked++;
    hashedBytes += entry.size ?? 0;
    if (!problem) {
      report.ok++;
      okIds.push(...entry.rows.map((r) => r.id));
    } else if (problem === "missing") {
      report.missing.push({ path: rel, deviationids: ids });
    } else {
      report.corrupt.push({ path: rel, deviationids: ids, expected: entry.sha256, actual: actual?.sha256 ?? "unreadable" });
    }
    if (problem && fix) {
      if (problem === "corrupt") await quarantine(deps, rel);
      const note =
        problem === "missing"
          ? "dvault verify: the file is missing"
          : `dvault verify: the file's bytes no longer match its sha256 (moved to ${QUARANTINE_DIR}/)`;
      const requeued = await repo.markFileLost({ path: rel, change: problem, note, at: new Date(services.now()) });
      report.requeued += requeued;
      report.lost += entry.rows.length - requeued;
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
  // Files an import keeps beside a row (a preview next to the original, further images of a post) are no orphans.
  const imported = new Set((await new ImportedFileRepository(services.pool).listImportedPaths()).map((f) => f.path));
  report.orphaned = (await listOriginals(archive.root)).filter((rel) => !byPath.has(rel) && !imported.has(rel));
  report.durationMs = Date.now() - started;
  return report;
}

/** Every file under originals/, as relative POSIX paths. */
async function listOriginals(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const abs = path.join(dir, e.name);
      if (e.isDirectory()) await walk(abs);
      else if (e.isFile()) out.push(path.relative(root, abs).split(path.sep).join("/"));
    }
  };
  await walk(path.join(root, ORIGINALS_DIR));
  return out.sort();
}

/** Moves a corrupt file out of originals/, so a re-download of the right bytes is not "already stored". */
async function quarantine(deps: DownloadDeps, rel: string): Promise<void> {
  const from = deps.archive.resolveInside(rel);
  const to = deps.archive.resolveInside(`${QUARANTINE_DIR}/${path.basename(rel)}.${Date.now()}`);
  await fs.mkdir(path.dirname(to), { recursive: true, mode: 0o700 });
  await fs.rename(from, to).catch((err: unknown) => {
    if ((err as { code?: string }).code !== "ENOENT") throw err;
  });
}
