// Runs one source of one account to completion: the same code path for a worker's job and `dvault sync --once`.
// It owns the per-source lock, the account's state, the token, the bookkeeping in sync_sources and
// the outcome; the source itself only walks pages (src/sync/sources/*).
import { createHash } from "node:crypto";
import { isEndpointGone, userStateOf } from "../api/errors.ts";
import { ensureFreshToken } from "../api/account-calls.ts";
import { ReauthRequiredError } from "../api/token-errors.ts";
import type { DaClient } from "../api/client.ts";
import type { AccountRow } from "../db/account.repository.ts";
import type { SourceRef, SourceState } from "../db/sync-state.repository.ts";
import { withTransaction } from "../db/with-transaction.ts";
import { InterruptedError, type SkippableError } from "../queue/job-definition.ts";
import { safeSink, type ProgressSink } from "../queue/progress.ts";
import { acquireLock } from "../coord/lock.ts";
import { scrubString } from "../redact.ts";
import type { Services } from "../services.ts";
import { syncRepos, type SyncRepos } from "./repos.ts";
import { UserUnavailableError } from "./sources/user-state.ts";
import { nextRunOf, type Schedules } from "../config/schedules.ts";
import { sourceSchedule } from "./schedules.ts";
import { FULL_SWEEP_EVERY_MS, type ItemCounters, type SourceDefinition, type SourceName, type SourceOutcome } from "./source.ts";

export type RunSourceRequest = {
  accountId: number;
  source: SourceName;
  key?: string;
  /** Force (true) or forbid (false) a full sweep; by default one runs on the first sync and when due. */
  full?: boolean;
};

export type RunSourceResult = {
  accountId: number;
  account: string;
  source: SourceName;
  key: string;
  status: "ok" | "degraded" | "incomplete" | "skipped";
  reason?: string;
  full: boolean;
  counters: ItemCounters;
  apiCalls: number;
  /** Requests that waited for dvault's own pacer (not a refusal: docs/status.md#paced-throttled-deferred). */
  paced: number;
  /** Answers in which the service refused a request as too many (429, 503, a threshold error). */
  throttled: number;
  /** Answers skipped as unreadable in this run (kept in unreadable_responses): responses and single items. */
  unreadable: number;
  durationMs: number;
};

/** The account can't sync now for a reason that needs a person (re-authorization); the job completes as skipped. */
export class SourceSkippedError extends Error implements SkippableError {
  readonly jobOutcome = "skip" as const;
  constructor(message: string) {
    super(message);
    this.name = "SourceSkippedError";
  }
}

export type RunSourceOptions = {
  services: Services;
  sources: ReadonlyMap<SourceName, SourceDefinition>;
  signal?: AbortSignal;
  /** Per-source interval overrides (ms). */
  everyMs?: Partial<Record<SourceName, number>>;
  /** The settings' schedules (DVAULT_SCHEDULE_*) when the worker re-read them; default the config's. */
  schedules?: Schedules;
  lockTtlMs?: number;
  /** Told when the run starts, between pages and when it ends (src/queue/progress.ts). */
  progress?: ProgressSink;
};

export function lockKey(prefix: string, req: RunSourceRequest): string {
  return `${prefix}:sync-lock:${req.accountId}:${req.source}:${req.key ?? ""}`;
}

/**
 * A full sweep is due on the first run and then weekly, shifted by up to a day per (account, source, key)
 * so that sources don't all sweep at once.
 */
export function isSweepDue(state: SourceState | null, req: RunSourceRequest, now: number): boolean {
  if (!state?.lastCompleteSweepAt) return true;
  const spread =
    createHash("sha256")
      .update(`${req.accountId}:${req.source}:${req.key ?? ""}`)
      .digest()
      .readUInt32BE(0) %
    (24 * 3600_000);
  return now - state.lastCompleteSweepAt.getTime() >= FULL_SWEEP_EVERY_MS - spread;
}

function sumCalls(calls: Record<string, Record<string, number>>): number {
  let total = 0;
  for (const byStatus of Object.values(calls)) for (const n of Object.values(byStatus)) total += n;
  return total;
}

export async function runSource(req: RunSourceRequest, options: RunSourceOptions): Promise<RunSourceResult> {
  const { services } = options;
  const key = req.key ?? "";
  const definition = options.sources.get(req.source);
  if (!definition) throw new Error(`unknown sync source "${req.source}"`);
  const row = await services.accounts.findById(req.accountId);
  if (!row) throw new SourceSkippedError(`account #${req.accountId} no longer exists`);
  const base = { accountId: row.id, account: row.name, source: req.source, key };
  const skipped = (reason: string): RunSourceResult => ({
    ...base,
    status: "skipped",
    reason,
    full: false,
    counters: { new: 0, changed: 0, removed: 0 },
    apiCalls: 0,
    paced: 0,
    throttled: 0,
    unreadable: 0,
    durationMs: 0,
  });
  if (row.state === "needs_reauth" || row.state === "revoked") {
    throw new SourceSkippedError(
      `account "${row.name}" needs re-authorization (${row.stateReason ?? row.state}); run: dvault auth login --account ${row.name}`,
    );
  }
  if (row.kind !== "user") return skipped(`account "${row.name}" has no user grant`);

  const lock = await acquireLock(services.coord, lockKey(services.config.redisPrefix, req), options.lockTtlMs ?? 60_000);
  if (!lock) return skipped("another process is syncing this source right now");
  const repos = syncRepos(services.pool);
  const ref = { accountId: row.id, source: req.source, key };
  const started = services.now();
  const startedAt = new Date(started);
  const counters: ItemCounters = { new: 0, changed: 0, removed: 0 };
  // This run's own transports, so their counters are exactly this run's calls (the user's and the public client's).
  const transports: Array<Awaited<ReturnType<Services["apiFor"]>>["transport"]> = [];
  const bookkeeping = () => ({
    ...counters,
    apiCalls: transports.reduce((n, t) => n + sumCalls(t.stats.calls), 0),
    paced: transports.reduce((n, t) => n + t.stats.paced.count, 0),
    throttled: transports.reduce((n, t) => n + t.stats.throttled, 0),
    durationMs: services.now() - started,
  });
  const unreadable = () => transports.reduce((n, t) => n + t.stats.unreadable.responses + t.stats.unreadable.items, 0);
  const log = services.log.child({ account: row.name, source: req.source, ...(key ? { key } : {}) });
  const progress = safeSink(options.progress);
  const taskId = `${row.id}:${req.source}:${key}`;
  const tell = () => progress({ type: "source", id: taskId, items: counters.new + counters.changed + counters.removed, calls: bookkeeping().apiCalls });
  progress({ type: "start", task: { kind: "source", id: taskId, label: `${row.name}/${req.source}${key ? `:${key}` : ""}` } });
  let ended = "failed";
  try {
    const api = await services.apiFor(row.id);
    const me = await identified(services, row, api.client);
    transports.push(api.transport);
    let publicApi: Promise<Awaited<ReturnType<Services["publicApi"]>>> | undefined;
    const publicClient = async () => {
      // No client credentials (or the token request fails): the source falls back to the user's client.
      publicApi ??= services.publicApi().then(
        (pub) => {
          if (pub) transports.push(pub.transport);
          return pub;
        },
        () => undefined,
      );
      return (await publicApi)?.client;
    };
    const state = await repos.syncState.getSourceState(ref);
    // An interrupted full sweep resumes as one, from its original start: rows it saw before the
    // interruption were seen after that start, so the final "not seen since" cut stays right.
    const resumingSweep = req.full !== false && state?.sweepStartedAt != null;
    const full = resumingSweep || (req.full ?? isSweepDue(state, req, started));
    const sweepStart = full ? (state?.sweepStartedAt ?? startedAt) : startedAt;
    await repos.syncState.saveSourceState(ref, { lastRunAt: startedAt, ...(full ? { sweepStartedAt: sweepStart } : {}) }, startedAt);
    const signal = options.signal ?? new AbortController().signal;
    const outcome: SourceOutcome = await followingRename(definition, services)
      .run({
        account: { id: row.id, name: row.name, ...me },
        ref,
        key,
        client: api.client,
        publicClient,
        repos,
        transaction: (fn) => withTransaction(services.pool, (tx) => fn(syncRepos(tx))),
        state,
        full,
        startedAt: sweepStart,
        now: () => new Date(services.now()),
        log,
        signal,
        checkpoint: () => {
          if (signal.aborted || lock.lost) throw new InterruptedError(signal.aborted ? "shutdown" : "a lost sync lock");
          tell();
        },
        ensureFreshToken: () => ensureFreshToken({ tokens: api.tokens, transport: api.transport, signal }),
        counters,
      })
      .catch((err: unknown): SourceOutcome => {
        // A whole source whose endpoint is gone degrades here if the source didn't handle it itself.
        if (isEndpointGone(err)) return { result: "degraded", unavailableReason: `${err.operation} removed by the service (404 Api endpoint not found.)` };
        if (err instanceof UserUnavailableError) return { result: "degraded", unavailableReason: err.message };
        throw err;
      });
    const judged = await settleUnreadable(repos, ref, outcome, unreadable(), services.now());
    const finishedAt = new Date(services.now());
    const schedule = sourceSchedule({ schedules: options.schedules ?? services.config.schedules, everyMs: options.everyMs }, req.source, row.name);
    await repos.syncState.saveSourceState(
      ref,
      {
        lastResult: judged.result,
        lastError: null,
        unavailableReason: judged.unavailableReason ?? null,
        counters: bookkeeping(),
        nextRunAt: new Date(nextRunOf(schedule, finishedAt.getTime())),
        ...(full && outcome.completeSweep !== false ? { lastCompleteSweepAt: sweepStart, sweepStartedAt: null } : {}),
      },
      finishedAt,
    );
    const reason = judged.unavailableReason ?? judged.reason ?? judged.note;
    const result: RunSourceResult = {
      ...base,
      status: judged.result,
      ...(reason ? { reason } : {}),
      full,
      counters: { ...counters },
      apiCalls: bookkeeping().apiCalls,
      paced: bookkeeping().paced,
      throttled: bookkeeping().throttled,
      unreadable: unreadable(),
      durationMs: bookkeeping().durationMs,
    };
    log.info(
      {
        status: result.status,
        ...result.counters,
        apiCalls: result.apiCalls,
        paced: result.paced,
        throttled: result.throttled,
        unreadable: result.unreadable,
        full,
      },
      "source synced",
    );
    tell();
    ended = result.status;
    return result;
  } catch (err) {
    if (err instanceof InterruptedError) {
      ended = "interrupted";
      throw err;
    }
    const at = new Date(services.now());
    if (err instanceof ReauthRequiredError || err instanceof SourceSkippedError) {
      ended = "skipped";
      await repos.syncState.saveSourceState(ref, { lastResult: "skipped", lastError: err.message, counters: bookkeeping() }, at).catch(() => undefined);
      throw new SourceSkippedError(err.message);
    }
    await repos.syncState
      .saveSourceState(ref, { lastResult: "failed", lastError: scrubString(err instanceof Error ? err.message : String(err)), counters: bookkeeping() }, at)
      .catch(() => undefined);
    throw err;
  } finally {
    progress({ type: "end", id: taskId, outcome: ended });
    await lock.release();
  }
}

/**
 * The account's user: a grant stored without it (its login's /user/whoami failed: src/api/store-login.ts) is asked
 * now (/user/whoami) and stored, so the account syncs; it was skipped at every run as having "no user grant". The
 * same user already stored as another account (a second local name) is said and skipped: nothing is synced twice.
 */
async function identified(services: Services, row: AccountRow, client: DaClient): Promise<{ userId: string; username: string }> {
  if (row.userId && row.username) return { userId: row.userId, username: row.username };
  const who = await client.whoami();
  const twin = await services.accounts.findByUserId(who.userid);
  if (twin && twin.id !== row.id) {
    throw new SourceSkippedError(
      `account "${row.name}" is ${who.username}, whom account "${twin.name}" archives already: nothing is synced twice; end this login with dvault auth logout --account ${row.name}`,
    );
  }
  await services.accounts.saveIdentity(row.id, { userId: who.userid, username: who.username });
  services.log.info({ account: row.name, username: who.username }, "stored the account's user, which its login could not ask for");
  return { userId: who.userid, username: who.username };
}

/**
 * The account's own user renamed on the service: the calls named by the user (/user/profile/{username}, its posts,
 * its friends and watchers) answer "User not found." under the name stored at login, and every run of those sources
 * failed for ever, saying the archive keeps "their" works. The name is asked again (/user/whoami, once, only on that
 * answer), stored on the account, and the source run again with it.
 */
function followingRename(definition: SourceDefinition, services: Services): Pick<SourceDefinition, "run"> {
  return {
    run: async (ctx) => {
      try {
        return await definition.run(ctx);
      } catch (err) {
        const notFound = userStateOf(err) === "not_found" || (err instanceof UserUnavailableError && err.state === "not_found");
        if (!notFound || ctx.key !== "") throw err;
        const who = await ctx.client.whoami();
        if (who.userid.toUpperCase() !== ctx.account.userId.toUpperCase() || who.username === ctx.account.username) throw err;
        await services.accounts.saveIdentity(ctx.account.id, { userId: ctx.account.userId, username: who.username });
        ctx.log.warn({ was: ctx.account.username, now: who.username }, "the account's user has a new name on the service: stored, and the source runs with it");
        return definition.run({ ...ctx, account: { ...ctx.account, username: who.username } });
      }
    },
  };
}

/** The gap scope under which skipped unreadable answers are recorded. */
export const UNREADABLE_GAP = "unreadable";

/**
 * A run that skipped unreadable answers (kept in unreadable_responses) is not complete, whatever its
 * source says: recorded as the "unreadable" gap, which a complete sweep without any clears.
 */
async function settleUnreadable(repos: SyncRepos, ref: Required<SourceRef>, outcome: SourceOutcome, skipped: number, nowMs: number): Promise<SourceOutcome> {
  const at = new Date(nowMs);
  if (skipped === 0) {
    if (outcome.completeSweep) await repos.syncState.clearGap(ref, UNREADABLE_GAP, at);
    return outcome;
  }
  const reason = `${skipped} answer${skipped === 1 ? "" : "s"} of the service could not be read and ${skipped === 1 ? "was" : "were"} skipped (kept with their raw JSON; dvault status lists them)`;
  await repos.syncState.recordGap(ref, UNREADABLE_GAP, { expected: null, mirrored: null, reason }, at);
  if (outcome.result !== "ok") return outcome;
  return { ...outcome, result: "incomplete", reason: outcome.reason ?? reason };
}
