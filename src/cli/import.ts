// `dvault import gallery-dl <dir>`: adopts a gallery-dl download folder into the archive (every original the
// user already has costs no quota), with progress in a terminal and a report (or --json) at the end.
import type { Command } from "commander";
import { loadConfig } from "../config.ts";
import { EXIT_INTERRUPTED, EXIT_PAUSED, UserError } from "../errors.ts";
import { importGalleryDl } from "../import/gallery-dl/import-folder.ts";
import type { ImportProgress, ImportReport } from "../import/gallery-dl/types.ts";
import { cliLogger } from "./output/mode.ts";
import { createServices } from "../services.ts";
import { DiskFullError } from "../storage/free-space.ts";
import { isWithin, OutsideArchiveError } from "../storage/layout.ts";
import { folderFault } from "../storage/storage-fault.ts";
import { formatBytes } from "../text/bytes.ts";
import { shownInTerminal as shown } from "../text/controls.ts";
import { printJson, printOut, rewriteErrLine } from "./output/print.ts";
import { stopOnSignal } from "./stop-signal.ts";

type ImportOptions = { archive?: string; account?: string; link?: boolean; json?: boolean };

/** Unmatched files listed by name in the text report; --json lists them all. */
const LISTED_UNMATCHED = 30;

export function formatImportReport(r: ImportReport): string {
  const unmatched = r.unmatched.length;
  const lines = [
    `folder            ${shown(r.dir)}`,
    `files seen        ${r.filesSeen} (and ${r.sidecars} metadata sidecar${r.sidecars === 1 ? "" : "s"}${r.archiveEntries === null ? "" : `, ${r.archiveEntries} archive entries`})`,
    `originals         ${r.originals}`,
    `renditions        ${r.renditions}${r.renditions ? " (kept; the original is still wanted where it is missing)" : ""}`,
    ...(r.extraImages ? [`further images    ${r.extraImages} (of multi-image posts: the API never gives them)`] : []),
    `duplicates        ${r.duplicates}${r.duplicates ? " (already in the archive)" : ""}`,
    `unmatched         ${unmatched}${unmatched ? " (left where they are; listed below)" : ""}`,
    ...Object.entries(r.unmatchedByReason)
      .sort((a, b) => b[1] - a[1])
      .map(([reason, n]) => `  ${String(n).padStart(6)}  ${reason}`),
    `quota saved       ${r.quotaSaved} original download${r.quotaSaved === 1 ? "" : "s"} (each would spend one of the week's allowance)`,
    `bytes             ${formatBytes(r.bytesCopied)} copied, ${formatBytes(r.bytesLinked)} hard-linked in ${(r.durationMs / 1000).toFixed(1)} s`,
    `api calls         ${r.apiCalls}${r.listings.length ? ` (${r.listings.map((l) => `${l.username}'s ${l.listing}: ${l.pages} page${l.pages === 1 ? "" : "s"}`).join(", ")})` : ""}${r.account === null ? " (no account logged in: only the mirror was asked)" : ""}`,
  ];
  for (const u of r.unmatched.slice(0, LISTED_UNMATCHED)) lines.push(`  unmatched ${shown(u.file)}: ${u.reason}${u.detail ? ` (${shown(u.detail)})` : ""}`);
  if (unmatched > LISTED_UNMATCHED) lines.push(`  … and ${unmatched - LISTED_UNMATCHED} more (--json lists every one)`);
  return lines.join("\n");
}

/** One line that rewrites itself on a terminal's stderr; nothing elsewhere. */
function progressLine(): ((p: ImportProgress) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  let last = 0;
  return (p) => {
    const now = Date.now();
    if (now - last < 200 && p.done !== p.total) return;
    last = now;
    const of = p.total ? `/${p.total}` : "";
    rewriteErrLine(`${p.phase} ${p.done}${of} files${p.bytes ? `, ${formatBytes(p.bytes)}` : ""}`);
  };
}

export function registerImportCommand(program: Command): void {
  const cmd = program.command("import").description("adopt files you already have into the archive");
  cmd
    .command("gallery-dl <dir>")
    .description("adopt a gallery-dl download folder: originals you have cost no quota and are never downloaded again; your files are only read")
    .option("--archive <sqlite file>", 'gallery-dl\'s download archive (its "archive" option): helps with files whose names carry no index')
    .option("--account <name>", "the account whose token looks up deviations the mirror does not know yet (default: the only one)")
    .option("--link", "hard-link files into the archive instead of copying them (same filesystem only; otherwise copied)")
    .option("--json", "print the report as JSON (every unmatched file with its reason)")
    .action(async (dir: string, opts: ImportOptions) => {
      const config = loadConfig();
      const log = cliLogger(config);
      const services = await createServices({ config, log });
      const stop = stopOnSignal("import");
      const progress = opts.json ? undefined : progressLine();
      try {
        const report = await importGalleryDl({
          services,
          dir,
          archiveFile: opts.archive,
          account: opts.account,
          link: opts.link === true,
          log,
          signal: stop.signal,
          onProgress: progress,
        });
        if (progress) rewriteErrLine("");
        if (opts.json) printJson(report);
        else printOut(formatImportReport(report));
      } catch (err) {
        if (progress) rewriteErrLine("");
        // A folder of the archive that refuses writes (chattr +i, a read-only mount) stops every file alike: said as the
        // downloads say it. The user's own folder is only read, and a file of it that cannot be is listed instead.
        const fault = folderFault(err);
        const refused = fault && isWithin(config.archiveDir, fault.where) ? fault : undefined;
        if (err instanceof DiskFullError || err instanceof OutsideArchiveError || refused)
          throw new UserError(`${(refused ?? (err as Error)).message} (what was imported so far is kept; run the import again to go on)`, EXIT_PAUSED);
        if (stop.signal.aborted) throw new UserError("import stopped: what was imported so far is kept; run it again to go on", EXIT_INTERRUPTED);
        throw err;
      } finally {
        await services.close();
        stop.dispose();
      }
    });
}
