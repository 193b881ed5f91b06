// `dvault download --once`: the downloads in this process, `concurrency` at a time, until nothing is due
// (quota-deferred rows stay deferred), with a progress line every few seconds and a summary. The claimed rows run
// as download.file jobs through the worker's WorkerHost and job body on a private queue (src/queue/run-now.ts),
// with this run's patience: a failure that passes is tried again, after a growing backoff, until the file's or the
// run's patience is spent (src/queue/run-patience.ts); only what still fails then is left failed for the long-term
// schedule (retry.ts). Rows a killed run left queued are taken over (a per-file lock in Redis keeps a
// running worker out).
import { isThrottleDelay } from "../api/errors.ts";
import { grantUnusable, type ReauthRequiredError } from "../api/tokens.ts";
import type { ClaimedDownload, DownloadsLeft } from "../db/download.repository.ts";
import { needsLoginError, UserError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { holdLease } from "../queue/holder.ts";
import { safeSink, type ProgressSink } from "../queue/progress.ts";
import { checkCatalogue, defineJob, type JobContext } from "../queue/job-definition.ts";
import { createRedis } from "../queue/redis.ts";
import { runNow } from "../queue/run-now.ts";
import { RunPatience, type RunPatienceSettings } from "../queue/run-patience.ts";
import { scrubString } from "../redact.ts";
import type { Services } from "../services.ts";
import { downloadDepsFor, type DownloadDeps } from "./deps.ts";
import type { PauseState } from "./disk-guard.ts";
import type { DownloadOutcome, ReservationTurn } from "./outcome.ts";
import { downloadJobId, type DownloadFilePayload } from "./download-job.ts";
import { downloadFileDefinition } from "./file-job-definition.ts";
import { runFileJob } from "./file-job.ts";
import { regenerateReadableLinks, type LinksResult } from "./readable-links.ts";
import { heldRowItem, reclaimDeadHolders } from "./reclaim.ts";
import { isMissingGrant } from "./retry.ts";

export type DownloadSummary = {
  done: number;
  /** Of `done`: degraded renditions replaced by their original. */
  upgraded: number;
  degraded: number;
  deferred: number;
  notDownloadable: number;
  failed: number;
  skipped: number;
  /** Held by another process until the end of the run. */
  busy: number;
  /** Files stored that are only part of the work (first image, blurred). */
  partial: number;
  /** Bytes received over the network. */
  bytes: number;
  /** When the allowance refills for what was deferred or degraded. */
  nextWindow: Date | null;
  paused: PauseState | undefined;
  links: LinksResult | undefined;
  /** Failed in this run; `nextAttemptAt` null when the failure is permanent (never retried on its own). */
  failures: { deviationid: string; kind: string; error: string; nextAttemptAt: Date | null }[];
  /** Accounts that must log in again (before or during the run): their rows were left wanted, untried. */
  needsLogin: { account: string; message: string }[];
  /** Stopped before the end (SIGINT, SIGTERM): what is left is in `left`. */
  interrupted: boolean;
  /** What is left of the selected accounts' downloads when the run ended, by the table's one definition of "due now". */
  left: DownloadsLeft;
  durationMs: number;
};

export type RunOnceOptions = {
  services: Services;
  /** Only this account's downloads (by dvault's account name); with `deviationids`, only these works' (`dvault add`). */
  account?: string | undefined;
  deviationids?: readonly string[] | undefined;
  concurrency?: number;
  log: Logger;
  signal?: AbortSignal;
  progressEveryMs?: number;
  /**
   * How long failures that pass are tried again in this run (default the config's DVAULT_RUN_* settings); the
   * waits are real time, so is its clock.
   */
  patience?: RunPatienceSettings;
  /** A fixed number of attempts per file instead of the patience (each attempt resumes the partial file). */
  attempts?: number;
  /** With `attempts`: the delay between them. */
  retryDelayMs?: number;
  /** How long to wait for files another process holds before leaving them to it. */
  busyWaitMs?: number;
  /** Delays before a failed file is due again, by failures in a row (default src/downloads/retry.ts). */
  retryDelaysMs?: readonly number[];
  /** Rows claimed at a time (default DVAULT_DOWNLOAD_CLAIM_BATCH): the run claims batch after batch until none is due. */
  claimBatch?: number;
  deps?: DownloadDeps;
  /** Told of each transfer and of the files settled so far (src/queue/progress.ts). */
  progress?: ProgressSink;
};

export async function runDownloadsOnce(opts: RunOnceOptions): Promise<DownloadSummary> {
  const { services, log } = opts;
  const deps = opts.deps ?? downloadDepsFor(services);
  const started = Date.now();
  const concurrency = Math.max(1, opts.concurrency ?? services.config.downloadConcurrency);
  const attempts = Math.max(1, opts.attempts ?? 1);
  const retryDelayMs = opts.retryDelayMs ?? 2000;
  const patience = opts.attempts === undefined ? new RunPatience(opts.patience ?? services.config.runPatience) : undefined;
  const s: DownloadSummary = {
    done: 0,
    upgraded: 0,
    degraded: 0,
    deferred: 0,
    notDownloadable: 0,
    failed: 0,
    skipped: 0,
    busy: 0,
    partial: 0,
    bytes: 0,
    nextWindow: null,
    paused: undefined,
    links: undefined,
    failures: [],
    needsLogin: [],
    interrupted: false,
    left: NOTHING_LEFT,
    durationMs: 0,
  };
  const batch = Math.max(1, Math.floor(opts.claimBatch ?? services.config.downloadClaimBatch));

  const selected = (await services.accounts.list()).filter((a) => a.kind === "user" && (!opts.account || a.name === opts.account));
  if (opts.account && selected.length === 0) throw new UserError(`no account named "${opts.account}": see dvault auth status`);
  if (selected.length === 0) throw new UserError("no accounts yet: log in first with dvault auth login (or dvault auth import)");
  // An account without a usable grant gets no claims at all: its rows stay wanted until the login.
  const lost = new Map<number, ReauthRequiredError>();
  for (const a of selected) {
    const unusable = grantUnusable(a);
    if (unusable) lost.set(a.id, unusable);
  }
  if (lost.size === selected.length) throw missingGrants([...lost.values()]);
  const accounts = selected.filter((a) => !lost.has(a.id));

  if (!(await deps.guard.tryResume())) {
    const paused = await deps.guard.pausedState();
    if (paused) return { ...s, paused, left: await deps.repo.remainingDownloads(ids(accounts), new Date(services.now())), durationMs: Date.now() - started };
  }

  // What a killed run or worker held comes back first; this run's claims are recorded under its lease,
  // so that they come back soon if it is killed in turn (docs/RELIABILITY.md#work-held-by-a-dead-process).
  const lease = await holdLease(services.redis, services.config.redisPrefix);
  const held: string[] = [];
  await reclaimDeadHolders({ deps, log }).catch((err: unknown) => log.warn({ err }, "taking back the downloads of dead processes failed"));

  // This run stops early when the disk guard pauses the downloads or the caller's signal fires.
  const stopper = new AbortController();
  const onOuter = () => stopper.abort();
  if (opts.signal?.aborted) stopper.abort();
  else opts.signal?.addEventListener("abort", onOuter, { once: true });

  const tell = safeSink(opts.progress);
  let claimedFiles = 0;
  let settledFiles = 0;
  let storedSomething = false;
  let lastBytes = 0;
  let lastAt = Date.now();
  const progress = setInterval(() => {
    const now = Date.now();
    const rate = ((s.bytes - lastBytes) / Math.max(1, now - lastAt)) * 1000;
    lastBytes = s.bytes;
    lastAt = now;
    const { done, degraded, deferred, notDownloadable, failed, bytes } = s;
    log.info({ done, degraded, deferred, notDownloadable, failed, bytes, mbPerS: +(rate / 1e6).toFixed(1) }, "downloading");
  }, opts.progressEveryMs ?? 5000);
  progress.unref();

  // Counted as download-file.ts answers, so the progress lines move during the run; "busy" only once it is given up.
  const count = (o: DownloadOutcome, key: string) => {
    if (o.status !== "busy" && o.status !== "deferred") patience?.succeeded(key);
    switch (o.status) {
      case "done":
        s.done++;
        if (o.upgraded) s.upgraded++;
        if (o.partial) s.partial++;
        storedSomething = true;
        break;
      case "degraded":
        s.degraded++;
        if (o.partial) s.partial++;
        storedSomething = true;
        s.nextWindow = earliest(s.nextWindow, o.nextWindow);
        break;
      case "deferred":
        s.deferred++;
        s.nextWindow = earliest(s.nextWindow, o.nextWindow);
        break;
      case "not_downloadable":
        s.notDownloadable++;
        if (o.partial) s.partial++;
        if (o.rendition) storedSomething = true;
        break;
      case "skipped":
        s.skipped++;
        break;
      case "busy":
        break;
    }
  };

  // The files run as download.file jobs through the worker's WorkerHost and job body (file-job.ts), here on a
  // private queue (src/queue/run-now.ts); a failure that passes comes back as a delay (RetryInRunError) while the
  // patience lasts, so the job is queued with one attempt (or the fixed `attempts`).
  const busyWaitMs = opts.busyWaitMs ?? (deps.tuning.lockTtlMs ?? 15_000) + 5000;
  const definition = { ...downloadFileDefinition, attempts, backoffMs: retryDelayMs, jitter: 0 };
  type Tracked = { row: ClaimedDownload; turn: ReservationTurn; last?: DownloadOutcome | undefined; busySince?: number };
  const tracked = new Map<string, Tracked>();
  const entry = defineJob<"download.file", DownloadFilePayload, JobContext>(definition, async (payload, ctx) => {
    const key = downloadJobId(payload);
    const t = tracked.get(key);
    if (!t) throw new Error(`download.file ${downloadJobId(payload)} was not claimed by this run`);
    t.last = undefined;
    const taskId = downloadJobId(payload);
    tell({ type: "start", task: { kind: "transfer", id: taskId, label: `${t.row.deviationid.slice(0, 8)} ${t.row.kind}` } });
    let ended: string | undefined;
    try {
      if (t.row.accountId !== null && lost.has(t.row.accountId)) {
        await deps.repo.releaseDownload(t.row.id, new Date(services.now()));
        return { status: "skipped", reason: "the account must log in again" };
      }
      return await runFileJob(payload, {
        deps,
        log: ctx.log,
        signal: ctx.signal,
        attempt: ctx.attempt,
        attempts: ctx.attempts ?? attempts,
        paused: async (err) => {
          s.paused = err.state;
          stopper.abort();
          await deps.repo.releaseDownload(t.row.id, new Date(services.now()));
        },
        stored: async () => undefined,
        onBytes: (n) => {
          s.bytes += n;
          tell({ type: "bytes", id: taskId, bytes: n });
        },
        reservationTurn: t.row.kind === "original" ? t.turn : undefined,
        retryDelaysMs: opts.retryDelaysMs,
        busyRetryMs: 1000,
        retryInRun: patience && ((err) => patience.failed(key, isThrottleDelay(err) ? err.waitMs : 0)),
        onOutcome: (o) => {
          t.last = o;
          ended = o.status;
          if (o.status === "busy") t.busySince ??= Date.now();
          else count(o, key);
        },
        onFailure: (f) => {
          if (!f.final) {
            const tries = patience?.failuresOf(key) ?? ctx.attempt;
            log.info({ deviationid: t.row.deviationid, attempt: tries, err: f.message }, "download attempt failed: trying again");
            return;
          }
          s.failed++;
          ended = "failed";
          s.failures.push({ deviationid: t.row.deviationid, kind: t.row.kind, error: f.message, nextAttemptAt: f.nextAttemptAt });
          log.warn(
            { deviationid: t.row.deviationid, kind: t.row.kind, err: f.message, failures: f.failures, nextAttemptAt: f.nextAttemptAt?.toISOString() ?? null },
            f.nextAttemptAt ? "download failed: tried again later" : "download failed for good",
          );
        },
      });
    } catch (err) {
      // A refresh the service refused mid-run: this account's rows wait for the login, not for retries.
      if (isMissingGrant(err) && t.row.accountId !== null && !lost.has(t.row.accountId)) {
        lost.set(t.row.accountId, err);
        log.error({ account: err.account }, scrubString(err.message));
      }
      throw err;
    } finally {
      t.turn.pass();
      tell({ type: "end", id: taskId, outcome: ended ?? "retrying" });
      if (ended !== undefined && ended !== "busy") tell({ type: "files", finished: ++settledFiles, total: Math.max(claimedFiles, expected) });
    }
  });

  // Each claimed row takes a turn at the allowance in claim order (see DownloadRequest.reservationTurn):
  // with several jobs at once, the highest-priority files must still be the ones that spend it.
  let lastTurn: Promise<void> = Promise.resolve();
  const takeTurn = (): ReservationTurn => {
    const before = lastTurn;
    let pass: () => void = () => undefined;
    lastTurn = new Promise<void>((resolve) => (pass = resolve));
    return { wait: () => before, pass };
  };

  // Rows come in priority order, a batch at a time, until a claim finds none due: a batch is a unit of claiming,
  // never a ceiling of the run. Every claim also takes over rows a queue held when the run began (a killed run's,
  // a stopped worker's; a running worker keeps the file it is on through the per-file lock), never the run's own
  // claims, which are stamped after its start even on a clock that stands still: a file another process holds
  // past the busy wait is left to it.
  const exhausted = new Set<number>();
  const runStart = new Date(services.now());
  const claimTime = () => new Date(Math.max(services.now(), runStart.getTime() + 1));
  const had = new Set<string>();
  const claim = async (): Promise<ClaimedDownload[]> => {
    for (const account of accounts) {
      if (exhausted.has(account.id) || lost.has(account.id)) continue;
      const rows = await deps.repo.claimDueDownloads({
        accountId: account.id,
        now: claimTime(),
        classes: services.config.downloadPriority,
        limit: batch,
        queuedBefore: runStart,
        deviationids: opts.deviationids,
      });
      // A claim of nothing new (rows this run already had, left due by their outcome) ends the account's claims:
      // the run never loops on the same files.
      const fresh = rows.filter((r) => !had.has(r.id));
      const again = rows.filter((r) => had.has(r.id));
      for (const r of again) await deps.repo.releaseDownload(r.id, new Date(services.now()));
      if (again.length > 0) log.warn({ account: account.name, rows: again.length }, "rows this run already handled are due again: left for the next run");
      if (fresh.length === 0) {
        exhausted.add(account.id);
        continue;
      }
      for (const r of fresh) had.add(r.id);
      held.push(...fresh.map(heldRowItem));
      await lease.hold(fresh.map(heldRowItem));
      return fresh;
    }
    return [];
  };
  const leftNow = () => deps.repo.remainingDownloads(ids(accounts), new Date(services.now()));
  // The bar's total is what is due (or queued) when the run starts, raised as claims find more.
  const atStart = await leftNow();
  const expected = atStart.dueNow + atStart.queued;

  try {
    while (!stopper.signal.aborted && accounts.some((a) => !exhausted.has(a.id) && !lost.has(a.id))) {
      // A degraded rendition's row is never fetched on its own (its original is).
      const rows = (await claim()).filter((r): r is ClaimedDownload & { kind: DownloadFilePayload["kind"] } => r.kind !== "degraded");
      if (rows.length === 0) continue;
      claimedFiles += rows.length;
      tell({ type: "files", finished: settledFiles, total: Math.max(claimedFiles, expected) });
      tracked.clear();
      for (const row of rows) tracked.set(downloadJobId({ deviationid: row.deviationid, kind: row.kind }), { row, turn: takeTurn() });
      const outcomes = await runNow<JobContext>(
        {
          entries: checkCatalogue<JobContext>([entry]),
          definitions: [definition],
          redis: services.redis,
          connection: () => createRedis(services.config.redisUrl, "worker"),
          prefix: services.config.redisPrefix,
          log,
          queues: ["downloads"],
          concurrency: { downloads: concurrency },
          makeContext: (base) => base,
          retryHere: true,
          // Put off to the next quota window: finished for this run, the row stays deferred. Held elsewhere
          // past the busy wait: left to its holder.
          settled: (_job, i) => {
            const t = tracked.get(downloadJobId({ deviationid: rows[i]!.deviationid, kind: rows[i]!.kind }));
            if (t?.last?.status === "deferred" || t?.last?.status === "degraded") return true;
            return t?.last?.status === "busy" && Date.now() - (t.busySince ?? 0) >= busyWaitMs;
          },
          signal: stopper.signal,
          pollMs: 50,
        },
        rows.map((row) => ({ name: "download.file", payload: { deviationid: row.deviationid, kind: row.kind } })),
      );
      for (const [i, o] of outcomes.entries()) {
        const row = rows[i]!;
        const t = tracked.get(downloadJobId({ deviationid: row.deviationid, kind: row.kind }));
        if (o.state === "delayed" && t?.last?.status === "busy") s.busy++;
        // Stopped before it finished: back to wanted for the next run (a partial file is resumed then).
        if (o.state === "interrupted") await deps.repo.releaseDownload(row.id, new Date(services.now()));
      }
    }
  } finally {
    clearInterval(progress);
    opts.signal?.removeEventListener("abort", onOuter);
    await lease.drop(held).catch(() => undefined);
    await lease.stop().catch(() => undefined);
  }
  if (storedSomething) s.links = await regenerateReadableLinks(deps);
  s.needsLogin = [...lost.values()].map((e) => ({ account: e.account, message: e.message }));
  s.interrupted = opts.signal?.aborted === true && s.paused === undefined;
  s.left = await leftNow();
  s.durationMs = Date.now() - started;
  return s;
}

const NOTHING_LEFT: DownloadsLeft = {
  dueNow: 0,
  queued: 0,
  deferred: 0,
  degradedWaiting: 0,
  nextWindow: null,
  retryLater: 0,
  nextRetry: null,
  failedForGood: 0,
};

/** One line for the accounts that must log in again (EXIT_NEEDS_LOGIN, as auth status). */
export const missingGrants = needsLoginError;

function ids(accounts: readonly { id: number }[]): number[] {
  return accounts.map((a) => a.id);
}

function earliest(a: Date | null, b: Date): Date {
  return a === null || b < a ? b : a;
}
