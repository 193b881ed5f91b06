// `dvault download --once`: runs the due downloads in this process until nothing is due, with progress
// lines and a summary; without --once it hands them to the running worker's queue.
import type { Command } from "commander";
import { enqueueDueDownloads } from "../downloads/enqueue-due.ts";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { loadConfig } from "../config.ts";
import { missingGrants, runDownloadsOnce, type DownloadSummary } from "../downloads/run-once.ts";
import { doneForNow, type DownloadsLeft } from "../db/download.repository.ts";
import { ARCHIVE_EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_PAUSED, UserError } from "../errors.ts";
import { refuseIfMovedAway } from "../queue/holder.ts";
import { Producer } from "../queue/producer.ts";
import { createServices, type Services } from "../services.ts";
import type { Logger } from "../log.ts";
import { formatBytes } from "../text/bytes.ts";
import { noWorkerNote } from "./no-worker.ts";
import { cliLogger, colorsFor } from "./output/mode.ts";
import { abortOnSignal } from "./stop-signal.ts";
import type { Colors } from "./output/terminal.ts";
import { printErr, printJson, printOut, reportRun } from "./output/print.ts";
import { type ProgressView, progressView } from "./output/progress.ts";

type DownloadOptions = { once?: boolean; account?: string; concurrency?: string; json?: boolean };

/** The closing lines of `dvault download --once`; the labels in bold and the counts that need a look in colour when `colors` can. */
export function formatDownloadSummary(s: DownloadSummary, colors?: Colors, again = "dvault download --once"): string {
  const lines = [
    `done              ${s.done}${s.upgraded ? ` (${s.upgraded} upgraded from a degraded rendition)` : ""}`,
    `degraded          ${s.degraded}${s.degraded ? " (a free rendition stored; the original follows when the allowance refills)" : ""}`,
    `deferred          ${s.deferred}${s.nextWindow ? ` (next quota window ${s.nextWindow.toISOString()})` : ""}`,
    `not downloadable  ${s.notDownloadable}`,
    `failed            ${s.failed}`,
    `bytes             ${formatBytes(s.bytes)} in ${(s.durationMs / 1000).toFixed(1)} s`,
  ];
  if (s.partial) lines.push(`partial           ${s.partial} of the files this run stored (first image only, or a blurred rendition; status counts works)`);
  if (s.busy) lines.push(`busy elsewhere    ${s.busy} (another dvault process is downloading them)`);
  if (s.skipped) lines.push(`skipped           ${s.skipped} (already stored)`);
  if (s.links && !("busy" in s.links)) lines.push(`readable links    ${s.links.links} (${s.links.written} written, ${s.links.removed} removed)`);
  if (s.linksBlocked) lines.push(`readable links    not all written: ${s.linksBlocked}; move it away, then run again (the files are stored)`);
  for (const f of s.failures.slice(0, 10))
    lines.push(
      `  failed ${f.deviationid} (${f.kind}): ${f.error}; ${f.nextAttemptAt ? `tried again from ${f.nextAttemptAt.toISOString()}` : "not tried again (permanent)"}`,
    );
  lines.push(`left              ${leftWords(s.left)}`);
  for (const n of s.needsLogin) lines.push(`waiting for a login: ${n.account}'s downloads were left wanted (dvault auth login --account ${n.account})`);
  if (s.interrupted) lines.push(`STOPPED before the end: run ${again} again to continue (partial files are resumed)`);
  if (s.paused) lines.push(`PAUSED: ${s.paused.reason}`);
  if (!colors) return lines.join("\n");
  // A line whose count needs a look is painted whole: green for stored, yellow for waiting, red for failed.
  const tones: Array<[string, (t: string) => string]> = [
    ["done ", colors.green],
    ["degraded ", colors.yellow],
    ["deferred ", colors.yellow],
    ["failed ", colors.red],
    ["  failed ", colors.red],
    ["waiting for a login", colors.yellow],
    ["STOPPED", colors.red],
    ["PAUSED", colors.red],
  ];
  return lines
    .map((line) => {
      const tone = tones.find(([prefix]) => line.startsWith(prefix))?.[1];
      return tone && !/^\S[^\d]*\s0$/.test(line) ? tone(line) : line;
    })
    .join("\n");
}

/** What is left after a run, per reason, from the downloads table (DownloadsLeft): "nothing" when nothing waits. */
export function leftWords(left: DownloadsLeft): string {
  const parts: string[] = [];
  if (left.dueNow) parts.push(`${left.dueNow} due now and not done (run again)`);
  // Rows a queue holds: a running worker's, another run's, or handed to the worker's queue by this run when it stopped
  // (run-now's handOver); with no worker running, the next download --once takes them over (claimDue's queuedBefore).
  if (left.queued) parts.push(`${left.queued} in a queue (a running worker or another run downloads them; with none, the next download --once does)`);
  const waiting = left.deferred + left.degradedWaiting;
  if (waiting) parts.push(`${waiting} wait for the next quota window${left.nextWindow ? ` (${left.nextWindow.toISOString()})` : ""}`);
  if (left.retryLater) parts.push(`${left.retryLater} failed, tried again on their own from ${left.nextRetry?.toISOString() ?? "later"}`);
  if (left.failedForGood) parts.push(`${left.failedForGood} failed for good (not tried again)`);
  return parts.length ? parts.join("; ") : "nothing: every due file was handled";
}

/** `--concurrency`: a whole number from 1 to 64, or a UserError saying so. */
export function parseConcurrency(value: string | undefined): number | undefined {
  const concurrency = value === undefined ? undefined : Number(value);
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 64)) {
    throw new UserError("--concurrency expects a whole number from 1 to 64");
  }
  return concurrency;
}

/**
 * The exit code's reason after a download run, undefined for 0: paused (2), an account that must log in (4),
 * stopped by a signal (130), failed files (1), due files left undone (1). `again` is the command that continues.
 */
export function downloadVerdict(summary: DownloadSummary, again: string): UserError | undefined {
  if (summary.paused) return new UserError(summary.paused.reason, EXIT_PAUSED);
  if (summary.needsLogin.length) return missingGrants(summary.needsLogin);
  if (summary.interrupted) {
    return new UserError(`stopped before the end; ${summary.left.dueNow + summary.left.queued} file(s) left: run ${again} again to continue`, EXIT_INTERRUPTED);
  }
  if (summary.failed) return new UserError(`${summary.failed} download(s) failed (listed above); they are kept as failed in the downloads table`);
  if (summary.linksBlocked) return new UserError(`the readable links were not all written (${summary.linksBlocked}): move it away and run ${again} again`);
  if (!doneForNow(summary.left)) {
    return new UserError(`${summary.left.dueNow} due file(s) were not done in this run: run ${again} again (or see dvault status)`);
  }
  return undefined;
}

/** `--once`'s run (run-once.ts) with its live progress view, stopped before the summary is printed; also `dvault archive --once`'s second step. */
export async function downloadHere(args: {
  services: Services;
  account: string | undefined;
  log: Logger;
  signal: AbortSignal;
  concurrency: number | undefined;
  json: boolean;
  /** A view shared with another step (archive's), left drawing at the end; else one of its own. */
  view?: ProgressView;
  /** The sync step beside it (archive's): see RunOnceOptions.alongside. */
  alongside?: Promise<unknown>;
}): Promise<DownloadSummary> {
  const view = args.view ?? progressView({ json: args.json });
  try {
    return await runDownloadsOnce({
      services: args.services,
      account: args.account,
      log: args.log,
      signal: args.signal,
      ...(args.concurrency !== undefined ? { concurrency: args.concurrency } : {}),
      ...(view.sink ? { progress: view.sink } : {}),
      ...(args.alongside ? { alongside: args.alongside } : {}),
    });
  } finally {
    if (!args.view) view.stop();
  }
}

/**
 * Without --once the due downloads of every account go to the worker's queue, transferred at the worker's
 * DVAULT_DOWNLOAD_CONCURRENCY: `--account` and `--concurrency` would be taken and do nothing, so they are refused.
 */
function refuseWorkerFlags(opts: DownloadOptions): void {
  if (opts.once) return;
  const given = [opts.account !== undefined ? "--account" : undefined, opts.concurrency !== undefined ? "--concurrency" : undefined].filter(Boolean);
  if (given.length === 0) return;
  throw new UserError(
    `${given.join(" and ")} ${given.length > 1 ? "go" : "goes"} with --once: without it the due downloads of every account are handed to the worker, which runs DVAULT_DOWNLOAD_CONCURRENCY at once; add --once to run them here`,
  );
}

export function registerDownloadCommand(program: Command): void {
  program
    .command("download")
    .description("download the due originals: in this process with --once, otherwise by handing them to the running worker")
    .option(
      "--once",
      "run every due download in this process, batch after batch until none is due, then exit; the summary lists what is left and why (the next quota window, another process, a retry time)",
    )
    .option("--account <name>", "with --once: only this account's downloads")
    .option("--concurrency <n>", "with --once: parallel transfers (default DVAULT_DOWNLOAD_CONCURRENCY)")
    .addHelpText("after", ARCHIVE_EXIT_CODES_HELP)
    .option("--json", "print the result as JSON")
    .action(async (opts: DownloadOptions) => {
      refuseWorkerFlags(opts);
      const config = loadConfig();
      const log = cliLogger(config);
      const concurrency = parseConcurrency(opts.concurrency);
      const services = await createServices({ config, log });
      try {
        if (!opts.once) {
          // Handed to an engine the install was moved away from, the rows would be claimed for a queue no worker reads.
          await refuseIfMovedAway(services.coord, services.config.redisPrefix, "nothing was queued");
          const producer = new Producer([...JOB_DEFINITIONS], services.queues);
          try {
            const summary = await enqueueDueDownloads(services, producer);
            const note = await noWorkerNote(services, "downloads");
            if (opts.json) printJson({ ...summary, workerRunning: note === undefined });
            else printOut(`handed ${summary.claimed} due download(s) to the worker's queue; follow them with dvault status (or run with --once)`);
            if (note) printErr(`dvault: ${note}`);
          } finally {
            await producer.close();
          }
          return;
        }
        const stop = abortOnSignal();
        try {
          const summary = await downloadHere({ services, account: opts.account, log, signal: stop.signal, concurrency, json: opts.json === true });
          await reportRun({
            json: opts.json === true,
            print: () => (opts.json ? printJson(summary) : printOut(formatDownloadSummary(summary, colorsFor()))),
            verdict: () => {
              const error = downloadVerdict(summary, "dvault download --once");
              if (error) throw error;
            },
          });
        } finally {
          stop.dispose();
        }
      } finally {
        await services.close();
      }
    });
}
