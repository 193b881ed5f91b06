// `dvault storage migrate --to s3|local`: copies the archive's originals and thumbnails from the other blob store
// into the named one (src/storage/migrate-store.ts), with progress, resumable, never deleting the source. It
// needs neither PostgreSQL nor Redis: only the two stores.
import path from "node:path";
import type { Command } from "commander";
import { ConfigError, loadConfig, loadConfigForStorage } from "../config.ts";
import { sweepWrittenAtStart } from "../downloads/partial-sweep.ts";
import { EXIT_FAILED, UserError } from "../errors.ts";
import { thisWriterTag } from "../queue/holder.ts";
import { safeSink } from "../queue/progress.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import { PARTIAL_DIR } from "../storage/layout.ts";
import { type MigrateResult, migrateStore } from "../storage/migrate-store.ts";
import { openBlobStore } from "../storage/store.ts";
import { formatBytes } from "../text/bytes.ts";
import { cliLogger } from "./output/mode.ts";
import { printJson, printOut } from "./output/print.ts";
import { progressView } from "./output/progress.ts";

const KINDS = ["local", "s3"] as const;
type Kind = (typeof KINDS)[number];

/** The store of `kind`, whatever DVAULT_STORAGE says; one line saying what to set when it is not configured. */
function storeOfKind(kind: Kind, role: "source" | "target"): BlobStore {
  try {
    // The local target's partial files named for this process: the next start removes those a killed migrate left.
    return openBlobStore(loadConfigForStorage(kind), { writer: thisWriterTag() });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new UserError(
      `the ${kind} store (the ${role}) is not configured: ${err.problems.join("; ")}. Set the DVAULT_S3_* variables (docs/storage-readers.md) and run again`,
    );
  }
}

export function formatMigrate(r: MigrateResult, from: BlobStore, to: BlobStore, seconds: number): string {
  const lines = [
    `migrated  ${r.objects} object(s) from ${from.describe()} to ${to.describe()} in ${seconds.toFixed(1)} s`,
    `copied    ${r.copied} (${formatBytes(r.bytes)}), each verified in the target`,
    `skipped   ${r.skipped} (already there, whole)`,
    `failed    ${r.failed.length}`,
    ...r.failed.slice(0, 20).map((f) => `  ${f.key}: ${f.reason}`),
  ];
  // A worker that downloads into the source until it restarts writes what no run listed: the run after copies it.
  if (r.failed.length === 0)
    lines.push(
      `next: set DVAULT_STORAGE=${to.kind} for every dvault process and restart them, then run this command once more for what a worker wrote before its restart (the source was left as it is)`,
    );
  return lines.join("\n");
}

export function registerStorageCommand(program: Command): void {
  const storage = program.command("storage").description("the archive's blob store: the local folder or an S3-compatible bucket");
  storage
    .command("migrate")
    .description("copy every original and thumbnail from the other store into the one named by --to, verifying each")
    .requiredOption("--to <store>", "where the archive goes: s3 (DVAULT_S3_* must be set) or local (DVAULT_ARCHIVE_DIR)")
    .option("--concurrency <n>", "objects copied at once", "4")
    .option("--json", "print the result as JSON")
    .addHelpText(
      "after",
      [
        "",
        "Copies from the local folder into the bucket (--to s3), or back (--to local). Each object is verified where it",
        "lands (its size, and an original's sha256 hashed again from the target). The source is never changed or deleted.",
        "Stopped half way, run it again: objects already in the target, whole, are skipped. What a running worker writes",
        "into the source meanwhile is listed again and copied too. When it is done, set DVAULT_STORAGE to the target for",
        "every dvault process, restart them, and run it once more for what they wrote before. Its start removes the temp files killed dvault",
        "processes left in the archive folder's .partial/, as a worker's start does.",
        "",
        "Exit codes: 0 every object is in the target, 1 some could not be copied (listed; run again), or the target is not configured,",
        "3 the target or the source takes or gives no file at all (a full or read-only disk, a bucket refusing or unreachable):",
        "one line, and the run stops there.",
      ].join("\n"),
    )
    .action(async (opts: { to: string; concurrency: string; json?: boolean }) => {
      if (!(KINDS as readonly string[]).includes(opts.to)) throw new UserError(`--to takes s3 or local, not ${JSON.stringify(opts.to)}`);
      const concurrency = Number.parseInt(opts.concurrency, 10);
      if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) throw new UserError("--concurrency takes a whole number from 1 to 64");
      const config = loadConfig();
      const log = cliLogger(config);
      const target = opts.to as Kind;
      const to = storeOfKind(target, "target");
      const from = storeOfKind(target === "s3" ? "local" : "s3", "source");
      const view = progressView({ json: opts.json === true });
      let lastLog = Date.now();
      const started = Date.now();
      const sink = safeSink((event) => {
        view.sink?.(event);
        if (event.type === "files" && Date.now() - lastLog >= 2000) {
          lastLog = Date.now();
          log.info({ objects: `${event.finished}/${event.total}` }, "migrating");
        }
      });
      // First the temp copies a killed migrate (or any killed writer) left in .partial/, as a worker's start removes them.
      await sweepWrittenAtStart({ root: config.archiveDir }, log);
      let result: MigrateResult;
      try {
        result = await migrateStore({
          from,
          to,
          tmpDir: path.join(config.archiveDir, PARTIAL_DIR),
          writer: thisWriterTag(),
          concurrency,
          progress: sink,
        });
      } finally {
        view.stop();
      }
      const seconds = (Date.now() - started) / 1000;
      if (opts.json) printJson({ from: from.describe(), to: to.describe(), ...result, seconds });
      else printOut(formatMigrate(result, from, to, seconds));
      if (result.failed.length > 0)
        throw new UserError(`${result.failed.length} object(s) were not copied: run dvault storage migrate --to ${target} again`, EXIT_FAILED);
    });
}
