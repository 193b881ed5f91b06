// `dvault download --once`: the downloads in this process, `concurrency` at a time, until nothing is due
// (quota-deferred rows stay deferred), with a progress line every few seconds and a summary (once-summary.ts).
// The rows are claimed batch after batch (once-claims.ts) and run as download.file jobs through the worker's
// WorkerHost and job body (file-job.ts) on a private queue (src/queue/run-now.ts), with this run's retry policy:
// a failure that passes is tried again, after a growing backoff, until the file's or the run's patience is spent
// (src/queue/run-patience.ts), or a fixed number of attempts; only what still fails then is left failed for the
// long-term schedule (retry.ts). Rows a killed run left queued are taken over (a per-file lock, src/coord/lock.ts, keeps a
// running worker out).
import { isThrottleDelay } from "../api/errors.ts";
import type { ReauthRequiredError } from "../api/token-errors.ts";
import { unusableAccount } from "../api/token-manager.ts";
import { type ClaimedDownload, DownloadRepository } from "../db/download.repository.ts";
import { withTransaction } from "../db/with-transaction.ts";
import { needsLoginError, noUserAccountNamed, UserError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { holdWorkLease } from "../queue/holder.ts";
import { checkCatalogue, defineJob, type JobContext, type JobResult } from "../queue/job-definition.ts";
import { safeSink, type ProgressSink } from "../queue/progress.ts";
import { runNow } from "../queue/run-now.ts";
import { RunPatience, type RunPatienceSettings } from "../queue/run-patience.ts";
import { scrubString } from "../redact.ts";
import type { Services } from "../services.ts";
import { downloadDepsFor, type DownloadDeps } from "./deps.ts";
import type { PauseState } from "./disk-guard.ts";
import { downloadJobId, type DownloadFilePayload } from "./download-job.ts";
import { downloadFileDefinition } from "./file-job-definition.ts";
import { type FileJobContext, runFileJob } from "./file-job.ts";
import { OnceClaims, reservationTurns } from "./once-claims.ts";
import { countOutcome, type DownloadSummary, emptySummary, startProgressLine } from "./once-summary.ts";
import type { DownloadOutcome, ReservationTurn } from "./outcome.ts";
import { regenerateLinksIfDirty, regenerateReadableLinks } from "./readable-links.ts";
import { LinkBlockedError } from "../storage/readable-tree.ts";
import { sweepWrittenAtStart } from "./partial-sweep.ts";
import { reclaimDeadHolders } from "./reclaim.ts";
import { isMissingGrant } from "./retry.ts";

export type { DownloadSummary } from "./once-summary.ts";

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
  /**
   * Work beside the run that makes rows due (`dvault archive --once`'s sync step): until it settles, the run takes
   * only files that cannot spend the weekly allowance and waits for more rather than ending (once-claims.ts).
   */
  alongside?: Promise<unknown>;
};

/** One claimed row while the run has it: its turn at the allowance, its last answer, since when another process holds it. */
type Tracked = { row: ClaimedDownload; turn: ReservationTurn; last?: DownloadOutcome | undefined; busySince?: number };

/** What the run's steps share. */
type OnceRun = {
  opts: RunOnceOptions;
  deps: DownloadDeps;
  s: DownloadSummary;
  /** Accounts that must log in again: before the run, or found during it. */
  lost: Map<number, ReauthRequiredError>;
  tracked: Map<string, Tracked>;
  /** Stops the run: the caller's signal, or the disk guard pausing the downloads. */
  stopper: AbortController;
  tell: ProgressSink;
  patience: RunPatience | undefined;
  attempts: number;
  files: { claimed: number; settled: number; expected: number };
  storedSomething: boolean;
};

export async function runDownloadsOnce(opts: RunOnceOptions): Promise<DownloadSummary> {
  const { services, log } = opts;
  const deps = opts.deps ?? downloadDepsFor(services);
  const started = Date.now();
  const s = emptySummary();
  const { accounts, lost, able } = await selectAccounts(services, opts.account);
  const ids = accounts.map((a) => a.id);
  const leftNow = () =>
    deps.repo.remainingDownloads(
      ids,
      new Date(services.now()),
      able.filter((id) => !ids.includes(id)),
    );
  // What is left at the end is counted once the work beside the run has settled: until then it may still make rows
  // due (archive's sync, when the downloads paused or lost their accounts before it finished listing).
  const leftAtEnd = async () => {
    await opts.alongside?.then(
      () => undefined,
      () => undefined,
    );
    return leftNow();
  };
  // This run's claims are recorded under its lease, so that they come back soon if it is killed
  // (docs/RELIABILITY.md#work-held-by-a-dead-process). Taken before the pause switch is touched: while `dvault engine
  // migrate` moves the install, the run stops here with one line, nothing written (src/engine/move.ts).
  const lease = await holdWorkLease(services.coord, services.config.redisPrefix);
  const paused = await pausedAtStart(deps).catch(async (err: unknown) => {
    await lease.stop().catch(() => undefined);
    throw err;
  });
  if (paused) {
    await lease.stop().catch(() => undefined);
    return { ...s, paused, left: await leftAtEnd(), durationMs: Date.now() - started };
  }
  // What a killed run or worker held comes back first.
  await reclaimDeadHolders({ deps, log }).catch((err: unknown) => log.warn({ err }, "taking back the downloads of dead processes failed"));
  // And the partial files a killed process left that nothing resumes.
  await sweepWrittenAtStart(deps.archive, log);
  const stopper = new AbortController();
  const onOuter = () => stopper.abort();
  if (opts.signal?.aborted) stopper.abort();
  else opts.signal?.addEventListener("abort", onOuter, { once: true });
  const stopProgress = startProgressLine(s, log, opts.progressEveryMs ?? 5000);
  const run: OnceRun = {
    opts,
    deps,
    s,
    lost,
    tracked: new Map(),
    stopper,
    tell: safeSink(opts.progress),
    patience: opts.attempts === undefined ? new RunPatience(opts.patience ?? services.config.runPatience) : undefined,
    attempts: Math.max(1, opts.attempts ?? 1),
    files: { claimed: 0, settled: 0, expected: 0 },
    storedSomething: false,
  };
  const batch = Math.max(1, Math.floor(opts.claimBatch ?? services.config.downloadClaimBatch));
  const claims = new OnceClaims({ services, deps, log, accounts, able, lost, batch, deviationids: opts.deviationids, lease, alongside: opts.alongside });
  // The bar's total is what is due (or queued) when the run starts, raised as claims find more.
  run.files.expected = await leftNow().then((atStart) => atStart.dueNow + atStart.queued);
  try {
    await claimAndRun(run, claims);
  } finally {
    stopProgress();
    opts.signal?.removeEventListener("abort", onOuter);
    await lease.drop(claims.held).catch(() => undefined);
    await lease.stop().catch(() => undefined);
  }
  await dropMootJobs(services, claims.fromQueue, log, opts.signal);
  // A paused run (the disk guard, a link out of the archive) leaves the tree to the next run, as one paused at its start
  // does: the marker a stored file set stays. Otherwise a run that stored nothing still makes the tree when it is
  // due (marked dirty, by-user/ deleted to rebuild it, or a rebuild due after an upgrade or a restore).
  if (s.paused === undefined) await writeLinks(deps, s, run.storedSomething);
  s.needsLogin = [...lost.values()].map((e) => ({ account: e.account, message: e.message }));
  s.interrupted = opts.signal?.aborted === true && s.paused === undefined;
  s.left = await leftAtEnd();
  s.durationMs = Date.now() - started;
  return s;
}

/**
 * The readable tree after a run: written when it stored something, else when it is due. A person's folder where a link
 * goes stops the write (the files are stored): the summary says what is in the way, and the changes stay due.
 */
async function writeLinks(deps: DownloadDeps, s: DownloadSummary, storedSomething: boolean): Promise<void> {
  try {
    const links = storedSomething ? await regenerateReadableLinks(deps) : await regenerateLinksIfDirty(deps);
    if (links) s.links = links;
  } catch (err) {
    if (!(err instanceof LinkBlockedError)) throw err;
    s.linksBlocked = err.message;
  }
}

/** Rows whose jobs go in one transaction (their row locks held meanwhile), and jobs removed at once within it. */
const MOOT_ROWS_PER_TX = 1000;
const MOOT_REMOVES_AT_ONCE = 50;

/**
 * The downloads queue's jobs for rows this run took over from it (a sync queues each wanted file for a worker) and
 * left held by no queue (stored, deferred, failed, given back): the table says what is due, so such a job only waits
 * to find nothing to do, and `status` counted it as waiting beside "nothing is due". Each row is locked while its job
 * goes (holdNotQueued), so a worker's claim cannot queue it again in between. A job a worker runs now is locked and
 * stays on Redis; on PostgreSQL alone BullMQ's remove may take one a worker has just begun, whose file job then finds
 * its row needs nothing. A stopped run stops here too: what it leaves only waits to find nothing to do.
 */
async function dropMootJobs(services: Services, fromQueue: readonly string[], log: Logger, signal: AbortSignal | undefined): Promise<void> {
  if (fromQueue.length === 0) return;
  const queue = services.queues.queue(downloadFileDefinition.queue);
  try {
    for (let i = 0; i < fromQueue.length && !signal?.aborted; i += MOOT_ROWS_PER_TX) {
      await withTransaction(services.pool, async (tx) => {
        // Only originals and texts are queued as download.file jobs (a degraded row is no job of its own).
        const moot = (await new DownloadRepository(tx).holdNotQueued(fromQueue.slice(i, i + MOOT_ROWS_PER_TX))).flatMap(({ deviationid, kind }) =>
          kind === "degraded" ? [] : [downloadJobId({ deviationid, kind })],
        );
        for (let j = 0; j < moot.length; j += MOOT_REMOVES_AT_ONCE) {
          await Promise.all(moot.slice(j, j + MOOT_REMOVES_AT_ONCE).map((id) => queue.remove(id).catch(() => 0)));
        }
      });
    }
  } catch (err) {
    log.warn({ err }, "removing the queue's jobs of files this run handled failed: they stay, to find nothing to do");
  } finally {
    await queue.close().catch(() => undefined);
  }
}

/** The disk guard's pause when it still holds (a pause whose cause has passed is lifted first), else undefined. */
async function pausedAtStart(deps: DownloadDeps): Promise<PauseState | undefined> {
  return (await deps.guard.tryResume()) ? undefined : deps.guard.pausedState();
}

/** The accounts the run is for, and those of them without a usable grant: they get no claims at all, their rows stay wanted until the login. */
async function selectAccounts(
  services: Services,
  account: string | undefined,
): Promise<{ accounts: { id: number; name: string }[]; lost: Map<number, ReauthRequiredError>; able: number[] }> {
  const all = await services.accounts.list();
  const users = all.filter((a) => a.kind === "user");
  const selected = users.filter((a) => !account || a.name === account);
  if (account && selected.length === 0) throw noUserAccountNamed(account, all);
  if (selected.length === 0) throw new UserError("no accounts yet: log in first with dvault auth login (or dvault auth import)");
  const lost = new Map<number, ReauthRequiredError>();
  const key = services.installKey();
  for (const a of selected) {
    const unusable = unusableAccount(key, a);
    if (unusable) lost.set(a.id, unusable);
  }
  if (lost.size === selected.length) throw missingGrants([...lost.values()]);
  // Every account of the install that can download, this run's or not: the works one wants as its own are left to it.
  const able = users.filter((a) => !lost.has(a.id) && !unusableAccount(key, a)).map((a) => a.id);
  return { accounts: selected.filter((a) => !lost.has(a.id)), lost, able };
}

/** Claims a batch, runs it to an end, and again, until no account has rows due or the run is stopped. */
async function claimAndRun(run: OnceRun, claims: OnceClaims): Promise<void> {
  const { services, log } = run.opts;
  const turn = reservationTurns();
  const entry = defineJob(downloadFileDefinition, (payload, ctx: JobContext) => runClaimedFile(run, payload, ctx));
  const busyWaitMs = run.opts.busyWaitMs ?? (run.deps.tuning.lockTtlMs ?? 15_000) + 5000;
  while (!run.stopper.signal.aborted && claims.open) {
    // A degraded rendition's row is never fetched on its own (its original is).
    const rows = (await claims.next()).filter((r): r is ClaimedDownload & { kind: DownloadFilePayload["kind"] } => r.kind !== "degraded");
    if (rows.length === 0) continue;
    run.files.claimed += rows.length;
    run.tell({ type: "files", finished: run.files.settled, total: Math.max(run.files.claimed, run.files.expected) });
    run.tracked.clear();
    for (const row of rows) run.tracked.set(downloadJobId(row), { row, turn: turn() });
    const outcomes = await runNow<JobContext>(
      {
        entries: checkCatalogue<JobContext>([entry]),
        definitions: [downloadFileDefinition],
        // A failure that passes comes back as a delay (RetryInRunError) while the patience lasts, so one attempt
        // each (or the fixed `attempts`, their backoff the fixed delay).
        retry: { in: "here", attempts: run.attempts, backoffMs: run.opts.retryDelayMs ?? 2000, jitter: 0 },
        backend: services.queues,
        log,
        queues: ["downloads"],
        concurrency: { downloads: Math.max(1, run.opts.concurrency ?? services.config.downloadConcurrency) },
        makeContext: (base) => base,
        // Put off to the next quota window: finished for this run, the row stays deferred. Held elsewhere
        // past the busy wait: left to its holder.
        settled: (_job, i) => {
          const t = run.tracked.get(downloadJobId(rows[i]!));
          if (t?.last?.status === "deferred" || t?.last?.status === "degraded") return true;
          return t?.last?.status === "busy" && Date.now() - (t.busySince ?? 0) >= busyWaitMs;
        },
        signal: run.stopper.signal,
        pollMs: 50,
      },
      rows.map((row) => ({ name: "download.file", payload: { deviationid: row.deviationid, kind: row.kind } })),
    );
    for (const [i, o] of outcomes.entries()) {
      const row = rows[i]!;
      if (o.state === "delayed" && run.tracked.get(downloadJobId(row))?.last?.status === "busy") run.s.busy++;
      // Stopped before it finished: back to wanted for the next run (a partial file is resumed then).
      if (o.state === "interrupted") await run.deps.repo.releaseDownload(row.id, new Date(services.now()));
    }
  }
}

/** The run's download.file job body: the worker's (file-job.ts), told of this run's accounts, counts and patience. */
async function runClaimedFile(run: OnceRun, payload: DownloadFilePayload, ctx: JobContext): Promise<JobResult> {
  const { services } = run.opts;
  const key = downloadJobId(payload);
  const t = run.tracked.get(key);
  if (!t) throw new Error(`download.file ${key} was not claimed by this run`);
  t.last = undefined;
  run.tell({ type: "start", task: { kind: "transfer", id: key, label: `${t.row.deviationid.slice(0, 8)} ${t.row.kind}` } });
  const ended: { status?: string } = {};
  try {
    if (t.row.accountId !== null && run.lost.has(t.row.accountId)) {
      await run.deps.repo.releaseDownload(t.row.id, new Date(services.now()));
      return { status: "skipped", reason: "the account must log in again" };
    }
    return await runFileJob(payload, fileJobContext(run, t, ctx, key, ended));
  } catch (err) {
    // A refresh the service refused mid-run: this account's rows wait for the login, not for retries.
    if (isMissingGrant(err) && t.row.accountId !== null && !run.lost.has(t.row.accountId)) {
      run.lost.set(t.row.accountId, err);
      run.opts.log.error({ account: err.account }, scrubString(err.message));
    }
    throw err;
  } finally {
    t.turn.pass();
    run.tell({ type: "end", id: key, outcome: ended.status ?? "retrying" });
    if (ended.status !== undefined && ended.status !== "busy")
      run.tell({ type: "files", finished: ++run.files.settled, total: Math.max(run.files.claimed, run.files.expected) });
  }
}

/** What file-job.ts is told in this run: the disk guard stops it, answers are counted, failures logged and summed. */
function fileJobContext(run: OnceRun, t: Tracked, ctx: JobContext, key: string, ended: { status?: string }): FileJobContext {
  const { services, log } = run.opts;
  const { s, patience } = run;
  return {
    deps: run.deps,
    log: ctx.log,
    signal: ctx.signal,
    attempt: ctx.attempt,
    attempts: ctx.attempts ?? run.attempts,
    paused: async (err) => {
      s.paused = err.state;
      run.stopper.abort();
      await run.deps.repo.releaseDownload(t.row.id, new Date(services.now()));
    },
    stored: async () => undefined,
    onBytes: (n) => {
      s.bytes += n;
      run.tell({ type: "bytes", id: key, bytes: n });
    },
    reservationTurn: t.row.kind === "original" ? t.turn : undefined,
    retryDelaysMs: run.opts.retryDelaysMs,
    busyRetryMs: 1000,
    retryInRun: patience && ((err) => patience.failed(key, isThrottleDelay(err) ? err.waitMs : 0)),
    // Counted as download-file.ts answers, so the progress lines move during the run; "busy" only once it is given up.
    onOutcome: (o) => {
      t.last = o;
      ended.status = o.status;
      if (o.status === "busy") {
        t.busySince ??= Date.now();
        return;
      }
      if (o.status !== "deferred") patience?.succeeded(key);
      if (countOutcome(s, o)) run.storedSomething = true;
    },
    onFailure: (f) => {
      if (!f.final) {
        log.info(
          { deviationid: t.row.deviationid, attempt: patience?.failuresOf(key) ?? ctx.attempt, err: f.message },
          "download attempt failed: trying again",
        );
        return;
      }
      s.failed++;
      ended.status = "failed";
      s.failures.push({ deviationid: t.row.deviationid, kind: t.row.kind, error: f.message, nextAttemptAt: f.nextAttemptAt });
      log.warn(
        { deviationid: t.row.deviationid, kind: t.row.kind, err: f.message, failures: f.failures, nextAttemptAt: f.nextAttemptAt?.toISOString() ?? null },
        f.nextAttemptAt ? "download failed: tried again later" : "download failed for good",
      );
    },
  };
}

/** One line for the accounts that must log in again (EXIT_NEEDS_LOGIN, as auth status). */
export const missingGrants = needsLoginError;
