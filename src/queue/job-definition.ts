// A job is a small definition (name, queue, payload schema, attempts, dedupe key) plus a separate
// handler; the composition root pairs them and checks the pairing at boot.
import type { z } from "zod";
import type { Logger } from "../log.ts";
import type { QueueName } from "./queues.ts";

export type JobDefinition<Name extends string = string, Payload = unknown, Ranking = never> = {
  name: Name;
  queue: QueueName;
  /** Payloads carry ids only: job data sits in Redis in clear text. */
  payload: z.ZodType<Payload>;
  attempts: number;
  /** Base of the exponential backoff between attempts, with jitter. */
  backoffMs: number;
  /** Random part of each backoff, as a fraction of it (default 0.5), so that jobs failing together retry apart. */
  jitter?: number;
  /** Deterministic id: a second enqueue of the same work is a no-op while the first is pending. */
  jobId?: (payload: Payload) => string;
  /**
   * Deduplication key, for work a person asks for again and again ("sync now"): a second enqueue while one
   * waits is dropped, one made while it runs queues exactly one more run after it, and once it has finished
   * the next request runs (a fixed jobId would keep the finished job and ignore it for the retention time).
   */
  dedupeKey?: (payload: Payload) => string | undefined;
  /** A finished job is removed at once (where a table, not the queue, remembers the outcome), instead of kept for a while. */
  removeOnComplete?: boolean;
  /** For a job run on a schedule: how often (Producer.schedule installs it; the worker can shorten it in tests). */
  every?: number;
  /**
   * BullMQ's priority (1 first), from the payload and what the caller knows of the work (`ranking`, passed to
   * Producer.enqueue; src/queue/contract.ts#JobRankings): the one place a job's order is decided.
   */
  priority?: (payload: Payload, ranking: Ranking | undefined) => number | undefined;
};

/** What a handler tells the queue; errors are the other outcomes (see worker-host.ts). */
export type JobResult = { status: "done" | "skipped"; reason?: string; [detail: string]: unknown };

export type JobContext = {
  log: Logger;
  jobId: string;
  attempt: number;
  /** The attempts this job was queued with (its definition's, or what the producer was told): a handler that records
   * its last attempt must know how many the queue will really make. Absent in contexts built outside a queue. */
  attempts?: number;
  /** Aborted at shutdown: handlers stop after committing their current page and throw InterruptedError. */
  signal: AbortSignal;
};

export type JobHandler<Payload = unknown, Ctx extends JobContext = JobContext> = (payload: Payload, ctx: Ctx) => Promise<JobResult>;

export type JobEntry<Ctx extends JobContext = JobContext> = {
  // The catalogue is heterogeneous; each entry's handler is checked against its own definition where it is built.
  // biome-ignore lint/suspicious/noExplicitAny: variance: payload types differ per entry
  definition: JobDefinition<string, any>;
  // biome-ignore lint/suspicious/noExplicitAny: as above, payload types differ per entry
  handler: JobHandler<any, Ctx>;
};

/** Pairs a definition with its handler so their payload types must agree. */
export function defineJob<Name extends string, Payload, Ctx extends JobContext>(
  definition: JobDefinition<Name, Payload>,
  handler: JobHandler<Payload, Ctx>,
): JobEntry<Ctx> & { definition: JobDefinition<Name, Payload> } {
  return { definition, handler };
}

export class CatalogueError extends Error {}

/** Boot fails when a job name is defined twice or a definition has no handler. */
export function checkCatalogue<Ctx extends JobContext>(entries: readonly JobEntry<Ctx>[]): Map<string, JobEntry<Ctx>> {
  const byName = new Map<string, JobEntry<Ctx>>();
  for (const entry of entries) {
    const name = entry.definition.name;
    if (byName.has(name)) throw new CatalogueError(`job "${name}" is defined twice in the catalogue`);
    if (typeof entry.handler !== "function") throw new CatalogueError(`job "${name}" has no handler`);
    byName.set(name, entry);
  }
  return byName;
}

/** Thrown by a handler that stopped early because the worker is shutting down; the job is re-queued. */
export class InterruptedError extends Error {
  constructor(what = "shutdown") {
    super(`interrupted by ${what}; will resume`);
    this.name = "InterruptedError";
  }
}

/** Errors that mean "nothing to do for now" rather than failure (an account needing re-authorization). */
export type SkippableError = Error & { jobOutcome: "skip" };

export function isSkippable(err: unknown): err is SkippableError {
  return err instanceof Error && (err as Partial<SkippableError>).jobOutcome === "skip";
}

/**
 * What a failure asks of the worker, carried as fields on the error because the layers that throw it may
 * not import the queue (docs/ARCHITECTURE.md#what-each-folder-may-import): "skip" (above), "stop" when no
 * retry can help (UnrecoverableError), "delay" to wait `retryAfterMs` without spending an attempt (keyed by
 * `delayKey` and named by `delayReason` in the log), "retry" for BullMQ's backoff. `remoteService` marks a
 * failure of the service dvault mirrors, which is never a PostgreSQL or Redis outage (outage.ts).
 */
export type JobOutcomeFields = {
  jobOutcome?: "skip" | "stop" | "delay" | "retry";
  retryAfterMs?: number;
  delayKey?: string;
  delayReason?: DelayReason;
  remoteService?: boolean;
};

/**
 * Why a job waits, each its own word (docs/status.md#paced-throttled-deferred), never one for another:
 * - throttled: the service or its CDN refused a request as too many (429, 503, a threshold error, a CDN block);
 * - paced: dvault's own pacer holds the request back (its pace, a hold, earlier requests ahead): nothing refused;
 * - deferred: the weekly quota of original downloads is spent, the file waits for the next quota window;
 * - busy: another process holds the file; paused: the downloads are paused (the disk guard);
 * - retry: a failure that passes, tried again later in a `--once` run (src/queue/run-patience.ts).
 */
export type DelayReason = "throttled" | "paced" | "deferred" | "busy" | "paused" | "retry";

/** The log line of each DelayReason: the word first, so a reader (or grep) never takes one for another. */
export const DELAY_WORDS: Readonly<Record<DelayReason, string>> = {
  throttled: "throttled: the service refused a request as too many; job delayed",
  paced: "paced: job delayed until the pacer lets its request go",
  deferred: "deferred (quota): job waits for the next quota window",
  busy: "busy elsewhere: another process holds the file; job delayed",
  paused: "paused: job delayed until the downloads resume",
  retry: "retry: a failure that passes, tried again in this run; job delayed",
};

/** The error's wish to be delayed, when it has one and says for how long (and why: "paced" when it does not say). */
export function delayOf(err: unknown): { waitMs: number; key: string | undefined; reason: DelayReason } | undefined {
  if (!(err instanceof Error)) return undefined;
  const e = err as Error & JobOutcomeFields;
  if (e.jobOutcome !== "delay" || typeof e.retryAfterMs !== "number") return undefined;
  return { waitMs: e.retryAfterMs, key: e.delayKey, reason: e.delayReason ?? "paced" };
}

/**
 * A job that waits for a reason of its own, not a failure (no attempt spent): a download deferred to the next
 * quota window, a file another process holds, the downloads paused. Never a ThrottleDelayError: nothing refused it.
 */
export class JobWaitError extends Error implements JobOutcomeFields {
  readonly jobOutcome = "delay" as const;

  constructor(
    message: string,
    readonly retryAfterMs: number,
    readonly delayKey: string,
    readonly delayReason: Exclude<DelayReason, "throttled" | "paced" | "retry">,
  ) {
    super(message);
    this.name = "JobWaitError";
  }
}

/** True when the error says no retry can help. */
export function isStop(err: unknown): boolean {
  return err instanceof Error && (err as Error & JobOutcomeFields).jobOutcome === "stop";
}

/** True for a failure of the mirrored service (its API or CDN) rather than of dvault's own stores. */
export function isRemoteServiceError(err: unknown): boolean {
  return err instanceof Error && (err as Error & JobOutcomeFields).remoteService === true;
}
