// `dvault download --once`: runs the due downloads in this process until nothing is due, with progress
// lines and a summary; without --once it hands them to the running worker's queue.
import type { Command } from "commander";
import { enqueueDueDownloads } from "../downloads/enqueue-due.ts";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { loadConfig } from "../config.ts";
import { migrate } from "../db/migrate.ts";
import { missingGrants, runDownloadsOnce, type DownloadSummary } from "../downloads/run-once.ts";
import { ARCHIVE_EXIT_CODES_HELP, EXIT_PAUSED, UserError } from "../errors.ts";
import { createLogger } from "../log.ts";
import { Producer } from "../queue/producer.ts";
import { createServices } from "../services.ts";
import { formatBytes } from "../text/bytes.ts";

type DownloadOptions = { once?: boolean; account?: string; concurrency?: string };

/** The closing lines of `dvault download --once`. */
export function formatDownloadSummary(s: DownloadSummary): string {
  const lines = [
    `done              ${s.done}${s.upgraded ? ` (${s.upgraded} upgraded from a degraded rendition)` : ""}`,
    `degraded          ${s.degraded}${s.degraded ? " (a free rendition stored; the original follows when the allowance refills)" : ""}`,
    `deferred          ${s.deferred}${s.nextWindow ? ` (next quota window ${s.nextWindow.toISOString()})` : ""}`,
    `not downloadable  ${s.notDownloadable}`,
    `failed            ${s.failed}`,
    `bytes             ${formatBytes(s.bytes)} in ${(s.durationMs / 1000).toFixed(1)} s`,
  ];
  if (s.partial) lines.push(`partial           ${s.partial} (first image only, or a blurred rendition)`);
  if (s.busy) lines.push(`busy elsewhere    ${s.busy} (another dvault process is downloading them)`);
  if (s.skipped) lines.push(`skipped           ${s.skipped} (already stored)`);
  if (s.links && !("busy" in s.links)) lines.push(`readable links    ${s.links.links} (${s.links.written} written, ${s.links.removed} removed)`);
  for (const f of s.failures.slice(0, 10))
    lines.push(
      `  failed ${f.deviationid} (${f.kind}): ${f.error}; ${f.nextAttemptAt ? `tried again from ${f.nextAttemptAt.toISOString()}` : "not tried again (permanent)"}`,
    );
  for (const n of s.needsLogin) lines.push(`waiting for a login: ${n.account}'s downloads were left wanted (dvault auth login --account ${n.account})`);
  if (s.paused) lines.push(`PAUSED: ${s.paused.reason}`);
  return lines.join("\n");
}

export function registerDownloadCommand(program: Command): void {
  program
    .command("download")
    .description("download the due originals: in this process with --once, otherwise by handing them to the running worker")
    .option("--once", "run the downloads to completion in this process, then exit (quota-deferred ones stay deferred)")
    .option("--account <name>", "only this account's downloads")
    .option("--concurrency <n>", "parallel transfers (default DVAULT_DOWNLOAD_CONCURRENCY)")
    .addHelpText("after", ARCHIVE_EXIT_CODES_HELP)
    .action(async (opts: DownloadOptions) => {
      const config = loadConfig();
      const log = createLogger({ level: config.logLevel });
      const concurrency = opts.concurrency === undefined ? undefined : Number(opts.concurrency);
      if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 64)) {
        throw new UserError("--concurrency expects a whole number from 1 to 64");
      }
      if (opts.once) await migrate(config.databaseUrl);
      const services = await createServices({ config, log });
      try {
        if (!opts.once) {
          const producer = new Producer([...JOB_DEFINITIONS], services.redis, config.redisPrefix);
          try {
            const summary = await enqueueDueDownloads(services, producer);
            console.log(`handed ${summary.claimed} due download(s) to the worker's queue; follow them with dvault status (or run with --once)`);
          } finally {
            await producer.close();
          }
          return;
        }
        const abort = new AbortController();
        const onSignal = () => abort.abort();
        process.once("SIGINT", onSignal);
        process.once("SIGTERM", onSignal);
        try {
          const summary = await runDownloadsOnce({
            services,
            account: opts.account,
            log,
            signal: abort.signal,
            ...(concurrency !== undefined ? { concurrency } : {}),
          });
          console.log(formatDownloadSummary(summary));
          if (summary.paused) throw new UserError(summary.paused.reason, EXIT_PAUSED);
          if (summary.needsLogin.length) throw missingGrants(summary.needsLogin);
          if (summary.failed) throw new UserError(`${summary.failed} download(s) failed (listed above); they are kept as failed in the downloads table`);
        } finally {
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
        }
      } finally {
        await services.close();
      }
    });
}
