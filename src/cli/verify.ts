// `dvault verify [--fix] [--deep|--no-deep]`: checks the archive's blob store against the downloads table (with
// progress) and reports missing, corrupt and orphaned files; --fix wants the missing and corrupt ones again.
import { statSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { loadConfig } from "../config.ts";
import { downloadDepsFor } from "../downloads/deps.ts";
import { type InertTextsResult, makeStoredTextsInert } from "../downloads/inert-texts.ts";
import { sweepWrittenAtStart } from "../downloads/partial-sweep.ts";
import { verifyArchive, type VerifyReport } from "../downloads/verify.ts";
import { StatusRepository } from "../db/status.repository.ts";
import { EXIT_UNAVAILABLE, UserError } from "../errors.ts";
import { cliLogger } from "./output/mode.ts";
import { printJson, printOut } from "./output/print.ts";
import { createServices, type Services } from "../services.ts";
import { formatBytes } from "../text/bytes.ts";
import { checkThumbnails, formatThumbnailCheck } from "../storage/thumbnail-check.ts";
import { Thumbnails } from "../storage/thumbnails.ts";

/**
 * A local archive with no originals/ while the database records stored files is not the archive (DVAULT_ARCHIVE_DIR
 * typed wrong, its disk not mounted): every file would be "missing", and --fix would want them all again, spending the
 * weekly allowance on files that are elsewhere. Refused before anything is read or changed.
 */
async function refuseArchiveNotThere(services: Services): Promise<void> {
  if (services.config.storage.kind !== "local") return;
  const originals = path.join(path.resolve(services.config.archiveDir), "originals");
  // A file where the archive's folder should be (ENOTDIR) is no archive either.
  const isFolder = (() => {
    try {
      return statSync(originals).isDirectory();
    } catch (err) {
      if (["ENOENT", "ENOTDIR"].includes((err as NodeJS.ErrnoException).code ?? "")) return false;
      throw err;
    }
  })();
  if (isFolder) return;
  const stored = (await new StatusRepository(services.pool).storedArchive())?.files ?? 0;
  if (stored === 0) return;
  throw new UserError(
    `${originals} is not there, yet the database records ${stored} stored file(s): is DVAULT_ARCHIVE_DIR the archive's folder, and its disk mounted? Nothing was checked or wanted again (if the files are truly gone, make that folder and run dvault verify --fix)`,
    EXIT_UNAVAILABLE,
  );
}

function corruptLine(c: VerifyReport["corrupt"][number]): string {
  const ids = c.deviationids.join(", ");
  if (c.actual === undefined) return `  ${c.path}: ${c.actualSize ?? "?"} bytes, expected ${c.expectedSize ?? "?"} (${ids})`;
  return `  ${c.path}: sha256 ${c.actual}, expected ${c.expected ?? "?"} (${ids})`;
}

/** A missing file, and what stands at its name instead when something does (set aside with --fix). */
function missingLine(m: VerifyReport["missing"][number], fix: boolean): string {
  const line = `  ${m.path} (${m.deviationids.join(", ")})`;
  if (!m.found) return line;
  return `${line}: ${m.found} stands at its name, not the file${fix ? " (moved to .corrupt/)" : ""}`;
}

/** What to do of the files verify could not read: read again, or (behind a folder linking out) moved back first. */
function unreadableWhy(unreadable: VerifyReport["unreadable"]): string {
  const linkedOut = unreadable.filter((u) => u.linkedOut).length;
  const unread = unreadable.length - linkedOut;
  return [
    unread ? `${unread} could not be read to the end: run verify again` : "",
    linkedOut ? `${linkedOut} behind a folder that links out of the archive: move its files back into the archive folder, dvault follows no link there` : "",
  ]
    .filter(Boolean)
    .join("; ");
}

/** The command's last line when files could not be read (exit 3): the store to check, or the files to move back. */
function unreadableError(unreadable: VerifyReport["unreadable"], store: string, archiveDir: string): UserError {
  const linkedOut = unreadable.filter((u) => u.linkedOut).length;
  const unread = unreadable.length - linkedOut;
  const parts = [
    unread ? `${unread} file(s) could not be read from ${store}: check the store` : "",
    linkedOut
      ? `${linkedOut} file(s) sit behind a folder of originals/ that links out of the archive: move them back under ${path.join(archiveDir, "originals")}/ (dvault follows no link there)`
      : "",
  ].filter(Boolean);
  return new UserError(`${parts.join("; ")}, and run dvault verify again`, 3);
}

export function formatVerifyReport(r: VerifyReport, fix: boolean): string {
  const how = r.deep ? "re-hashed" : "sizes compared (--deep re-hashes)";
  const lines = [
    `checked   ${r.files} file(s) of ${r.rows} row(s), ${formatBytes(r.bytes)} in ${(r.durationMs / 1000).toFixed(1)} s, ${how}`,
    `ok        ${r.ok}`,
    `missing   ${r.missing.length}`,
    ...r.missing.slice(0, 20).map((m) => missingLine(m, fix)),
    `corrupt   ${r.corrupt.length}`,
    ...r.corrupt.slice(0, 20).map(corruptLine),
    ...(r.unreadable.length
      ? [
          `unreadable ${r.unreadable.length} (${unreadableWhy(r.unreadable)}; nothing was set aside)`,
          ...r.unreadable.slice(0, 20).map((u) => `  ${u.path}: ${u.reason} (${u.deviationids.join(", ")})`),
        ]
      : []),
    `orphaned  ${r.orphaned.length}${r.orphaned.length ? " (under originals/ but in no row; left alone)" : ""}`,
    ...r.orphaned.slice(0, 20).map((o) => `  ${o}`),
  ];
  const broken = r.missing.length + r.corrupt.length;
  if (fix) {
    lines.push(`re-queued ${r.requeued} row(s) (the worker or dvault download --once fetches them again)`);
    if (r.lost) lines.push(`lost      ${r.lost} row(s) whose deviation is gone from the service (marked failed)`);
    if (r.forgotten)
      lines.push(`forgotten ${r.forgotten} import record(s) of bytes no longer in the archive (a later dvault import may bring the files again)`);
  } else if (broken) {
    lines.push(`run dvault verify --fix to want the ${broken} missing or corrupt file(s) again`);
  }
  return lines.join("\n");
}

/** The journal and literature pages: inert (src/text/inert-html.ts), made so with --fix, or how many are not yet. */
export function formatInertTexts(t: InertTextsResult, fix: boolean): string {
  if (fix) return `text pages ${t.checked}, ${t.rewritten} rewritten inert (the service's HTML sanitized; the database keeps it as sent)`;
  if (t.rewritten === 0) return `text pages ${t.checked}, every one inert`;
  return `text pages ${t.checked}, ${t.rewritten} still as the service sent them (scripts included): dvault verify --fix makes them inert, as a running worker does`;
}

export function registerVerifyCommand(program: Command): void {
  program
    .command("verify")
    .description("re-hash the archive: report missing, corrupt and orphaned files")
    .addHelpText(
      "after",
      [
        "",
        "The archive is read through its blob store (DVAULT_STORAGE). The local folder is re-hashed by default;",
        "an S3 bucket gets one HEAD per object (present, and of the recorded size) unless --deep downloads and",
        "re-hashes each. With --fix, corrupt bytes are set aside under .corrupt/ before the row is wanted again:",
        "moved in the local folder; in a bucket copied to a .corrupt/<name>.<time> key, then removed. --fix first removes",
        "the temp files killed dvault processes left in .partial/, as a worker's start does; without --fix nothing changes.",
        "",
        "Thumbnails are made from the originals after they are stored (a running worker, dvault thumbnails --once,",
        'or the dashboard or a digest when it first shows one): a file without any is "not made yet"; "missing"',
        "means made, then gone. Thumbnails never change the exit code.",
        "",
        "Journal and literature pages stored before dvault made them inert (no script, a CSP of their own) are",
        "counted, and with --fix rewritten once: the row follows the new file, the old one is removed.",
        "",
        "Exit codes: 0 the archive is whole (or --fix wanted what was not), 2 files are missing or corrupt, 3 PostgreSQL, Redis or the store unreachable, files behind a folder of originals/ that links out of the archive (files that could not be read are never set aside), or an archive folder with no originals/ while the database records stored files (DVAULT_ARCHIVE_DIR typed wrong, a disk not mounted: nothing is wanted again).",
      ].join("\n"),
    )
    .option(
      "--fix",
      "want missing and corrupt files again (corrupt bytes, and a link or FIFO standing at a file's name, are set aside under .corrupt/ first), make the thumbnails that are not there, and make old text pages inert",
    )
    .option("--deep", "re-hash every object (the default for the local folder)")
    .option("--no-deep", "compare sizes only (the default for an S3 bucket)")
    .option("--json", "print the report as JSON")
    .action(async (opts: { fix?: boolean; deep?: boolean; json?: boolean }) => {
      const config = loadConfig();
      const log = cliLogger(config);
      const services = await createServices({ config, log });
      try {
        await refuseArchiveNotThere(services);
        const deps = downloadDepsFor(services);
        // --fix writes to the archive: first the partial files killed writers left (a killed --fix's copies among them),
        // as a worker's start removes them. Without --fix the check changes nothing.
        if (opts.fix) await sweepWrittenAtStart(deps.archive, log);
        const report = await verifyArchive({ deps, fix: opts.fix === true, log, ...(opts.deep !== undefined ? { deep: opts.deep } : {}) });
        const thumbnails = await checkThumbnails(new Thumbnails(deps.archive.blobs), { fix: opts.fix === true });
        const texts = await makeStoredTextsInert({ deps, dryRun: opts.fix !== true });
        if (opts.json) printJson({ ...report, thumbnails, texts });
        else {
          printOut(formatVerifyReport(report, opts.fix === true));
          printOut(formatThumbnailCheck(thumbnails, opts.fix === true));
          printOut(formatInertTexts(texts, opts.fix === true));
        }
        if (report.unreadable.length > 0) throw unreadableError(report.unreadable, deps.archive.blobs.describe(), deps.archive.root);
        if (!opts.fix && report.missing.length + report.corrupt.length > 0) {
          throw new UserError(`${report.missing.length} missing and ${report.corrupt.length} corrupt file(s)`, 2);
        }
      } finally {
        await services.close();
      }
    });
}
