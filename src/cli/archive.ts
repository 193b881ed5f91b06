// `dvault archive --once`: what `dvault sync --once` then `dvault download --once` do, in one process (one
// start-up, one connection to the database, the queue engine and the shared pace): the sync step is sync.ts's
// (planRuns, syncHere), the download step run-once.ts's (runDownloadsOnce), run side by side (bothSteps: the
// originals that spend no allowance while the sync lists, the rest once it has), and the summary is both of theirs,
// one after the other, with one exit code (archiveVerdict).
import type { Command } from "commander";
import { loadConfig } from "../config.ts";
import { SOURCE_NAMES } from "../config-defaults.ts";
import type { DownloadSummary } from "../downloads/run-once.ts";
import { ARCHIVE_EXIT_CODES_HELP, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_NEEDS_LOGIN, EXIT_PAUSED, UserError } from "../errors.ts";
import { scrubString } from "../redact.ts";
import type { Logger } from "../log.ts";
import { createServices, type Services } from "../services.ts";
import { downloadHere, downloadVerdict, formatDownloadSummary, parseConcurrency } from "./download.ts";
import { cliLogger, colorsFor } from "./output/mode.ts";
import { progressView } from "./output/progress.ts";
import { printJson, printOut, reportRun } from "./output/print.ts";
import { abortOnSignal } from "./stop-signal.ts";
import { type PlannedRun, parseOnly, planRuns, printSummary, type SyncRow, summaryJson, syncHere, syncVerdict } from "./sync.ts";

type ArchiveOptions = { once?: boolean; only?: string; account?: string; full?: boolean; due?: boolean; concurrency?: string; json?: boolean };

const AGAIN = "dvault archive --once";

/**
 * Which step's exit code wins when both have one: the first of this list either step reports. It is the order
 * each command already uses on its own (download --once: paused before a login before stopped before failed;
 * sync --once: a login before stopped before failed), so archive exits as the worse of the two would.
 */
export const ARCHIVE_EXIT_ORDER: readonly number[] = [EXIT_PAUSED, EXIT_NEEDS_LOGIN, EXIT_INTERRUPTED, EXIT_FAILED];

/** The download step's verdict when a stop came during the sync step: it never started. */
export function stoppedBeforeDownload(): UserError {
  return new UserError("stopped during the sync: no download was started; run dvault archive --once again", EXIT_INTERRUPTED);
}

/** One error for both steps' verdicts: the code by ARCHIVE_EXIT_ORDER, the message both steps' lines. */
export function archiveVerdict(sync: UserError | undefined, download: UserError | undefined): UserError | undefined {
  if (!sync || !download) return sync ?? download;
  const rank = (e: UserError) => {
    const i = ARCHIVE_EXIT_ORDER.indexOf(e.exitCode);
    return i < 0 ? ARCHIVE_EXIT_ORDER.length : i;
  };
  const code = rank(download) < rank(sync) ? download.exitCode : sync.exitCode;
  return new UserError(`sync: ${sync.message}; download: ${download.message}`, code);
}

export const ARCHIVE_HELP = `
The sync step runs the sources as dvault sync --once does (--only, --account, --full, --due); the download step runs
every due download of the account(s), as dvault download --once does (--account, --concurrency), also when a source
failed: what did sync is downloaded. The two run side by side: while the sources are listed, only files that cannot
spend the weekly allowance are fetched (the free renditions of originals the artist does not offer, deleted works);
the other originals, and the texts (their full body comes at the end of their source's run), wait until every source
has listed, then the originals spend it in DVAULT_DOWNLOAD_PRIORITY order. A download step that cannot start
(every account must log in again) is reported as its exit code; one stopped by an error (PostgreSQL or Redis lost
mid-run) is reported after the sync's table in one line, exit 1. A stop by Ctrl-C stops both steps and exits 130.
The exit code is the worse of the two steps': 2 (paused) before 4 (log in) before 130 (stopped) before 1 (failed).
${ARCHIVE_EXIT_CODES_HELP}`;

/**
 * The download step: its summary and verdict; or, when it threw, the error as its verdict, so that the sync's table
 * is still printed before it. A refusal before it started (every account must log in again) stays as it is; anything
 * else (the database or Redis lost mid-run, an error nobody expected) becomes one line with exit code 1, the code
 * reportFailure (program.ts) gives it when it ends a command alone, its stack in the log at LOG_LEVEL=debug.
 */
async function downloadStep(
  args: Parameters<typeof downloadHere>[0],
): Promise<{ summary?: DownloadSummary | undefined; error: UserError | undefined; failed?: boolean }> {
  try {
    const summary = await downloadHere(args);
    return { summary, error: downloadVerdict(summary, AGAIN) };
  } catch (err) {
    if (err instanceof UserError) return { error: err };
    args.log.debug({ err }, "the download step stopped on an unexpected error");
    const message = err instanceof Error ? err.message : String(err);
    return {
      failed: true,
      error: new UserError(
        `the download step stopped on an unexpected error: ${message} (LOG_LEVEL=debug shows where); what it stored is kept: run ${AGAIN} again`,
        EXIT_FAILED,
      ),
    };
  }
}

/** The download step's line when it has no summary: why not. */
function noSummaryLine(stopped: boolean, failed: boolean | undefined): string {
  if (stopped) return "download: not started (stopped during the sync)";
  return failed ? "download: stopped by an error before its summary (the error is below)" : "download: not started";
}

/**
 * `--json`'s word for a download step with no summary (null when it has one): stopped during the sync, refused before
 * it started (every account must log in again), or failed mid-run; with the line that ends the run, scrubbed of
 * secrets as reportFailure (src/cli/program.ts) scrubs that line on stderr.
 */
export function notRunJson(
  summary: DownloadSummary | undefined,
  stopped: boolean,
  step: { error: UserError | undefined; failed?: boolean },
): { why: "stopped" | "refused" | "failed"; message: string } | null {
  if (summary) return null;
  const why = stopped ? "stopped" : step.failed ? "failed" : "refused";
  return { why, message: scrubString(step.error?.message ?? "not started") };
}

type StepResult = Awaited<ReturnType<typeof downloadStep>>;

/**
 * The two steps side by side, with one progress view: while the sync lists, the download step takes the files that
 * cannot spend the weekly allowance (the free renditions of originals the artist does not offer, deleted works); the
 * texts and the originals that may spend it wait until every source has listed, so the allowance still goes in
 * DVAULT_DOWNLOAD_PRIORITY order over all the sync found (src/downloads/once-claims.ts). A stop reaches both; a sync
 * that throws stops the downloads first. `skipped`: stopped before either started, so no download step ran.
 */
async function bothSteps(args: {
  services: Services;
  plan: PlannedRun[];
  opts: ArchiveOptions;
  log: Logger;
  json: boolean;
  concurrency: number | undefined;
  signal: AbortSignal;
}): Promise<{ results: SyncRow[]; step: StepResult; skipped: boolean }> {
  const { services, plan, opts, log, json, signal } = args;
  const view = progressView({ json });
  const downloads = new AbortController();
  const stopDownloads = () => downloads.abort();
  signal.addEventListener("abort", stopDownloads, { once: true });
  const skipped = signal.aborted;
  const syncing = plan.length ? syncHere({ services, plan, full: opts.full, log, json, signal, view, downloadsHere: !skipped }) : Promise.resolve([]);
  const downloading: Promise<StepResult> = skipped
    ? Promise.resolve({ summary: undefined, error: stoppedBeforeDownload(), failed: false })
    : downloadStep({ services, account: opts.account, log, signal: downloads.signal, concurrency: args.concurrency, json, view, alongside: syncing });
  try {
    const results = await syncing.catch(async (err: unknown) => {
      downloads.abort();
      await downloading;
      throw err;
    });
    return { results, step: await downloading, skipped };
  } finally {
    signal.removeEventListener("abort", stopDownloads);
    view.stop();
  }
}

export function registerArchiveCommand(program: Command): void {
  program
    .command("archive")
    .description("sync then download in one process: what sync --once then download --once do, with one summary and one exit code")
    .option("--once", "run both steps in this process, then exit (required: the worker already does both on its schedule)")
    .option("--only <sources>", `comma-separated sources to sync whether due or not (${SOURCE_NAMES.join(", ")})`)
    .option("--account <name>", "only this account (its sources and its downloads)")
    .option("--full", "force a full sweep of the sources (catches edits, reorderings and removals)")
    .option("--due", "only the sources that are due (never run, past their interval, or failed last time)")
    .option("--concurrency <n>", "parallel transfers (default DVAULT_DOWNLOAD_CONCURRENCY)")
    .addHelpText("after", ARCHIVE_HELP)
    .option(
      "--json",
      "print the result as JSON: { sync: [...as sync --json], download: {...as download --json} or null, downloadNotRun: null or { why, message } }",
    )
    .action(async (opts: ArchiveOptions) => {
      if (!opts.once)
        throw new UserError("dvault archive runs in this process only: add --once (a running worker already syncs and downloads on its schedule)");
      const config = loadConfig();
      const log = cliLogger(config);
      const only = parseOnly(opts.only);
      const concurrency = parseConcurrency(opts.concurrency);
      const json = opts.json === true;
      const services = await createServices({ config, log });
      const stop = abortOnSignal();
      try {
        const plan = await planRuns(services, {
          ...(only ? { only } : {}),
          ...(opts.account ? { account: opts.account } : {}),
          ...(opts.due ? { due: true } : {}),
        });
        const { results, step, skipped } = await bothSteps({ services, plan, opts, log, json, concurrency, signal: stop.signal });
        const syncError = await syncVerdict(services, plan, results, AGAIN);
        const { summary } = step;
        await reportRun({
          json,
          print: () => {
            if (json) return printJson({ sync: summaryJson(results), download: summary ?? null, downloadNotRun: notRunJson(summary, skipped, step) });
            if (plan.length) printSummary(results);
            else printOut("sync: nothing is due; leave out --due (or use --only <sources>) to run anyway");
            printOut("");
            if (summary) printOut(formatDownloadSummary(summary, colorsFor(), AGAIN));
            else printOut(noSummaryLine(skipped, step.failed));
          },
          verdict: () => {
            const error = archiveVerdict(syncError, step.error);
            if (error) throw error;
          },
        });
      } finally {
        stop.dispose();
        await services.close();
      }
    });
}
