// `dvault download --once`: the downloads in this process, `concurrency` at a time, until nothing is due
// (quota-deferred rows stay deferred), with a progress line every few seconds and a summary. Rows a
// killed run left queued are taken over (a per-file lock in Redis keeps a running worker out).
import { isThrottleDelay } from "../api/errors.ts";
import { grantUnusable, type ReauthRequiredError } from "../api/tokens.ts";
import type { ClaimedDownload } from "../db/download.repository.ts";
import { UserError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { holdLease } from "../queue/holder.ts";
import { scrubString } from "../redact.ts";
import type { Services } from "../services.ts";
import { downloadDepsFor, type DownloadDeps } from "./deps.ts";
import { DownloadsPausedError, type PauseState } from "./disk-guard.ts";
import { downloadFile, type DownloadOutcome, type ReservationTurn } from "./download-file.ts";
import { regenerateReadableLinks, type LinksResult } from "./readable-links.ts";
import { heldRowItem, reclaimDeadHolders } from "./reclaim.ts";
import { isMissingGrant, recordFailedAttempt } from "./retry.ts";

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
  durationMs: number;
};

export type RunOnceOptions = {
  services: Services;
  /** Only this account's downloads (by dvault's account name). */
  account?: string | undefined;
  concurrency?: number;
  log: Logger;
  signal?: AbortSignal;
  progressEveryMs?: number;
  /** Attempts per file in this run (transient failures; each attempt resumes the partial file). */
  attempts?: number;
  retryDelayMs?: number;
  /** How long to wait for files another process holds before leaving them to it. */
  busyWaitMs?: number;
  /** Delays before a failed file is due again, by failures in a row (default src/downloads/retry.ts). */
  retryDelaysMs?: readonly number[];
  deps?: DownloadDeps;
};

const BATCH = 500;

export async function runDownloadsOnce(opts: RunOnceOptions): Promise<DownloadSummary> {
  const { services, log } = opts;
  const deps = opts.deps ?? downloadDepsFor(services);
  const started = Date.now();
  const concurrency = Math.max(1, opts.concurrency ?? services.config.downloadConcurrency);
  const attempts = Math.max(1, opts.attempts ?? 3);
  const retryDelayMs = opts.retryDelayMs ?? 2000;
  const s: DownloadSummary = {
    done: 0, upgraded: 0, degraded: 0, deferred: 0, notDownloadable: 0, failed: 0, skipped: 0, busy: 0, partial: 0,
    bytes: 0, nextWindow: null, paused: undefined, links: undefined, failures: [], needsLogin: [], durationMs: 0,
  };

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
    if (paused) return { ...s, paused, durationMs: Date.now() - started };
  }

  // What a killed run or worker held comes back first; this run's claims are recorded under its lease,
  // so that they come back soon if it is killed in turn (docs/RELIABILITY.md#work-held-by-a-dead-process).
  const lease = await holdLease(services.redis, services.config.redisPrefix);
  const held: string[] = [];
  await reclaimDeadHolders({ deps, log }).catch((err: unknown) => log.warn({ err }, "taking back the downloads of dead processes failed"));

  // Rows come in priority order, a batch at a time; the first claim of each account also takes over
  // rows a killed run left queued.
  const pending: ClaimedDownload[] = [];
  const exhausted = new Set<number>();
  const firstClaim = new Set<number>();
  let claiming: Promise<void> | undefined;
  const refill = async () => {
    for (const account of accounts) {
      if (exhausted.has(account.id) || lost.has(account.id)) continue;
      const includeQueued = !firstClaim.has(account.id);
      firstClaim.add(account.id);
      const rows = await deps.repo.claimDueDownloads({
        accountId: account.id,
        now: new Date(services.now()),
        classes: services.config.downloadPriority,
        limit: BATCH,
        includeQueued,
      });
      if (rows.length < BATCH && !includeQueued) exhausted.add(account.id);
      held.push(...rows.map(heldRowItem));
      await lease.hold(rows.map(heldRowItem));
      pending.push(...rows);
      if (rows.length > 0) return;
    }
  };
  // Each claimed row takes a turn at the allowance in claim order (see DownloadRequest.reservationTurn):
  // with several lanes, the highest-priority files must still be the ones that spend it.
  let lastTurn: Promise<void> = Promise.resolve();
  const takeTurn = (): ReservationTurn => {
    const before = lastTurn;
    let pass: () => void = () => undefined;
    lastTurn = new Promise<void>((resolve) => (pass = resolve));
    return { wait: () => before, pass };
  };
  const next = async (): Promise<{ row: ClaimedDownload; turn: ReservationTurn } | undefined> => {
    while (pending.length === 0 && accounts.some((a) => !exhausted.has(a.id) && !lost.has(a.id)) && !stop) {
      claiming ??= refill().finally(() => (claiming = undefined));
      await claiming;
    }
    const row = pending.shift();
    return row ? { row, turn: takeTurn() } : undefined;
  };

  let stop = false;
  let storedSomething = false;
  const busy: ClaimedDownload[] = [];
  let lastBytes = 0;
  let lastAt = Date.now();
  const progress = setInterval(() => {
    const now = Date.now();
    const rate = ((s.bytes - lastBytes) / Math.max(1, now - lastAt)) * 1000;
    lastBytes = s.bytes;
    lastAt = now;
    log.info({ done: s.done, degraded: s.degraded, deferred: s.deferred, notDownloadable: s.notDownloadable, failed: s.failed, bytes: s.bytes, mbPerS: +(rate / 1e6).toFixed(1) }, "downloading");
  }, opts.progressEveryMs ?? 5000);
  progress.unref();

  const count = (o: DownloadOutcome) => {
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

  const runOne = async (row: ClaimedDownload, reservationTurn?: ReservationTurn): Promise<void> => {
    if (row.kind === "degraded") return;
    if (row.accountId !== null && lost.has(row.accountId)) {
      await deps.repo.releaseDownload(row.id, new Date(services.now()));
      return;
    }
    for (let attempt = 1; ; attempt++) {
      try {
        const outcome = await downloadFile(deps, {
          deviationid: row.deviationid,
          kind: row.kind,
          log,
          signal: opts.signal,
          onBytes: (n) => (s.bytes += n),
          reservationTurn: row.kind === "original" ? reservationTurn : undefined,
        });
        if (outcome.status === "busy") busy.push(row);
        else count(outcome);
        return;
      } catch (err) {
        if (err instanceof DownloadsPausedError) {
          s.paused = err.state;
          stop = true;
          await deps.repo.releaseDownload(row.id, new Date(services.now()));
          return;
        }
        if (opts.signal?.aborted) {
          stop = true;
          return;
        }
        if (isMissingGrant(err)) {
          // A refresh the service refused mid-run: this account's rows wait for the login, not for retries.
          if (row.accountId !== null && !lost.has(row.accountId)) {
            lost.set(row.accountId, err);
            log.error({ account: err.account }, scrubString(err.message));
          }
          await deps.repo.releaseDownload(row.id, new Date(services.now()));
          return;
        }
        const { final, message, failures, nextAttemptAt } = await recordFailedAttempt(deps, {
          deviationid: row.deviationid,
          kind: row.kind,
          err,
          attempt,
          attempts,
          ...(opts.retryDelaysMs ? { retryDelaysMs: opts.retryDelaysMs } : {}),
        });
        if (final) {
          s.failed++;
          s.failures.push({ deviationid: row.deviationid, kind: row.kind, error: message, nextAttemptAt });
          log.warn(
            { deviationid: row.deviationid, kind: row.kind, err: message, failures, nextAttemptAt: nextAttemptAt?.toISOString() ?? null },
            nextAttemptAt ? "download failed: tried again later" : "download failed for good",
          );
          return;
        }
        const waitMs = isThrottleDelay(err) ? Math.min(err.waitMs, 60_000) : retryDelayMs * 2 ** (attempt - 1);
        log.info({ deviationid: row.deviationid, attempt, waitMs }, "download attempt failed: trying again");
        await sleep(waitMs);
      }
    }
  };

  const lanes = Array.from({ length: concurrency }, async () => {
    for (;;) {
      if (stop) return;
      const item = await next();
      if (!item) return;
      // Texts never reserve; the finally hands the turn on for every path that did not already.
      if (item.row.kind !== "original") item.turn.pass();
      try {
        await runOne(item.row, item.turn);
      } finally {
        item.turn.pass();
      }
    }
  });
  try {
    await Promise.all(lanes);
    // Files another process held: wait for its lock to free (a killed process's expires), then try again.
    const deadline = Date.now() + (opts.busyWaitMs ?? (deps.tuning.lockTtlMs ?? 15_000) + 5000);
    while (busy.length > 0 && !stop && Date.now() < deadline) {
      await sleep(1000);
      const again = busy.splice(0);
      for (const row of again) await runOne(row);
    }
    s.busy = busy.length;
    if (stop) for (const row of pending.splice(0)) await deps.repo.releaseDownload(row.id, new Date(services.now()));
  } finally {
    clearInterval(progress);
    await lease.drop(held).catch(() => undefined);
    await lease.stop().catch(() => undefined);
  }
  if (storedSomething) s.links = await regenerateReadableLinks(deps);
  s.needsLogin = [...lost.values()].map((e) => ({ account: e.account, message: e.message }));
  s.durationMs = Date.now() - started;
  return s;
}

/** One line for the accounts that must log in again, naming the command for each (exit code 4, as auth status). */
export function missingGrants(errors: readonly Pick<ReauthRequiredError, "account" | "message">[]): UserError {
  if (errors.length === 1) return new UserError(errors[0]!.message, 4);
  return new UserError(
    `accounts ${errors.map((e) => `"${e.account}"`).join(", ")} must be authorized again: run ${errors.map((e) => `dvault auth login --account ${e.account}`).join(", then ")}`,
    4,
  );
}

function earliest(a: Date | null, b: Date): Date {
  return a === null || b < a ? b : a;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
