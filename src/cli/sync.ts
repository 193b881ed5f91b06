// `dvault sync`: run every source (or the due or named ones) now — in this process with --once, else through the worker.
// A composition root for --once: it runs the sync queue with the job catalogue, like the worker.
import type { Command } from "commander";
import { loadConfig } from "../config.ts";
import { SyncStateRepository } from "../db/sync-state.repository.ts";
import { TrackedUserRepository } from "../db/tracked-user.repository.ts";
import { ARCHIVE_EXIT_CODES_HELP, EXIT_INTERRUPTED, needsLoginError, noUserAccountNamed, UserError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { runSyncHere, type SyncJobValue } from "../../jobs/sync-source/run-here.ts";
import { unusableAccount } from "../api/token-manager.ts";
import { holdWorkLease, refuseIfMovedAway } from "../queue/holder.ts";
import { Producer } from "../queue/producer.ts";
import { createServices, type Services } from "../services.ts";
import { SOURCE_NAMES } from "../config-defaults.ts";
import type { SourceName } from "../sync/source.ts";
import { SOURCES } from "../sync/sources/index.ts";
import { noWorkerNote } from "./no-worker.ts";
import { cliLogger, colorsFor } from "./output/mode.ts";
import { printErr, printJson, printOut, reportRun } from "./output/print.ts";
import { type ProgressView, progressView } from "./output/progress.ts";
import type { ProgressSink } from "../queue/progress.ts";
import { formatTable, paintOutcome } from "./output/table.ts";
import { abortOnSignal } from "./stop-signal.ts";

type SyncOptions = { once?: boolean; only?: string; account?: string; full?: boolean; all?: boolean; due?: boolean; json?: boolean };

export type PlannedRun = { accountId: number; account: string; source: SourceName; key: string };

/** The sources `--only` names, or a UserError naming the unknown ones. */
export function parseOnly(only: string | undefined): SourceName[] | undefined {
  if (only === undefined) return undefined;
  const names = only
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  // `--only "$SOURCES"` with SOURCES unset ran every source (or, given only commas, none) without a word.
  if (names.length === 0) throw new UserError(`--only names no source: give one or more of ${SOURCE_NAMES.join(", ")}, or leave it out to run them all`);
  const bad = names.filter((n) => !(SOURCE_NAMES as readonly string[]).includes(n));
  if (bad.length) throw new UserError(`unknown source(s) ${bad.join(", ")}: choose from ${SOURCE_NAMES.join(", ")}`);
  return names as SourceName[];
}

/**
 * The (account, source, key) runs to do: every source of every account (an incremental run with nothing new
 * costs a call or two), the named ones with `only`, or with `due` only those due (never run, next_run_at
 * passed, or last run failed) — what a person typing "sync" right after a sync expects is a sync.
 */
export async function planRuns(services: Services, opts: { only?: SourceName[]; account?: string; due?: boolean }): Promise<PlannedRun[]> {
  const accounts = await services.accounts.list();
  const rows = accounts.filter((r) => r.kind === "user" && (!opts.account || r.name === opts.account));
  if (opts.account && rows.length === 0) throw noUserAccountNamed(opts.account, accounts);
  if (rows.length === 0) throw new UserError("no accounts yet: log in first with dvault auth login (or dvault auth import)");
  const state = new SyncStateRepository(services.pool);
  const tracked = new TrackedUserRepository(services.pool);
  const now = services.now();
  const plan: PlannedRun[] = [];
  for (const row of rows) {
    const states = new Map((await state.listSourceStates(row.id)).map((s) => [`${s.source}:${s.key}`, s]));
    for (const source of SOURCES) {
      if (opts.only && !opts.only.includes(source.name)) continue;
      const keys = source.name === "tracked" ? (await tracked.listTrackedUsers(row.id)).map((t) => t.username) : [""];
      for (const key of keys) {
        const s = states.get(`${source.name}:${key}`);
        const due = !s?.nextRunAt || s.nextRunAt.getTime() <= now || s.lastResult === "failed";
        if (opts.only || !opts.due || due) plan.push({ accountId: row.id, account: row.name, source: source.name, key });
      }
    }
  }
  return plan;
}

export type SyncRow = { plan: PlannedRun; value: SyncJobValue } | { plan: PlannedRun; error: string; interrupted?: boolean };

export function printSummary(results: SyncRow[]): void {
  const rows = results.map(({ plan, ...r }) =>
    "error" in r
      ? [plan.account, plan.source + (plan.key ? `:${plan.key}` : ""), r.interrupted ? "STOPPED" : "FAILED", "", "", "", "", "", "", "", r.error]
      : [
          plan.account,
          plan.source + (plan.key ? `:${plan.key}` : ""),
          (r.value.result ?? r.value.status) + (r.value.full ? " (full)" : ""),
          String(r.value.new ?? 0),
          String(r.value.changed ?? 0),
          String(r.value.removed ?? 0),
          String(r.value.apiCalls ?? 0),
          String(r.value.paced ?? 0),
          String(r.value.throttled ?? 0),
          `${((r.value.durationMs ?? 0) / 1000).toFixed(1)}s`,
          r.value.reason ?? "",
        ],
  );
  // paced: requests that waited for dvault's own pacer; throttled: answers in which the service refused one (429…).
  const header = ["account", "source", "result", "new", "changed", "removed", "api calls", "paced", "throttled", "time", "note"];
  const colors = colorsFor();
  const note = header.indexOf("note");
  printOut(
    formatTable(header, rows, {
      colors,
      paint: (cell, _row, column) => (column === 2 ? paintOutcome(colors, cell) : column === note ? colors.dim(cell) : cell),
    }),
  );
}

/** `--json`: one object per run, as the summary table has them. */
export function summaryJson(results: SyncRow[]): unknown {
  return results.map(({ plan, ...r }) => ({
    account: plan.account,
    source: plan.source,
    key: plan.key,
    ...("error" in r ? { result: "failed", error: r.error } : r.value),
  }));
}

/**
 * `--once`: the planned runs as sync.source jobs through the worker's handler and WorkerHost, in this process on a
 * private queue (src/queue/run-now.ts), one at a time. A failed run is reported, not retried: its next scheduled run is.
 */
async function runPlanHere(args: {
  services: Services;
  plan: PlannedRun[];
  full: boolean | undefined;
  log: Logger;
  signal: AbortSignal;
  progress?: ProgressSink | undefined;
  downloadsHere?: boolean | undefined;
}): Promise<SyncRow[]> {
  const { services, plan, log, signal } = args;
  const outcomes = await runSyncHere({
    services,
    log,
    runs: plan,
    full: args.full === true,
    signal,
    ...(args.progress ? { progress: args.progress } : {}),
    ...(args.downloadsHere ? { downloadsHere: true } : {}),
  });
  return outcomes.map((o, i): SyncRow => {
    const run = plan[i]!;
    if ("error" in o) return { plan: run, error: o.error, ...(o.interrupted ? { interrupted: true } : {}) };
    // Skipped without a run (the account needs re-authorization): a failure the person must act on.
    if (o.value.status === "skipped" && !o.value.result) return { plan: run, error: o.value.reason ?? "skipped" };
    return { plan: run, value: o.value };
  });
}

/**
 * `--once`'s runs with the live progress view, stopped by `signal`; also `dvault archive --once`'s first step. The
 * process holds a lease while they run, as `download --once` does: `dvault engine migrate` waits for it, and while a
 * move holds one this stops with one line before any run (holdWorkLease, src/engine/move.ts).
 */
export async function syncHere(args: {
  services: Services;
  plan: PlannedRun[];
  full: boolean | undefined;
  log: Logger;
  json: boolean;
  signal: AbortSignal;
  /** A view shared with another step (archive's), left drawing at the end; else one of its own. */
  view?: ProgressView;
  /** The downloads the sync wants are run by this process, beside it (archive's): not handed to the worker's queue. */
  downloadsHere?: boolean;
}): Promise<SyncRow[]> {
  // A database that refuses writes (a standby, read-only) fails every source the same way: one line before any run
  // (and before any call to the service), exit 3, rather than a table of failed sources.
  await args.services.accounts.proveWritable();
  const lease = await holdWorkLease(args.services.coord, args.services.config.redisPrefix);
  const view = args.view ?? progressView({ json: args.json });
  try {
    const { services, plan, full, log, signal, downloadsHere } = args;
    return await runPlanHere({ services, plan, full, log, signal, progress: view.sink, downloadsHere });
  } finally {
    if (!args.view) view.stop();
    await lease.stop().catch(() => undefined);
  }
}

/**
 * The exit code's reason after the runs, undefined for 0: an account that lost its grant (before or during the
 * run) is the person's to fix, 4 before the rest; then stopped by a signal (130, naming what did not finish), then
 * failed sources (1). `again` is the command that continues (the summary's advice).
 */
export async function syncVerdict(services: Services, plan: PlannedRun[], results: SyncRow[], again: string): Promise<UserError | undefined> {
  const planned = new Set(plan.map((p) => p.accountId));
  const key = services.installKey();
  const lost = (await services.accounts.list()).filter((a) => planned.has(a.id)).flatMap((a) => unusableAccount(key, a) ?? []);
  if (lost.length) return needsLoginError(lost);
  const stopped = results.filter((r) => "error" in r && r.interrupted);
  if (stopped.length) {
    return new UserError(
      `stopped before the end: ${stopped.length} source run(s) did not finish (STOPPED above); run ${again} again to continue from what they saved`,
      EXIT_INTERRUPTED,
    );
  }
  const failed = results.filter((r) => "error" in r);
  if (failed.length) {
    return new UserError(
      `${failed.length} source(s) failed: ${failed.map((f) => ("error" in f ? `${f.plan.account}/${f.plan.source}` : "")).join(", ")} (see the note column)`,
    );
  }
  return undefined;
}

export function registerSyncCommand(program: Command): void {
  program
    .command("sync")
    .description("sync every source now: in this process with --once, otherwise by asking the running worker")
    .option("--once", "run the sources to completion in this process, then exit")
    .option("--only <sources>", `comma-separated sources to run whether due or not (${SOURCE_NAMES.join(", ")})`)
    .option("--account <name>", "only this account")
    .option("--full", "force a full sweep (catches edits, reorderings and removals)")
    .option("--due", "only the sources that are due (never run, past their interval, or failed last time)")
    .option("--all", "run every source, due or not (the default; kept for scripts)")
    .addHelpText(
      "after",
      "\nIn the summary, paced counts the requests dvault's own pacer held back (nothing was refused) and throttled the\nanswers in which the service refused a request as too many (429, 503, a threshold error): docs/status.md." +
        ARCHIVE_EXIT_CODES_HELP,
    )
    .option("--json", "print the result as JSON")
    .action(async (opts: SyncOptions) => {
      const config = loadConfig();
      const log = cliLogger(config);
      const only = parseOnly(opts.only);
      const services = await createServices({ config, log });
      try {
        if (opts.due && opts.all) throw new UserError("--due and --all contradict each other: choose one");
        const plan = await planRuns(services, {
          ...(only ? { only } : {}),
          ...(opts.account ? { account: opts.account } : {}),
          ...(opts.due ? { due: true } : {}),
        });
        if (plan.length === 0) {
          if (opts.json) printJson([]);
          else printOut("nothing is due; leave out --due (or use --only <sources>) to run anyway");
          return;
        }
        if (!opts.once) return await enqueue(services, plan, opts.full, opts.json === true);
        const stop = abortOnSignal();
        const results = await syncHere({ services, plan, full: opts.full, log, json: opts.json === true, signal: stop.signal }).finally(() => stop.dispose());
        await reportRun({
          json: opts.json === true,
          print: () => (opts.json ? printJson(summaryJson(results)) : printSummary(results)),
          verdict: async () => {
            const error = await syncVerdict(services, plan, results, "dvault sync --once");
            if (error) throw error;
          },
        });
      } finally {
        await services.close();
      }
    });
}

/** Through the producer, so the definition's options apply and a request made after the last one finished runs. */
async function enqueue(services: Services, plan: PlannedRun[], full: boolean | undefined, json: boolean): Promise<void> {
  // Queued on an engine the install was moved away from, the runs would wait where no worker looks.
  await refuseIfMovedAway(services.coord, services.config.redisPrefix, "nothing was queued");
  const producer = new Producer([...JOB_DEFINITIONS], services.queues);
  try {
    for (const run of plan) {
      await producer.enqueue("sync.source", { accountId: run.accountId, source: run.source, key: run.key, ...(full ? { full: true } : {}) });
    }
    const note = await noWorkerNote(services, "sync");
    if (json) printJson({ queued: plan.map((r) => ({ account: r.account, source: r.source, key: r.key })), workerRunning: note === undefined });
    else printOut(`queued ${plan.length} source run(s) for the worker; follow them with dvault status (or run with --once)`);
    if (note) printErr(`dvault: ${note}`);
  } finally {
    await producer.close();
  }
}
