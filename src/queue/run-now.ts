// "Run it now" from the CLI (`sync --once`, `digest --send`, `download --once`): the jobs go through the same WorkerHost and handlers
// as in the worker, in this process, on private queues (a prefix of their own on Redis, a schema of their own on
// PostgreSQL: src/queue/backend.ts#scratch), so a running worker never takes them and this process never takes the
// worker's. The private queues are removed afterwards: anything unfinished is either
// handed to the worker's queue (`handOver`) or left to the tables the jobs keep (downloads, sync_sources).
import type { Job, Queue } from "bullmq";
import { explainPgRefusal } from "../errors.ts";
import type { QueueBackend } from "./backend.ts";
import type { JobPayloads } from "./contract.ts";
import type { JobContext } from "./job-definition.ts";
import { type DefinitionOf, type EnqueueOptions, Producer } from "./producer.ts";
import { QueueAdmin } from "./queue-admin.ts";
import type { QueueName } from "./queues.ts";
import { WorkerHost, type WorkerHostOptions } from "./worker-host.ts";

/** One job to run, by its name in the payload map `M` (the job contract's unless a test gives its own). */
export type RunNowJob<M extends object = JobPayloads> = {
  [N in keyof M & string]: { name: N; payload: M[N]; options?: Omit<EnqueueOptions, "ranking"> };
}[keyof M & string];

/**
 * What became of one job: its result; its failure (attempts spent, or a permanent error); "retrying" when an
 * attempt failed and the queue would try again later; or "interrupted" when the run was stopped first. The
 * last two are handed to the worker's queue when `handOver` is given.
 */
export type RunNowOutcome<M extends object = JobPayloads> =
  | { job: RunNowJob<M>; state: "completed"; value: unknown }
  | { job: RunNowJob<M>; state: "failed" | "retrying" | "interrupted" | "delayed"; reason: string };

/**
 * What a failed attempt does in a run a person waits for: handed to the worker's queue (`handOver`), where the
 * definition's attempts and backoff go on; or tried again here after its backoff, with the definition's attempts
 * and backoff or the run's own (`download --once`'s fixed attempts; one attempt for a run whose handler asks for
 * the delays itself, as the patience of src/queue/run-patience.ts does).
 */
export type RetryPolicy = { in: "worker" } | { in: "here"; attempts?: number; backoffMs?: number; jitter?: number };

/**
 * What it shares with the worker is WorkerHost's own options (follow-up jobs a handler adds from `makeContext`'s
 * context go to the worker's producer, not the private one); the rest is run-now's.
 */
export type RunNowOptions<Ctx extends JobContext, M extends object = JobPayloads> = Pick<
  WorkerHostOptions<Ctx>,
  "entries" | "log" | "queues" | "concurrency" | "makeContext"
> & {
  definitions: readonly NoInfer<DefinitionOf<M>>[];
  /** The worker's queues; the private ones are made beside them and removed at the end. */
  backend: QueueBackend;
  /** Adds a job that failed an attempt, or was stopped, to the worker's queue, so it finishes there. */
  handOver?: (job: RunNowJob<M>) => Promise<unknown>;
  /**
   * A job waiting in delayed that is finished for this run (state "delayed"), e.g. a download put off to the next
   * quota window; without it, or when it says no, the job is waited for.
   */
  settled?: (job: RunNowJob<M>, index: number) => boolean | Promise<boolean>;
  /** What a failed attempt does in this run (default: handed over, "retrying"). */
  retry?: RetryPolicy;
  signal?: AbortSignal;
  pollMs?: number;
};

/** Runs the jobs to an end in this process and says what became of each, in the order given. */
export async function runNow<Ctx extends JobContext, M extends object = JobPayloads>(
  options: RunNowOptions<Ctx, M>,
  jobs: readonly RunNowJob<M>[],
): Promise<RunNowOutcome<M>[]> {
  const scratch = await options.backend.scratch();
  const producer = new Producer<M>(
    options.definitions.map((d) => withPolicy(d, options.retry)),
    scratch,
  );
  // States are read through the operator's view of the private queues.
  const queues = new QueueAdmin(scratch);
  const host = new WorkerHost<Ctx>({
    entries: options.entries,
    backend: scratch,
    log: options.log,
    queues: options.queues,
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    makeContext: options.makeContext,
    // The caller's summary says what became of each job (the outcomes returned below).
    outcomeLevel: "info",
    refusedWrites: "stop",
  });
  // A write PostgreSQL refuses (read-only, its disk full) is refused to every job of the run, and passes only when a
  // person acts: it ends the run, in one line that says what to do (as a refusal found at the run's start does),
  // rather than the run waiting for good. What was done before stays; the rest is left for the next run.
  let refused: { err: unknown } | undefined;
  const halt = new AbortController();
  host.onRefusal((err) => {
    refused ??= { err };
    halt.abort();
  });
  const signal = options.signal ? AbortSignal.any([options.signal, halt.signal]) : halt.signal;
  const outcomes: Array<RunNowOutcome<M> | undefined> = jobs.map(() => undefined);
  try {
    const added = await producer.enqueueAll(jobs);
    const queueOf = (job: Job) => queues.queue(job.queueName as QueueName);
    host.start();
    await settleAll(host, added, jobs, outcomes, queueOf, { ...options, signal });
  } finally {
    await host.close();
    await queues.close();
    await producer.close();
    await scratch.discard();
  }
  if (refused) throw explainPgRefusal(refused.err) ?? refused.err;
  const result: RunNowOutcome<M>[] = [];
  for (const [i, o] of outcomes.entries()) {
    if (o) result.push(o);
    else {
      await options.handOver?.(jobs[i]!);
      result.push({ job: jobs[i]!, state: "interrupted", reason: "stopped before it finished" });
    }
  }
  return result;
}

/**
 * Settles `outcomes` until every job has one or the run is stopped. What this process's workers say of their jobs
 * settles them without asking the queue: a completion (with its result as the queue keeps it) is final. A failed
 * attempt or a move to delayed raises no final word (a retry, a wait, or the end of the run for this job: `settled`),
 * so it asks for a round of state reads soon; the rounds stay the truth for every job no event settled, and run
 * anyway, less often while they learn nothing.
 */
async function settleAll<Ctx extends JobContext, M extends object>(
  host: WorkerHost<Ctx>,
  added: readonly Job[],
  jobs: readonly RunNowJob<M>[],
  outcomes: Array<RunNowOutcome<M> | undefined>,
  queueOf: (job: Job) => Queue,
  options: RunNowOptions<Ctx, M>,
): Promise<void> {
  // A job id given twice (or a dedupe key that returned the first job) is one job: its end settles every place.
  const placesOf = new Map<string, number[]>();
  for (const [i, job] of added.entries()) {
    const key = `${job.queueName}\0${job.id}`;
    const places = placesOf.get(key);
    if (places) places.push(i);
    else placesOf.set(key, [i]);
  }
  // The state each job's last read found: a round is due at once when all that is left waits in delayed, for which
  // no event comes (a `settled` that turns true with time is read by a round, not told).
  const lastSeen: Array<string | undefined> = jobs.map(() => undefined);
  const unknownSince = new Map<number, number>();
  let wake: Wake | undefined;
  let roundWanted = false;
  host.onJobEnd((end) => {
    const places = placesOf.get(`${end.queue}\0${end.jobId}`) ?? [];
    if (places.length === 0) return;
    if (end.state === "completed") {
      for (const i of places) outcomes[i] ??= { job: jobs[i]!, state: "completed", value: end.value };
      if (outcomes.every(Boolean)) wake?.now();
      else if (outcomes.every((o, i) => o || lastSeen[i] === "delayed")) {
        roundWanted = true;
        wake?.soon();
      }
    } else {
      roundWanted = true;
      wake?.soon();
    }
  });
  const pollMs = options.pollMs ?? 100;
  let wait = pollMs;
  while (outcomes.some((o) => o === undefined) && !options.signal?.aborted) {
    roundWanted = false;
    const learned = await pollRound(added, outcomes, lastSeen, queueOf, jobs, options, unknownSince);
    if (!outcomes.some((o) => o === undefined)) break;
    // The round learned nothing: a long job or a long backlog, so ask the queue less often; a round that learns
    // something, or a job's end, brings it back.
    wait = learned > 0 ? pollMs : Math.min(wait * 2, Math.max(pollMs, MAX_POLL_MS));
    await sleep(wait, options.signal, pollMs, (w) => {
      wake = w;
      if (roundWanted) w.soon();
      if (!outcomes.some((o) => o === undefined)) w.now();
    });
    wake = undefined;
  }
}

/** The definition with the run's own attempts and backoff, where its retry policy gives them. */
function withPolicy<D extends { attempts: number; backoffMs: number; jitter?: number }>(definition: D, policy: RetryPolicy | undefined): D {
  if (policy?.in !== "here") return definition;
  const { attempts, backoffMs, jitter } = policy;
  return {
    ...definition,
    ...(attempts === undefined ? {} : { attempts }),
    ...(backoffMs === undefined ? {} : { backoffMs }),
    ...(jitter === undefined ? {} : { jitter }),
  };
}

/** The longest pause between two rounds while nothing settles: a person waits at most this long after the last job. */
const MAX_POLL_MS = 800;

/** How long a job of this run may read as gone from its queue before it is reported vanished (outcomeOf). */
const UNKNOWN_GRACE_MS = 5000;

/**
 * One round of state reads. A queue's jobs are taken in the order they were added, so once as many of them are seen
 * waiting as the queue runs at once (its concurrency), the later ones are waiting too and are not asked about:
 * a round costs about the running and delayed jobs, not the whole backlog (download --once adds up to 500).
 */
async function pollRound<Ctx extends JobContext, M extends object = JobPayloads>(
  added: readonly Job[],
  outcomes: Array<RunNowOutcome<M> | undefined>,
  lastSeen: Array<string | undefined>,
  queueOf: (job: Job) => Queue,
  jobs: readonly RunNowJob<M>[],
  options: RunNowOptions<Ctx, M>,
  unknownSince: Map<number, number>,
): Promise<number> {
  let learned = 0;
  const waitingSeen = new Map<string, number>();
  for (const [i, job] of added.entries()) {
    if (outcomes[i]) continue;
    const budget = options.concurrency?.[job.queueName as QueueName] ?? 1;
    if ((waitingSeen.get(job.queueName) ?? 0) >= budget) continue;
    const { outcome, state } = await outcomeOf(queueOf(job), job, jobs[i]!, i, unknownSince, options);
    lastSeen[i] = state;
    // A completion this process's worker reported while the state was read stands.
    if (outcomes[i]) continue;
    outcomes[i] = outcome;
    if (outcome) learned++;
    if (state === "waiting" || state === "prioritized" || state === "waiting-children")
      waitingSeen.set(job.queueName, (waitingSeen.get(job.queueName) ?? 0) + 1);
  }
  return learned;
}

async function outcomeOf<Ctx extends JobContext, M extends object = JobPayloads>(
  queue: Queue,
  added: Job,
  job: RunNowJob<M>,
  index: number,
  unknownSince: Map<number, number>,
  options: RunNowOptions<Ctx, M>,
): Promise<{ outcome: RunNowOutcome<M> | undefined; state: string }> {
  // The state first, then the job: a job read before it finished would carry no result yet.
  const state = await queue.getJobState(added.id ?? "");
  // Gone from the queue is final only after UNKNOWN_GRACE_MS: a job removed on completion reads "unknown" from its
  // completion's commit until its worker's word, which settles it as completed (the PostgreSQL engine runs a query in
  // between, as long as the database takes).
  if (state !== "unknown") unknownSince.delete(index);
  else {
    const since = unknownSince.get(index) ?? Date.now();
    unknownSince.set(index, since);
    if (Date.now() - since < UNKNOWN_GRACE_MS) return { outcome: undefined, state };
  }
  return { outcome: await outcomeIn(state, queue, added, job, index, options), state };
}

async function outcomeIn<Ctx extends JobContext, M extends object = JobPayloads>(
  state: string,
  queue: Queue,
  added: Job,
  job: RunNowJob<M>,
  index: number,
  options: RunNowOptions<Ctx, M>,
): Promise<RunNowOutcome<M> | undefined> {
  if (state !== "completed" && state !== "failed" && state !== "delayed" && state !== "unknown") return undefined;
  const current = await queue.getJob(added.id ?? "");
  if (!current) return { job, state: "failed", reason: "the job vanished from its queue" };
  if (state === "completed") return { job, state: "completed", value: current.returnvalue };
  if (state === "failed") return { job, state: "failed", reason: current.failedReason };
  if (state === "delayed" && (await options.settled?.(job, index))) return { job, state: "delayed", reason: "delayed past this run" };
  if (options.retry?.in === "here") return undefined;
  // An attempt failed and the job waits for its backoff: a person is waiting now, the worker can wait longer.
  if (state === "delayed" && current.attemptsMade > 0 && current.failedReason) {
    await options.handOver?.(job);
    return { job, state: "retrying", reason: current.failedReason };
  }
  return undefined;
}

/** Ends a pause early: `soon`, once `minMs` from its start have passed; `now`, at once. */
type Wake = { soon(): void; now(): void };

/** Waits `ms`, or less when woken through the Wake given to `register`. */
function sleep(ms: number, signal: AbortSignal | undefined, minMs: number, register: (wake: Wake) => void): Promise<void> {
  return new Promise((resolve) => {
    const started = Date.now();
    let timer = setTimeout(done, ms);
    let over = false;
    function done() {
      over = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
    register({
      soon() {
        if (over) return;
        clearTimeout(timer);
        timer = setTimeout(done, Math.max(0, started + Math.min(ms, minMs) - Date.now()));
      },
      now: done,
    });
  });
}
